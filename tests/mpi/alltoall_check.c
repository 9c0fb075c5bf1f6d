/* An unmodified MPI program: MPI_Alltoall on MPI_COMM_WORLD, a dup and a split, in place and
 * not, 1 byte to 1 MiB per rank, as bytes and as ints, interleaved with other collectives, and
 * once with a derived datatype. Every received byte is checked. Knows nothing of ohio.
 *
 * usage: alltoall_check [max_bytes] [iterations] [passes]   (defaults 1 MiB, 20, 1)
 * With CHECK_PAUSE_FILE=F and several passes, rank 0 creates F.ready after each pass and waits
 * (at most 60 s) for F.go before the next, so a test can change the world in between.
 * Prints "rank R: ALL OK" per rank on success; exits non-zero on the first wrong byte. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned char pattern(int src, int dst, long i, int it) {
  return (unsigned char)(src * 131 + dst * 31 + i * 7 + it * 13 + (i >> 8));
}

static int check(MPI_Comm comm, long bytes, int it, int in_place, const char* what) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  unsigned char* send = malloc((size_t)bytes * size + 1);
  unsigned char* recv = malloc((size_t)bytes * size + 1);
  for (int d = 0; d < size; ++d)
    for (long i = 0; i < bytes; ++i) send[d * bytes + i] = pattern(rank, d, i, it);
  memset(recv, 0xEE, (size_t)bytes * size);
  int rc;
  if (in_place) {
    memcpy(recv, send, (size_t)bytes * size);
    rc = MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, (int)bytes, MPI_BYTE, comm);
  } else if (bytes % 4 == 0) {
    rc = MPI_Alltoall(send, (int)(bytes / 4), MPI_INT, recv, (int)(bytes / 4), MPI_INT, comm);
  } else {
    rc = MPI_Alltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, comm);
  }
  if (rc != MPI_SUCCESS) {
    printf("rank %d: %s: MPI_Alltoall returned %d\n", rank, what, rc);
    return 1;
  }
  for (int s = 0; s < size; ++s)
    for (long i = 0; i < bytes; ++i)
      if (recv[s * bytes + i] != pattern(s, rank, i, it)) {
        printf("rank %d: %s: WRONG byte %ld from %d (bytes %ld, iteration %d)\n", rank, what, i, s, bytes, it);
        return 1;
      }
  free(send);
  free(recv);
  return 0;
}

/* A derived datatype: a contiguous type of 4 bytes, which libohio does not serve. */
static int check_derived(MPI_Comm comm) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Datatype quad;
  MPI_Type_contiguous(4, MPI_BYTE, &quad);
  MPI_Type_commit(&quad);
  unsigned char* send = malloc(16 * size);
  unsigned char* recv = malloc(16 * size);
  for (int d = 0; d < size; ++d)
    for (int i = 0; i < 16; ++i) send[d * 16 + i] = pattern(rank, d, i, 99);
  int rc = MPI_Alltoall(send, 4, quad, recv, 4, quad, comm);
  MPI_Type_free(&quad);
  if (rc != MPI_SUCCESS) return 1;
  for (int s = 0; s < size; ++s)
    for (int i = 0; i < 16; ++i)
      if (recv[s * 16 + i] != pattern(s, rank, i, 99)) {
        printf("rank %d: derived: WRONG byte %d from %d\n", rank, i, s);
        return 1;
      }
  free(send);
  free(recv);
  return 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  long max_bytes = argc > 1 ? atol(argv[1]) : 1 << 20;
  int iterations = argc > 2 ? atoi(argv[2]) : 20;
  int passes = argc > 3 ? atoi(argv[3]) : 1;
  const char* pause_file = getenv("CHECK_PAUSE_FILE");
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm dup, split;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &split); /* reversed order inside */
  int bad = 0;
  for (int pass = 0; pass < passes && !bad; ++pass) {
  if (pass > 0 && pause_file != NULL) {
    if (rank == 0) {
      char path[4096];
      snprintf(path, sizeof path, "%s.ready", pause_file);
      fclose(fopen(path, "w"));
      snprintf(path, sizeof path, "%s.go", pause_file);
      for (int waited = 0; access(path, F_OK) != 0 && waited < 6000; ++waited) usleep(10000);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  for (long bytes = 1; bytes <= max_bytes && !bad; bytes *= 4) {
    int n = bytes >= 65536 ? (iterations + 3) / 4 : iterations;
    for (int it = 0; it < n && !bad; ++it) {
      bad |= check(MPI_COMM_WORLD, bytes, it, it % 3 == 2, "world");
      int sum = 0, one = 1;
      MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      if (sum != size) bad = 1;
      bad |= check(dup, bytes + 3, it, 0, "dup");
      MPI_Barrier(dup);
      bad |= check(split, bytes, it, it % 2, "split");
      MPI_Bcast(&sum, 1, MPI_INT, 0, split);
    }
  }
  }
  if (!bad) bad |= check_derived(MPI_COMM_WORLD);
  if (!bad) bad |= check(MPI_COMM_WORLD, 64, 7, 0, "after derived");
  MPI_Comm_free(&split);
  MPI_Comm_free(&dup);
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!any) printf("rank %d: ALL OK\n", rank);
  fflush(stdout);
  MPI_Finalize();
  return any;
}
