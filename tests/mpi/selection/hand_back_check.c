/* An unmodified MPI program that makes calls ohio hands to the MPI library, for
 * tests/mpi/selection/hand_back_cost_test.cc: a few calls to settle the communicator, then a window of
 * calls between two marker system calls (access() of paths under /ohio-hand-back-window/, which
 * a tracer finds in its trace), each call's bytes checked after the window.
 *
 * usage: hand_back_check alltoall|alltoallv BYTES CALLS [HANDSHAKE_DIR]
 * With HANDSHAKE_DIR, rank R writes its pid to HANDSHAKE_DIR/ready.R before the window and waits
 * (60 s at most) until HANDSHAKE_DIR/go.R exists: the moment for a tracer to attach.
 * Inside the window, lock_counter.so (if preloaded) counts the locks ohio's code takes; rank R
 * prints "rank R: locks taken by ohio in the window: N" when it can tell, and "rank R: ALL OK"
 * once every byte of every call was right. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* From tests/mpi/selection/lock_counter.c when it is preloaded. */
extern void ohio_lock_window(int open) __attribute__((weak));
extern long ohio_locks_in_window(void) __attribute__((weak));

static unsigned char pattern(int src, int dst, long i, int call) {
  return (unsigned char)(src * 131 + dst * 31 + i * 7 + call * 13);
}

static void wait_for_tracer(const char* dir, int rank) {
  char ready[4096], go[4096], tmp[4096];
  snprintf(ready, sizeof ready, "%s/ready.%d", dir, rank);
  snprintf(tmp, sizeof tmp, "%s/ready.%d.tmp", dir, rank);
  snprintf(go, sizeof go, "%s/go.%d", dir, rank);
  FILE* f = fopen(tmp, "w");
  if (f == NULL) {
    perror(tmp);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  fprintf(f, "%d\n", (int)getpid());
  fclose(f);
  rename(tmp, ready);
  for (int waited_ms = 0; access(go, F_OK) != 0; waited_ms += 10) {
    if (waited_ms > 60000) {
      printf("rank %d: no tracer came within 60 s\n", rank);
      fflush(stdout);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    usleep(10000);
  }
}

int main(int argc, char** argv) {
  if ((argc != 4 && argc != 5) || (strcmp(argv[1], "alltoall") != 0 && strcmp(argv[1], "alltoallv") != 0)) {
    fprintf(stderr, "usage: hand_back_check alltoall|alltoallv BYTES CALLS [HANDSHAKE_DIR]\n");
    return 2;
  }
  const int vector = strcmp(argv[1], "alltoallv") == 0;
  const long n = atol(argv[2]);
  const int calls = atoi(argv[3]), settle = 5;
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  unsigned char* send = malloc((size_t)n * size);
  unsigned char* recv = malloc((size_t)n * size * (size_t)(calls + settle));
  int* counts = malloc(sizeof(int) * size);
  int* displs = malloc(sizeof(int) * size);
  for (int d = 0; d < size; ++d) {
    counts[d] = (int)n;
    displs[d] = (int)(d * n);
  }
  for (int c = 0; c < calls + settle; ++c) {
    if (c == settle) {
      if (argc == 5) wait_for_tracer(argv[4], rank);
      if (ohio_lock_window) ohio_lock_window(1);
      access("/ohio-hand-back-window/begin", F_OK);
    }
    for (int d = 0; d < size; ++d)
      for (long i = 0; i < n; ++i) send[d * n + i] = pattern(rank, d, i, c);
    unsigned char* into = recv + (size_t)c * n * size;
    if (vector) {
      MPI_Alltoallv(send, counts, displs, MPI_BYTE, into, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
    } else {
      MPI_Alltoall(send, (int)n, MPI_BYTE, into, (int)n, MPI_BYTE, MPI_COMM_WORLD);
    }
  }
  access("/ohio-hand-back-window/end", F_OK);
  if (ohio_lock_window) {
    ohio_lock_window(0);
    printf("rank %d: locks taken by ohio in the window: %ld\n", rank, ohio_locks_in_window());
  }
  for (int c = 0; c < calls + settle; ++c)
    for (int s = 0; s < size; ++s)
      for (long i = 0; i < n; ++i) {
        if (recv[(size_t)c * n * size + s * n + i] != pattern(s, rank, i, c)) {
          printf("rank %d: WRONG in call %d: byte %ld from rank %d\n", rank, c, i, s);
          fflush(stdout);
          MPI_Abort(MPI_COMM_WORLD, 2);
        }
      }
  printf("rank %d: ALL OK\n", rank);
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
