/* osu_ialltoall-style overlap of MPI_Ialltoall (or MPI_Ialltoallv): a plain MPI program, timed the same way whether
 * MPI_Ialltoall is the MPI library's own or ohio's (libohio_mpi preloaded).
 *
 * Per size, as osu-micro-benchmarks' osu_ialltoall does: t_pure = Ialltoall + Wait; then
 * Ialltoall, a computation of t_pure (no MPI call), Wait: t_total, of which t_compute is the
 * computation; overlap = max(0, 100 * (1 - (t_total - t_compute) / t_pure)). The computation
 * is a busy loop on the rank's core (osu's), or with "sleep" a nanosleep: the rank leaves its
 * core, as one waiting on a GPU kernel or on I/O does, and the MPI library is not called.
 * Then, beyond osu: Ialltoall, a computation of `long_compute_us`, Wait: wait_us is the time
 * MPI_Wait still takes (the part of the call the computation did not hide), exposed_us that and
 * the time MPI_Ialltoall itself took: what the call costs a program that computes that long
 * between them, the same computation whoever moves the data.
 *
 * usage: mpi_ialltoall_bench [min_bytes] [max_bytes] [iterations] [daemon_pid] [long_compute_us] [vector] [sleep]
 *        (1, 1 MiB, auto, none, 2000); "vector": MPI_Ialltoallv of the same blocks (every count
 *        `bytes`, displacements j * bytes) instead, so the two compare size by size; "sleep":
 *        the computations sleep instead of spinning (either word, in any order, after the 5th)
 * Rank 0 prints one line per size:
 *   bytes pure_us total_us compute_us overlap_pct cpu_us_per_call ctx_switches_per_call wait_us exposed_us
 * times: the slowest rank's averages over the timed calls; cpu_us_per_call and
 * ctx_switches_per_call: CPU time and context switches of every rank (and of the daemon, if
 * given) during the overlapped calls, less the computation's CPU time, per call (a sleeping
 * computation's own switch off its core, one per rank and call, is among them). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/bench/proc_usage.h"

static int iterations_for(long bytes, int requested) {
  if (requested > 0) return requested;
  if (bytes <= 4096) return 200;
  if (bytes <= 65536) return 100;
  return 20;
}

static int sleeping;  /* the computation sleeps: the rank leaves its core */

static void compute(double us) {
  if (sleeping) {
    const long long ns = (long long)(us * 1e3);
    struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
    while (nanosleep(&ts, &ts) != 0) {
    }
    return;
  }
  const double end = MPI_Wtime() + us * 1e-6;
  volatile double x = 1.0;
  while (MPI_Wtime() < end) x = x * 1.0000001 + 1e-9;
}

