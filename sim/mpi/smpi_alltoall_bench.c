/* MPI_Alltoall (or MPI_Alltoallv) latency for SMPI (SimGrid's MPI): the MPI side of ohio-sim's comparison
 * (sim/compare.sh), built with smpicc and run under smpirun on the platform ohio-sim uses, with
 * the alltoall algorithm chosen by --cfg=smpi/alltoall:NAME. Plain MPI, so it also builds with
 * mpicc for a check on real MPI.
 *
 * usage: smpi_alltoall_bench SIZES|counts=FILE [ITERATIONS (5)] [WARMUP (1)]
 *   SIZES: bytes per rank pair, comma-separated (e.g. 1,4096,65536)
 *   counts=FILE: MPI_Alltoallv with ohio-sim's count matrix file (row i: the bytes rank i sends
 *     each rank; `#` starts a comment), one line "alltoallv median_us min_us max_us iterations" 
 * Per size, after WARMUP calls, ITERATIONS timed calls, each between barriers and timed with
 * MPI_Wtime; a call's time is the slowest rank's. Rank 0 prints one line per size:
 *   bytes median_us min_us max_us iterations
 * Under SMPI the buffers are SMPI_SHARED_MALLOC'd (every rank shares one copy: the simulation
 * needs their size, not their bytes), which is what lets thousands of ranks fit. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SMPI_SHARED_MALLOC
#define BENCH_MALLOC(bytes) SMPI_SHARED_MALLOC(bytes)
#define BENCH_FREE(p) SMPI_SHARED_FREE(p)
#else
#define BENCH_MALLOC(bytes) malloc(bytes)
#define BENCH_FREE(p) free(p)
#endif

static int compare_doubles(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, compare_doubles);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Rank 0's line: what was timed, then median, min and max in microseconds, and the calls. */
static void print_times(const char* label, double* times, int iterations) {
  double lo = times[0], hi = times[0];
  for (int i = 1; i < iterations; ++i) {
    if (times[i] < lo) lo = times[i];
    if (times[i] > hi) hi = times[i];
  }
  printf("%s %.3f %.3f %.3f %d\n", label, median(times, iterations) * 1e6, lo * 1e6, hi * 1e6, iterations);
  fflush(stdout);
}

/* Times `iterations` calls of `bytes` per pair; rank 0 prints the line. 0, or 1 on a bad size. */
static int run_size(long bytes, int iterations, int warmup, int rank, int size) {
  char* send = BENCH_MALLOC((size_t)bytes * size);
  char* recv = BENCH_MALLOC((size_t)bytes * size);
  double* times = malloc(sizeof(double) * (size_t)iterations);
  if (send == NULL || recv == NULL || times == NULL) {
    if (rank == 0) fprintf(stderr, "smpi_alltoall_bench: cannot allocate %ld bytes x %d ranks\n", bytes, size);
    return 1;
  }
  for (int i = 0; i < warmup + iterations; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    MPI_Alltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
    double mine = MPI_Wtime() - t0, slowest = 0;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (i >= warmup) times[i - warmup] = slowest;
  }
  if (rank == 0) {
    char label[32];
    snprintf(label, sizeof label, "%ld", bytes);
    print_times(label, times, iterations);
  }
  free(times);
  BENCH_FREE(send);
  BENCH_FREE(recv);
  return 0;
}

/* The count matrix file's `size` x `size` counts into `counts` (row-major): 0, or 1 if the file
 * cannot be read or holds other than that many counts. Every rank reads it with its own FILE. */
