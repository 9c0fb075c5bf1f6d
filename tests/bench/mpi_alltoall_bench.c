/* osu-style MPI_Alltoall latency: a plain MPI program, timed the same way whether MPI_Alltoall
 * is the MPI library's own or ohio's (libohio_mpi preloaded).
 *
 * usage: mpi_alltoall_bench [min_bytes] [max_bytes] [iterations] [daemon_pids] [collective]
 *                           [ohioctl admin_sockets]
 *        (1, 1 MiB, auto, none, alltoall, none)
 * collective: alltoall, or alltoallv: MPI_Alltoallv moving the same bytes (every count = bytes,
 * blocks in rank order), to set it beside MPI_Alltoall.
 * daemon_pids: the ohiod of every node, comma-separated (one pid namespace: network namespaces
 * do not hide pids); their CPU time counts too, and each one's network namespace tells which
 * veth0 is its node's.
 * ohioctl admin_sockets: the ohioctl program and every node's ohiod admin socket, comma-separated:
 * rank 0 reads each daemon's data_frames_sent before and after a size's timed calls.
 *
 * Prints one line per size, after warm-up calls; rank 0 prints:
 *   bytes avg_us cpu_us_per_call ctx_switches_per_call frames_per_call_per_node
 *   daemon_frames_per_call_per_node
 * avg_us: the slowest rank's average over the timed calls. cpu_us_per_call, ctx_switches_per_call:
 * CPU time (user+system) and context switches of every rank and every daemon in the timed
 * window, summed, per call. frames_per_call_per_node: packets the nodes' veth0 sent in it, per
 * call, averaged over the nodes. daemon_frames_per_call_per_node: data frames the daemons'
 * transports sent in it, per call, averaged over the nodes. "-" where a value could not be read.
 *
 * OHIO_BENCH_HOLD=PATH: after the last size, rank 0 creates PATH and every rank waits, before
 * MPI_Finalize, until whoever watches the run removes it (120 s at most): the moment to look at
 * the run's connections, which stay open until MPI_Finalize, without taking CPU from a timed
 * call. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/bench/proc_usage.h"

enum { kMaxDaemons = 256 };

static int iterations_for(long bytes, int requested) {
  if (requested > 0) return requested;
  if (bytes <= 4096) return 1000;
  if (bytes <= 65536) return 200;
  return 40;
}

/* Where the daemons' own counters are read: ohioctl and every node's admin socket. */
typedef struct {
  const char* ohioctl;
  char* sockets[kMaxDaemons];
  int n;
} admin_sockets;

/* The nodes' side of a window, sampled by rank 0: daemons' usage, veth packets and the daemons'
 * data frames, summed. */
typedef struct {
  ohio_bench_usage daemons;
  double tx_packets;
  double daemon_frames;
} nodes_sample;

/* Every daemon's data frames sent, summed: all asked at once (one ohioctl after the other would
 * take seconds at 32 nodes). */
static double daemon_frames(const admin_sockets* admin) {
  double frames = admin->n > 0 ? 0 : -1;
  FILE* asked[kMaxDaemons];
  for (int i = 0; i < admin->n; ++i) asked[i] = ohio_bench_daemon_frames_ask(admin->ohioctl, admin->sockets[i]);
  for (int i = 0; i < admin->n; ++i) ohio_bench_add(&frames, 0, ohio_bench_daemon_frames_read(asked[i]));
  return frames;
}

/* The daemons' usage is read last at the start of a window and first at its end, so that the
 * CPU their admin service spends answering for the frames stays outside it. */
static nodes_sample sample_nodes(const pid_t* pids, int n, const admin_sockets* admin, int start) {
  nodes_sample s = {{0, 0}, n > 0 ? 0 : -1, -1};
  if (start) s.daemon_frames = daemon_frames(admin);
  for (int i = 0; i < n; ++i) {
    ohio_bench_usage u = start ? ohio_bench_usage_start(pids[i]) : ohio_bench_usage_end(pids[i]);
    ohio_bench_add(&s.daemons.cpu_us, 0, u.cpu_us);
    ohio_bench_add(&s.daemons.ctx_switches, 0, u.ctx_switches);
    ohio_bench_add(&s.tx_packets, 0, ohio_bench_tx_packets(pids[i], "veth0"));
  }
  if (!start) s.daemon_frames = daemon_frames(admin);
  return s;
}