static double thread_cpu_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static double slowest(double mine) {
  double s = 0;
  MPI_Reduce(&mine, &s, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  return s;
}

static int vector;  /* MPI_Ialltoallv instead of MPI_Ialltoall */
static int *counts, *displs;

static void post(const char* send, char* recv, long bytes, int size, MPI_Request* r) {
  if (!vector) {
    MPI_Ialltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD, r);
    return;
  }
  for (int j = 0; j < size; ++j) {
    counts[j] = (int)bytes;
    displs[j] = (int)(j * bytes);
  }
  MPI_Ialltoallv(send, counts, displs, MPI_BYTE, recv, counts, displs, MPI_BYTE, MPI_COMM_WORLD, r);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const long min_bytes = argc > 1 ? atol(argv[1]) : 1;
  const long max_bytes = argc > 2 ? atol(argv[2]) : 1 << 20;
  const int requested = argc > 3 ? atoi(argv[3]) : 0;
  const pid_t daemon = argc > 4 ? (pid_t)atol(argv[4]) : 0;
  const double long_compute_us = argc > 5 ? atof(argv[5]) : 2000;
  for (int a = 6; a < argc; ++a) {
    if (strcmp(argv[a], "vector") == 0) {
      vector = 1;
    } else if (strcmp(argv[a], "sleep") == 0) {
      sleeping = 1;
    } else {
      fprintf(stderr, "mpi_ialltoall_bench: unknown word %s (vector or sleep)\n", argv[a]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  counts = malloc(sizeof(int) * size);
  displs = malloc(sizeof(int) * size);
  char* send = malloc((size_t)max_bytes * size);
  char* recv = malloc((size_t)max_bytes * size);
  memset(send, rank, (size_t)max_bytes * size);
  const pid_t self = getpid();
  if (rank == 0) {
    printf("# bytes pure_us total_us compute_us overlap_pct cpu_us_per_call ctx_switches_per_call wait_us exposed_us (%s, "
           "%d ranks%s; computation: %s; wait_us, and exposed_us = post + wait, around %.0f us of computation)\n",
           vector ? "MPI_Ialltoallv" : "MPI_Ialltoall", size, daemon > 0 ? ", and ohiod" : "",
           sleeping ? "sleep" : "busy", long_compute_us);
  }
  for (long bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    const int n = iterations_for(bytes, requested);
    MPI_Request r;
    for (int w = 0; w < n / 10 + 2; ++w) {
      post(send, recv, bytes, size, &r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int i = 0; i < n; ++i) {
      post(send, recv, bytes, size, &r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    const double pure = (MPI_Wtime() - start) * 1e6 / n;
    /* Every rank computes as long as the slowest rank's pure latency, as osu does with its max. */
    double pure_max = 0;
    MPI_Allreduce(&pure, &pure_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    ohio_bench_usage daemon_start = {-1, -1};
    if (rank == 0 && daemon > 0) daemon_start = ohio_bench_usage_start(daemon);
    ohio_bench_usage mine_start = ohio_bench_usage_start(self);
    double compute_time = 0, compute_cpu_us = 0;
    start = MPI_Wtime();
    for (int i = 0; i < n; ++i) {
      post(send, recv, bytes, size, &r);
      const double c = MPI_Wtime(), cpu = thread_cpu_us();
      compute(pure_max);
      compute_cpu_us += thread_cpu_us() - cpu;
      compute_time += MPI_Wtime() - c;
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    const double total = (MPI_Wtime() - start) * 1e6 / n;
    ohio_bench_usage mine_end = ohio_bench_usage_end(self);
    const double compute_us = compute_time * 1e6 / n;
    double cost[2] = {0, 0}, sum[2] = {0, 0};
    ohio_bench_add(&cost[0], mine_start.cpu_us, mine_end.cpu_us);
    ohio_bench_add(&cost[1], mine_start.ctx_switches, mine_end.ctx_switches);
    /* The computation is the program's own CPU time, not the collective's. */
    if (cost[0] >= 0) cost[0] -= compute_cpu_us;
    MPI_Reduce(cost, sum, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    const double total_max = slowest(total), compute_max = slowest(compute_us);
    MPI_Barrier(MPI_COMM_WORLD);
    double waited = 0, posting = 0;
    const int long_n = n < 20 ? n : 20;
    for (int i = 0; i < long_n; ++i) {
      const double p = MPI_Wtime();
      post(send, recv, bytes, size, &r);
      posting += MPI_Wtime() - p;
      compute(long_compute_us);
      const double w = MPI_Wtime();
      MPI_Wait(&r, MPI_STATUS_IGNORE);
      waited += MPI_Wtime() - w;
    }
    const double wait_max = slowest(waited * 1e6 / long_n);
    const double exposed_max = slowest((posting + waited) * 1e6 / long_n);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      if (daemon > 0) {
        ohio_bench_usage daemon_end = ohio_bench_usage_end(daemon);
        ohio_bench_add(&sum[0], daemon_start.cpu_us, daemon_end.cpu_us);
        ohio_bench_add(&sum[1], daemon_start.ctx_switches, daemon_end.ctx_switches);
      }
      double overlap = 100 * (1 - (total_max - compute_max) / pure_max);
      if (overlap < 0) overlap = 0;
      printf("%ld %.2f %.2f %.2f %.1f %.1f %.2f %.2f %.2f\n", bytes, pure_max, total_max, compute_max, overlap,
             sum[0] / n, sum[1] / n, wait_max, exposed_max);
      fflush(stdout);
    }
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
