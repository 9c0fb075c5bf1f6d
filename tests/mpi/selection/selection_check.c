/* An unmodified MPI program for the selection table's tests: the calls named on its command
 * line, in order, on MPI_COMM_WORLD (or a duplicate: dup), each with every received byte checked. Knows nothing of
 * ohio.
 *
 * usage: selection_check CALL...
 *   alltoall:N        MPI_Alltoall of N bytes per rank pair (MPI_BYTE)
 *   ialltoall:N       MPI_Ialltoall of N bytes per rank pair, completed by MPI_Wait
 *   alltoallv:BIG:N   MPI_Alltoallv of N bytes per rank pair, except rank 0's block to itself,
 *                     BIG bytes: only rank 0 moves a block of BIG bytes, so the ranks' largest
 *                     blocks differ when BIG and N do
 *   dup               the calls after it run on a new duplicate of MPI_COMM_WORLD (freed at the
 *                     next dup and at the end); before the first, on MPI_COMM_WORLD itself
 *   await:PATH        rank 0 prints "awaiting PATH", then every rank waits until PATH exists
 *                     (at most 60 s: then the job aborts)
 * Prints "rank R: ALL OK" per rank on success; exits non-zero at the first wrong byte. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Where the calls run: MPI_COMM_WORLD, or the latest "dup". */
static MPI_Comm comm = MPI_COMM_WORLD;

static unsigned char pattern(int src, int dst, long i, int call) {
  return (unsigned char)(src * 131 + dst * 31 + i * 7 + call * 13 + (i >> 8));
}

/* Bytes rank src sends to rank dst in an alltoallv of `big` and `n`. */
static long vector_bytes(int src, int dst, long big, long n) { return src == 0 && dst == 0 ? big : n; }

static void wrong(int rank, int call, const char* what, int from, long at) {
  printf("rank %d: WRONG in call %d (%s): byte %ld from rank %d\n", rank, call, what, at, from);
  fflush(stdout);
  MPI_Abort(MPI_COMM_WORLD, 2);
}

static void uniform(const char* what, long n, int nonblocking, int call) {
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  unsigned char* send = malloc((size_t)n * size + 1);
  unsigned char* recv = malloc((size_t)n * size + 1);
  for (int d = 0; d < size; ++d)
    for (long i = 0; i < n; ++i) send[d * n + i] = pattern(rank, d, i, call);
  memset(recv, 0xEE, (size_t)n * size);
  if (nonblocking) {
    MPI_Request r;
    MPI_Ialltoall(send, (int)n, MPI_BYTE, recv, (int)n, MPI_BYTE, comm, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  } else {
    MPI_Alltoall(send, (int)n, MPI_BYTE, recv, (int)n, MPI_BYTE, comm);
  }
  for (int s = 0; s < size; ++s)
    for (long i = 0; i < n; ++i)
      if (recv[s * n + i] != pattern(s, rank, i, call)) wrong(rank, call, what, s, i);
  free(send);
  free(recv);
}

static void vector(long big, long n, int call) {
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int* scounts = malloc(sizeof(int) * size);
  int* sdispls = malloc(sizeof(int) * size);
  int* rcounts = malloc(sizeof(int) * size);
  int* rdispls = malloc(sizeof(int) * size);
  long sent = 0, received = 0;
  for (int j = 0; j < size; ++j) {
    scounts[j] = (int)vector_bytes(rank, j, big, n);
    sdispls[j] = (int)sent;
    sent += scounts[j];
    rcounts[j] = (int)vector_bytes(j, rank, big, n);
    rdispls[j] = (int)received;
    received += rcounts[j];
  }
  unsigned char* send = malloc((size_t)sent + 1);
  unsigned char* recv = malloc((size_t)received + 1);
  for (int d = 0; d < size; ++d)
    for (long i = 0; i < scounts[d]; ++i) send[sdispls[d] + i] = pattern(rank, d, i, call);
  memset(recv, 0xEE, (size_t)received);
  MPI_Alltoallv(send, scounts, sdispls, MPI_BYTE, recv, rcounts, rdispls, MPI_BYTE, comm);
  for (int s = 0; s < size; ++s)
    for (long i = 0; i < rcounts[s]; ++i)
      if (recv[rdispls[s] + i] != pattern(s, rank, i, call)) wrong(rank, call, "alltoallv", s, i);
  free(send);
  free(recv);
  free(scounts);
  free(sdispls);
  free(rcounts);
  free(rdispls);
}

static void await_file(int rank, const char* path) {
  if (rank == 0) {
    printf("awaiting %s\n", path);
    fflush(stdout);
  }
  for (int waited_ms = 0; access(path, F_OK) != 0; waited_ms += 10) {
    if (waited_ms >= 60000) {
      fprintf(stderr, "selection_check: rank %d: %s did not appear within 60 s\n", rank, path);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    usleep(10000);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int a = 1; a < argc; ++a) {
    long x = 0, y = 0;
    if (sscanf(argv[a], "alltoall:%ld", &x) == 1) {
      uniform("alltoall", x, 0, a);
    } else if (sscanf(argv[a], "ialltoall:%ld", &x) == 1) {
      uniform("ialltoall", x, 1, a);
    } else if (sscanf(argv[a], "alltoallv:%ld:%ld", &x, &y) == 2) {
      vector(x, y, a);
    } else if (strcmp(argv[a], "dup") == 0) {
      if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm);
      MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    } else if (strncmp(argv[a], "await:", 6) == 0) {
      await_file(rank, argv[a] + 6);
    } else {
      if (rank == 0) fprintf(stderr, "selection_check: unknown call '%s'\n", argv[a]);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm);
  printf("rank %d: ALL OK\n", rank);
  MPI_Finalize();
  return 0;
}
