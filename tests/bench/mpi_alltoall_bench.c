/* osu-style MPI_Alltoall latency: a plain MPI program, timed the same way whether MPI_Alltoall
 * is the MPI library's own or ohio's (libohio_mpi preloaded).
 *
 * usage: mpi_alltoall_bench [min_bytes] [max_bytes] [iterations]   (1, 1 MiB, auto)
 * Prints one line per size: bytes, average latency in microseconds (the slowest rank's average
 * over the timed calls), after warm-up calls; rank 0 prints. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int iterations_for(long bytes, int requested) {
  if (requested > 0) return requested;
  if (bytes <= 4096) return 1000;
  if (bytes <= 65536) return 200;
  return 40;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  long min_bytes = argc > 1 ? atol(argv[1]) : 1;
  long max_bytes = argc > 2 ? atol(argv[2]) : 1 << 20;
  int requested = argc > 3 ? atoi(argv[3]) : 0;
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char* send = malloc((size_t)max_bytes * size);
  char* recv = malloc((size_t)max_bytes * size);
  memset(send, rank, (size_t)max_bytes * size);
  if (rank == 0) printf("# bytes avg_us (%d ranks)\n", size);
  for (long bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    int n = iterations_for(bytes, requested);
    for (int w = 0; w < n / 10 + 2; ++w) MPI_Alltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int i = 0; i < n; ++i) MPI_Alltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
    double mine = (MPI_Wtime() - start) * 1e6 / n, slowest = 0;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%ld %.2f\n", bytes, slowest);
    fflush(stdout);
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