static int read_counts(const char* path, int size, long* counts) {
  FILE* f = fopen(path, "r");
  if (f == NULL) return 1;
  long n = 0, want = (long)size * size;
  int c = 0, failed = 0;
  while (!failed && (c = fgetc(f)) != EOF) {
    if (c == '#') {
      while ((c = fgetc(f)) != EOF && c != '\n') {
      }
    } else if (c >= '0' && c <= '9') {
      long v = c - '0';
      while ((c = fgetc(f)) != EOF && c >= '0' && c <= '9') v = v * 10 + (c - '0');
      if (n < want) counts[n] = v;
      ++n;
      if (c == '#') ungetc(c, f);
    } else if (c != ' ' && c != ',' && c != '\t' && c != '\n' && c != '\r') {
      failed = 1;
    }
  }
  fclose(f);
  return failed || n != want;
}

/* Times `iterations` MPI_Alltoallv calls with the counts of `path`; rank 0 prints the line. */
static int run_counts(const char* path, int iterations, int warmup, int rank, int size) {
  long* counts = malloc(sizeof(long) * (size_t)size * size);
  int *send_counts = malloc(sizeof(int) * size), *send_displs = malloc(sizeof(int) * size);
  int *recv_counts = malloc(sizeof(int) * size), *recv_displs = malloc(sizeof(int) * size);
  double* times = malloc(sizeof(double) * (size_t)iterations);
  if (read_counts(path, size, counts) != 0) {
    if (rank == 0) fprintf(stderr, "smpi_alltoall_bench: %s: not %d rows of %d counts\n", path, size, size);
    return 1;
  }
  long sent = 0, received = 0;
  for (int j = 0; j < size; ++j) {
    send_counts[j] = (int)counts[(long)rank * size + j];
    recv_counts[j] = (int)counts[(long)j * size + rank];
    send_displs[j] = (int)sent;
    recv_displs[j] = (int)received;
    sent += send_counts[j];
    received += recv_counts[j];
  }
  char* send = BENCH_MALLOC((size_t)sent + 1);
  char* recv = BENCH_MALLOC((size_t)received + 1);
  for (int i = 0; i < warmup + iterations; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    MPI_Alltoallv(send, send_counts, send_displs, MPI_BYTE, recv, recv_counts, recv_displs, MPI_BYTE, MPI_COMM_WORLD);
    double mine = MPI_Wtime() - t0, slowest = 0;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (i >= warmup) times[i - warmup] = slowest;
  }
  if (rank == 0) print_times("alltoallv", times, iterations);
  BENCH_FREE(send);
  BENCH_FREE(recv);
  free(times);
  free(counts);
  free(send_counts);
  free(send_displs);
  free(recv_counts);
  free(recv_displs);
  return 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int iterations = argc > 2 ? atoi(argv[2]) : 5;
  const int warmup = argc > 3 ? atoi(argv[3]) : 1;
  if (argc < 2 || iterations < 1 || warmup < 0) {
    if (rank == 0) fprintf(stderr, "usage: smpi_alltoall_bench SIZES|counts=FILE [ITERATIONS (5)] [WARMUP (1)]\n");
    MPI_Finalize();
    return 2;
  }
  if (strncmp(argv[1], "counts=", 7) == 0) {
    const int failed = run_counts(argv[1] + 7, iterations, warmup, rank, size);
    MPI_Finalize();
    return failed ? 2 : 0;
  }
  int failed = 0;
  char* sizes = strdup(argv[1]);
  char* rest = NULL;
  /* strtok_r: under SMPI the ranks are threads of one process, and strtok's state is libc's. */
  for (char* item = strtok_r(sizes, ",", &rest); item != NULL && !failed; item = strtok_r(NULL, ",", &rest)) {
    char* end = NULL;
    const long bytes = strtol(item, &end, 10);
    if (*end != '\0' || bytes < 0 || bytes > (1L << 30)) {
      if (rank == 0) fprintf(stderr, "smpi_alltoall_bench: '%s' is not a size in bytes (0..2^30)\n", item);
      failed = 1;
      break;
    }
    failed = run_size(bytes, iterations, warmup, rank, size);
  }
  free(sizes);
  MPI_Finalize();
  return failed ? 2 : 0;
}
