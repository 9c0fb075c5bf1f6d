/* An unmodified MPI program: MPI_Alltoall and MPI_Ialltoall over an intercommunicator (the even
 * ranks of MPI_COMM_WORLD as one group, the odd ones as the other), where each rank exchanges
 * blocks with every rank of the other group. Every received byte is checked. Knows nothing of
 * ohio.
 *
 * usage: intercomm_check bytes iterations      (needs an even number of ranks, at least 2)
 * Prints "rank R: ALL OK" per rank on success; exits non-zero on the first wrong byte. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char pattern(int src, int dst, long i, int it) {
  return (unsigned char)(src * 131 + dst * 31 + i * 7 + it * 13);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int world_rank = 0, world_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  if (argc < 3 || world_size < 2 || world_size % 2 != 0) {
    if (world_rank == 0) printf("usage: intercomm_check bytes iterations (an even number of ranks)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const long bytes = atol(argv[1]);
  const int iterations = atoi(argv[2]);
  MPI_Comm half, inter;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
  /* The other group's internode: world rank 1 for the evens, 0 for the odds. */
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, world_rank % 2 == 0 ? 1 : 0, 7, &inter);
  int rank = 0, remote = 0;
  MPI_Comm_rank(inter, &rank);
  MPI_Comm_remote_size(inter, &remote);
  /* Senders are named by their world rank so the two directions differ. */
  unsigned char* send = malloc((size_t)bytes * remote);
  unsigned char* recv = malloc((size_t)bytes * remote);
  for (int it = 0; it < iterations; ++it) {
    for (int nonblocking = 0; nonblocking < 2; ++nonblocking) {
      const int me = world_rank;
      for (int d = 0; d < remote; ++d) {
        const int to = 2 * d + 1 - world_rank % 2;
        for (long i = 0; i < bytes; ++i) send[d * bytes + i] = pattern(me, to, i, it);
      }
      memset(recv, 0xEE, (size_t)bytes * remote);
      int rc;
      if (nonblocking) {
        MPI_Request request;
        rc = MPI_Ialltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, inter, &request);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&request, MPI_STATUS_IGNORE);
      } else {
        rc = MPI_Alltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, inter);
      }
      if (rc != MPI_SUCCESS) {
        printf("rank %d: intercommunicator call returned %d\n", world_rank, rc);
        return 1;
      }
      for (int s = 0; s < remote; ++s) {
        const int from = 2 * s + 1 - world_rank % 2;
        for (long i = 0; i < bytes; ++i) {
          if (recv[s * bytes + i] != pattern(from, me, i, it)) {
            printf("rank %d: WRONG byte %ld from %d (iteration %d)\n", world_rank, i, from, it);
            return 1;
          }
        }
      }
    }
  }
  free(send);
  free(recv);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);
  printf("rank %d: ALL OK\n", world_rank);
  MPI_Finalize();
  return 0;
}
