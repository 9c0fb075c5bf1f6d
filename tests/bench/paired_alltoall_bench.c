/* What ohio adds to an MPI_Alltoall it hands back, measured inside one job: blocks of calls
 * through the MPI library alone (the baseline) alternate with blocks through ohio (the subject),
 * so that both sides share the job's scheduling. With more ranks than cores a whole job lands in
 * one of several speeds about a microsecond apart; comparing separate jobs then measures which
 * speed each job drew, not what ohio costs.
 *
 * usage: paired_alltoall_bench MODE [min_bytes] [max_bytes] [iterations] [block]
 *        (MODE required; 1, 256, 3000, 100)
 * MODE says what the two sides are:
 *   pmpi: the baseline calls PMPI_Alltoall, the subject MPI_Alltoall, on one communicator. With
 *         the shim preloaded the subject is the shim's; with nothing preloaded both are the
 *         library's, and the ratio shows what the method itself reads as a difference.
 *   cvar: both call MPI_Alltoall, on two duplicates of MPI_COMM_WORLD: the baseline's made while
 *         the MPI_T control variable coll_ohio_priority is -1 (Open MPI then does not select
 *         coll/ohio for it), the subject's at the priority the job started with.
 * Per size: warm-up calls on both sides, then `iterations` calls per side in blocks of `block`,
 * the sides alternating (baseline, subject, subject, baseline, ...) so that a drift in speed
 * weighs on both alike. A block's time is the ranks' average per call.
 *
 * Rank 0 prints per size:
 *   bytes baseline_us subject_us diff_us base_cpu_us subject_cpu_us base_ctx subject_ctx
 * baseline_us, subject_us: the median over the side's blocks; diff_us: the median over block
 * pairs of subject minus baseline. *_cpu_us, *_ctx: CPU time (user + system) and context switches
 * per call, all ranks summed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "tests/bench/median.h"

/* This process's CPU time in µs and context switches so far. getrusage, not /proc: a block is a
 * few hundred microseconds and /proc's stat counts in 10 ms ticks. */
static void usage_now(double* cpu_us, double* ctx) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  *cpu_us = (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 + u.ru_utime.tv_usec + u.ru_stime.tv_usec;
  *ctx = (double)(u.ru_nvcsw + u.ru_nivcsw);
}

/* Writes coll_ohio_priority through MPI_T; returns the value it had, or 0 (nothing written) when
 * the job has no such variable (coll/ohio not loaded). */
static int set_ohio_priority(int value, int* had) {
  int index = -1;
  if (MPI_T_cvar_get_index("coll_ohio_priority", &index) != MPI_SUCCESS) return 0;
  MPI_T_cvar_handle handle;
  int count = 0;
  if (MPI_T_cvar_handle_alloc(index, NULL, &handle, &count) != MPI_SUCCESS) return 0;
  MPI_T_cvar_read(handle, had);
  const int written = MPI_T_cvar_write(handle, &value) == MPI_SUCCESS;
  MPI_T_cvar_handle_free(&handle);
  return written;
}

typedef struct {
  int pmpi; /* the baseline calls PMPI_Alltoall */
  MPI_Comm comm[2]; /* [0] the baseline's, [1] the subject's */
} sides;

static void call(const sides* s, int side, const char* send, char* recv, int bytes) {
  if (side == 0 && s->pmpi) {
    PMPI_Alltoall(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE, s->comm[0]);
  } else {
    MPI_Alltoall(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE, s->comm[side]);
  }
}

