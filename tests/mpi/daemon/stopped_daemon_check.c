/* MPI_Ialltoall completed with MPI_Wait while ohiod is stopped (SIGSTOP), under MPI_ERRORS_RETURN.
 * argv: BYTES_PER_RANK. Every rank makes one MPI_Alltoall (served by ohio: the group is set up and
 * started), says "rank R: holding", and waits, calling no MPI function, until the file
 * $CHECK_GO_FILE exists (the test stops a daemon meanwhile). Then it starts an MPI_Ialltoall and
 * completes it with MPI_Wait, and prints
 *   "rank R: ialltoall rc=CLASS wait rc=CLASS after N ms: ERROR STRING"
 * with N the time from the start to MPI_Wait's return. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long NowMs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int ClassOf(int rc) {
  int cls = rc;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  return cls;
}

int main(int argc, char** argv) {
  const char* go = getenv("CHECK_GO_FILE");
  if (argc != 2 || go == NULL) {
    fprintf(stderr, "usage: CHECK_GO_FILE=FILE stopped_daemon_check BYTES_PER_RANK\n");
    return 2;
  }
  MPI_Init(&argc, &argv);
  /* The failure is to be returned, not to end the job. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int m = atoi(argv[1]);
  uint8_t* send = calloc((size_t)m * size, 1);
  uint8_t* recv = calloc((size_t)m * size, 1);
  if (MPI_Alltoall(send, m, MPI_BYTE, recv, m, MPI_BYTE, MPI_COMM_WORLD) != MPI_SUCCESS) {
    printf("rank %d: the first MPI_Alltoall failed\n", rank);
    return 1;
  }
  printf("rank %d: holding\n", rank);
  fflush(stdout);
  for (long waited = 0; access(go, F_OK) != 0; ++waited) {
    if (waited == 600000) return 1;
    usleep(1000);
  }
  const long start = NowMs();
  MPI_Request request = MPI_REQUEST_NULL;
  const int started = MPI_Ialltoall(send, m, MPI_BYTE, recv, m, MPI_BYTE, MPI_COMM_WORLD, &request);
  int waited = MPI_SUCCESS;
  MPI_Status status;
  if (started == MPI_SUCCESS) waited = MPI_Wait(&request, &status);
  const long took = NowMs() - start;
  char text[MPI_MAX_ERROR_STRING] = "";
  int length = 0;
  const int failed = started != MPI_SUCCESS ? started : waited != MPI_SUCCESS ? waited : status.MPI_ERROR;
  if (failed != MPI_SUCCESS) MPI_Error_string(failed, text, &length);
  printf("rank %d: ialltoall rc=%d wait rc=%d after %ld ms: %s\n", rank, ClassOf(started), ClassOf(waited), took, text);
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