static void exchange(int vector, const char* send, char* recv, int bytes, const int* counts, const int* displs) {
  if (vector) {
    MPI_Alltoallv(send, counts, displs, MPI_BYTE, recv, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
  } else {
    MPI_Alltoall(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE, MPI_COMM_WORLD);
  }
}

static int rank_is_zero(void) {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank == 0;
}

static void print_value(double v, int decimals) {
  if (v < 0) {
    printf(" -");
  } else {
    printf(" %.*f", decimals, v);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  long min_bytes = argc > 1 ? atol(argv[1]) : 1;
  long max_bytes = argc > 2 ? atol(argv[2]) : 1 << 20;
  int requested = argc > 3 ? atoi(argv[3]) : 0;
  pid_t daemons[kMaxDaemons];
  int ndaemons = 0;
  for (const char* p = argc > 4 ? argv[4] : ""; *p != '\0' && ndaemons < kMaxDaemons;) {
    char* end;
    long pid = strtol(p, &end, 10);
    if (end == p || pid <= 0) {
      if (rank_is_zero()) fprintf(stderr, "mpi_alltoall_bench: daemon_pids: bad pid list '%s'\n", argv[4]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    daemons[ndaemons++] = (pid_t)pid;
    p = *end == ',' ? end + 1 : end;
  }
  admin_sockets admin = {argc > 7 ? argv[6] : NULL, {NULL}, 0};
  for (char* p = argc > 7 ? strdup(argv[7]) : NULL; p != NULL && *p != '\0' && admin.n < kMaxDaemons;) {
    admin.sockets[admin.n++] = p;
    p = strchr(p, ',');
    if (p != NULL) *p++ = '\0';
  }
  const char* collective = argc > 5 ? argv[5] : "alltoall";
  const int vector = strcmp(collective, "alltoallv") == 0;
  if (!vector && strcmp(collective, "alltoall") != 0) {
    if (rank_is_zero()) fprintf(stderr, "mpi_alltoall_bench: collective: alltoall or alltoallv, not '%s'\n", collective);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int* counts = malloc(sizeof(int) * size);
  int* displs = malloc(sizeof(int) * size);
  char* send = malloc((size_t)max_bytes * size);
  char* recv = malloc((size_t)max_bytes * size);
  memset(send, rank, (size_t)max_bytes * size);
  const pid_t self = getpid();
  if (rank == 0) {
    printf("# bytes avg_us cpu_us_per_call ctx_switches_per_call frames_per_call_per_node daemon_frames_per_call_per_node"
           " (%d ranks, %d daemons, %s)\n",
           size, ndaemons, vector ? "MPI_Alltoallv" : "MPI_Alltoall");
  }
  for (long bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    int n = iterations_for(bytes, requested);
    for (int j = 0; j < size; ++j) {
      counts[j] = (int)bytes;
      displs[j] = j * (int)bytes;
    }
    for (int w = 0; w < n / 10 + 2; ++w) exchange(vector, send, recv, (int)bytes, counts, displs);
    /* The daemons' and veths' window spans every rank's: sampled before the barrier that starts
     * the ranks and after the one that sees them all done. A barrier first: every rank has then
     * finished its warm-up calls, so every frame of them has been sent before the sample. */
    MPI_Barrier(MPI_COMM_WORLD);
    nodes_sample nodes_start = {{0, 0}, -1, -1};
    if (rank == 0) nodes_start = sample_nodes(daemons, ndaemons, &admin, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    ohio_bench_usage mine_start = ohio_bench_usage_start(self);
    double start = MPI_Wtime();
    for (int i = 0; i < n; ++i) exchange(vector, send, recv, (int)bytes, counts, displs);
    double mine = (MPI_Wtime() - start) * 1e6 / n, slowest = 0;
    ohio_bench_usage mine_end = ohio_bench_usage_end(self);
    MPI_Barrier(MPI_COMM_WORLD);
    nodes_sample nodes_end = {{0, 0}, -1, -1};
    if (rank == 0) nodes_end = sample_nodes(daemons, ndaemons, &admin, 0);
    double cost[2] = {0, 0}, sum[2] = {0, 0}, least[2] = {0, 0};
    ohio_bench_add(&cost[0], mine_start.cpu_us, mine_end.cpu_us);
    ohio_bench_add(&cost[1], mine_start.ctx_switches, mine_end.ctx_switches);
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(cost, sum, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(cost, least, 2, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      double cpu = least[0] < 0 ? -1 : sum[0], ctx = least[1] < 0 ? -1 : sum[1], frames = -1, daemon_frames = -1;
      ohio_bench_add(&cpu, nodes_start.daemons.cpu_us, nodes_end.daemons.cpu_us);
      ohio_bench_add(&ctx, nodes_start.daemons.ctx_switches, nodes_end.daemons.ctx_switches);
      if (nodes_start.tx_packets >= 0 && nodes_end.tx_packets >= 0) {
        frames = (nodes_end.tx_packets - nodes_start.tx_packets) / ndaemons / n;
      }
      if (nodes_start.daemon_frames >= 0 && nodes_end.daemon_frames >= 0) {
        daemon_frames = (nodes_end.daemon_frames - nodes_start.daemon_frames) / admin.n / n;
      }
      printf("%ld %.2f", bytes, slowest);
      print_value(cpu < 0 ? -1 : cpu / n, 1);
      print_value(ctx < 0 ? -1 : ctx / n, 2);
      print_value(frames, 2);
      print_value(daemon_frames, 2);
      printf("\n");
    }
    fflush(stdout);
  }
  const char* hold = getenv("OHIO_BENCH_HOLD");
  if (hold != NULL && *hold != '\0') {
    if (rank == 0) {
      FILE* f = fopen(hold, "w");
      if (f != NULL) {
        fputs("held before MPI_Finalize\n", f);
        fclose(f);
        for (int i = 0; i < 12000 && access(hold, F_OK) == 0; ++i) usleep(10000);
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (admin.n > 0) free(admin.sockets[0]);  /* the one strdup'd list */
  free(send);
  free(recv);
  free(counts);
  free(displs);
  MPI_Finalize();
  return 0;
}