int main(int argc, char** argv) {
  int provided;
  MPI_Init(&argc, &argv);
  if (argc < 2 || (strcmp(argv[1], "pmpi") != 0 && strcmp(argv[1], "cvar") != 0)) {
    fprintf(stderr, "usage: paired_alltoall_bench pmpi|cvar [min_bytes] [max_bytes] [iterations] [block]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const long min_bytes = argc > 2 ? atol(argv[2]) : 1;
  const long max_bytes = argc > 3 ? atol(argv[3]) : 256;
  const int block = argc > 5 ? atoi(argv[5]) : 100;
  const int blocks = (argc > 4 ? atoi(argv[4]) : 3000) / (block > 0 ? block : 1);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (block < 1 || blocks < 2 || min_bytes < 1 || max_bytes < min_bytes) {
    if (rank == 0) fprintf(stderr, "paired_alltoall_bench: need block >= 1, iterations >= 2 blocks, 1 <= min <= max\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  sides s = {strcmp(argv[1], "pmpi") == 0, {MPI_COMM_WORLD, MPI_COMM_WORLD}};
  if (!s.pmpi) {
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    int had = 0;
    if (!set_ohio_priority(-1, &had)) {
      if (rank == 0) fprintf(stderr, "paired_alltoall_bench: cvar: coll_ohio_priority cannot be written (coll/ohio not loaded?)\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &s.comm[0]);
    set_ohio_priority(had, &had);
    MPI_Comm_dup(MPI_COMM_WORLD, &s.comm[1]);
    MPI_T_finalize();
  }
  char* send = malloc((size_t)max_bytes * size);
  char* recv = malloc((size_t)max_bytes * size);
  memset(send, rank, (size_t)max_bytes * size);
  double* per_call[2] = {malloc(sizeof(double) * blocks), malloc(sizeof(double) * blocks)};
  double* averaged[2] = {malloc(sizeof(double) * blocks), malloc(sizeof(double) * blocks)};
  double* diff = malloc(sizeof(double) * blocks);
  if (rank == 0) {
    printf("# bytes baseline_us subject_us diff_us base_cpu_us subject_cpu_us base_ctx subject_ctx"
           " (%d ranks, %s, %d blocks of %d calls a side)\n", size, argv[1], blocks, block);
  }
  for (long bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    for (int w = 0; w < block; ++w) {
      call(&s, 0, send, recv, (int)bytes);
      call(&s, 1, send, recv, (int)bytes);
    }
    double usage[2][2] = {{0, 0}, {0, 0}};
    for (int b = 0; b < blocks; ++b) {
      for (int k = 0; k < 2; ++k) {
        const int side = (b % 2) ^ k; /* baseline first in even pairs, subject first in odd */
        double cpu0, ctx0, cpu1, ctx1;
        MPI_Barrier(MPI_COMM_WORLD);
        usage_now(&cpu0, &ctx0);
        const double start = MPI_Wtime();
        for (int i = 0; i < block; ++i) call(&s, side, send, recv, (int)bytes);
        per_call[side][b] = (MPI_Wtime() - start) * 1e6 / block;
        usage_now(&cpu1, &ctx1);
        usage[side][0] += cpu1 - cpu0;
        usage[side][1] += ctx1 - ctx0;
      }
    }
    double total[2][2];
    for (int side = 0; side < 2; ++side) {
      MPI_Reduce(per_call[side], averaged[side], blocks, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
      MPI_Reduce(usage[side], total[side], 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    }
    if (rank == 0) {
      for (int b = 0; b < blocks; ++b) {
        averaged[0][b] /= size;
        averaged[1][b] /= size;
        diff[b] = averaged[1][b] - averaged[0][b];
      }
      const double d = ohio_bench_median(diff, blocks);
      const double calls = (double)blocks * block;
      printf("%ld %.3f %.3f %+.3f %.2f %.2f %.3f %.3f\n", bytes, ohio_bench_median(averaged[0], blocks), ohio_bench_median(averaged[1], blocks),
             d, total[0][0] / calls, total[1][0] / calls, total[0][1] / calls, total[1][1] / calls);
      fflush(stdout);
    }
  }
  if (!s.pmpi) {
    MPI_Comm_free(&s.comm[0]);
    MPI_Comm_free(&s.comm[1]);
  }
  free(send);
  free(recv);
  free(per_call[0]);
  free(per_call[1]);
  free(averaged[0]);
  free(averaged[1]);
  free(diff);
  MPI_Finalize();
  return 0;
}
