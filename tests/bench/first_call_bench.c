/* What the first MPI_Alltoall of a new communicator costs: per repeat, MPI_Comm_dup of
 * MPI_COMM_WORLD, then its first and its second MPI_Alltoall of BYTES per rank pair, each timed
 * alone (the slowest rank's time), then MPI_Comm_free. The same program whether the calls are the
 * MPI library's or ohio's (the shim preloaded, or coll/ohio loaded): a communicator's first call is
 * where ohio sets up its group, and the dup is where Open MPI asks coll/ohio for a module.
 *
 * usage: first_call_bench BYTES REPEATS
 * Rank 0 prints "bytes dup_us first_us second_us", each the median over the repeats. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/bench/median.h"

/* The slowest rank's time of what ran since `start`. */
static double slowest_since(double start) {
  double mine = (MPI_Wtime() - start) * 1e6, slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: first_call_bench BYTES REPEATS\n");
    return 2;
  }
  const long bytes = atol(argv[1]);
  const int repeats = atoi(argv[2]);
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char* send = malloc((size_t)bytes * size);
  char* recv = malloc((size_t)bytes * size);
  memset(send, rank, (size_t)bytes * size);
  double* dup = malloc(sizeof(double) * repeats);
  double* first = malloc(sizeof(double) * repeats);
  double* second = malloc(sizeof(double) * repeats);
  for (int r = 0; r < repeats; ++r) {
    MPI_Comm c;
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    dup[r] = slowest_since(start);
    start = MPI_Wtime();
    MPI_Alltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, c);
    first[r] = slowest_since(start);
    start = MPI_Wtime();
    MPI_Alltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, c);
    second[r] = slowest_since(start);
    MPI_Comm_free(&c);
  }
  if (rank == 0) {
    printf("%ld %.2f %.2f %.2f\n", bytes, ohio_bench_median(dup, repeats), ohio_bench_median(first, repeats),
           ohio_bench_median(second, repeats));
  }
  free(send);
  free(recv);
  free(dup);
  free(first);
  free(second);
  MPI_Finalize();
  return 0;
}
