/* ohiod stopped and a new ohiod started in its place (an upgrade) while a job runs, under
 * MPI_ERRORS_RETURN, or MPI's default MPI_ERRORS_ARE_FATAL if $CHECK_FATAL_ERRORS is set.
 * argv: PHASES CALLS BYTES_PER_RANK STOP_PHASE.
 * Each phase is what a long program does between set-ups: it duplicates MPI_COMM_WORLD (a new
 * communicator, so a new ohio group), makes CALLS calls of MPI_Alltoall on it, 200 us apart, each
 * with bytes of its own (every fifth in place), and frees it. Halfway through phase STOP_PHASE
 * rank 0 creates the file $CHECK_STOP_FILE, at which the test stops the daemon and starts the new
 * one, and goes on at once: the rest of that phase runs while the daemon is gone or new. At the
 * end of that phase rank 0 waits (at most 120 s) for the file $CHECK_RESUME_FILE, which the test
 * creates once the new daemon accepts, and the others wait for rank 0 (MPI_Barrier, which ohio
 * does not serve): the phases after it start with the new daemon up.
 * Each rank records every call's outcome: 0 for MPI_SUCCESS with every byte right, -1 for
 * MPI_SUCCESS with a wrong byte (and says so at once: "rank R: call C: N WRONG bytes"), else the
 * error class. At the end rank 0 gathers the outcomes
 * and prints one line per phase and a total:
 *   "rank 0: phase P: ok O failed F differing D"
 *   "rank 0: calls C ok O failed F differing D wrong_bytes W first_failed K"
 * D: calls whose outcome is not the same on every rank; W: wrong bytes summed over the ranks. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "tests/mpi/checked_calls.h"

static void Touch(const char* path) {
  if (path == NULL) return;
  FILE* f = fopen(path, "w");
  if (f != NULL) fclose(f);
}

/* 1 once `path` exists, 0 if it did not within `seconds`. */
static int AwaitFile(const char* path, int seconds) {
  if (path == NULL) return 1;
  const time_t until = time(NULL) + seconds;
  while (access(path, F_OK) != 0) {
    if (time(NULL) >= until) return 0;
    usleep(10000);
  }
  return 1;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int fatal_errors = getenv("CHECK_FATAL_ERRORS") != NULL;
  if (!fatal_errors) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 5) {
    if (rank == 0) fprintf(stderr, "usage: daemon_upgrade_check PHASES CALLS BYTES_PER_RANK STOP_PHASE\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int phases = atoi(argv[1]);
  const int calls = atoi(argv[2]);
  const long m = atol(argv[3]);
  const int stop_phase = atoi(argv[4]);
  const int total = phases * calls;
  uint8_t* send = malloc((size_t)m * size);
  uint8_t* recv = malloc((size_t)m * size);
  int* outcome = calloc((size_t)total, sizeof(int));
  long wrong_bytes = 0;
  for (int phase = 0; phase < phases; ++phase) {
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);  /* its error handler with it */
    for (int i = 0; i < calls; ++i) {
      const int c = phase * calls + i;
      if (rank == 0 && phase == stop_phase && i == calls / 2) Touch(getenv("CHECK_STOP_FILE"));
      outcome[c] = CheckedAlltoall(comm, rank, size, m, c, send, recv, &wrong_bytes, 0);
      usleep(200);
    }
    MPI_Comm_free(&comm);
    if (phase == stop_phase) {
      if (rank == 0 && !AwaitFile(getenv("CHECK_RESUME_FILE"), 120)) {
        fprintf(stderr, "rank 0: the new daemon was not up within 120 s\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
      }
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }
  int* all = rank == 0 ? malloc(sizeof(int) * (size_t)total * size) : NULL;
  MPI_Gather(outcome, total, MPI_INT, all, total, MPI_INT, 0, MPI_COMM_WORLD);
  long total_wrong = 0;
  MPI_Reduce(&wrong_bytes, &total_wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    int printed = 0;
    for (int phase = 0; phase < phases; ++phase) {
      const CheckedTally t = TallyOutcomes(all, size, total, phase * calls, (phase + 1) * calls, &printed);
      printf("rank 0: phase %d: ok %d failed %d differing %d\n", phase, t.ok, t.failed, t.differing);
    }
    int none_printed = 5;  /* the phases printed those that differ */
    const CheckedTally t = TallyOutcomes(all, size, total, 0, total, &none_printed);
    printf("rank 0: calls %d ok %d failed %d differing %d wrong_bytes %ld first_failed %d\n", total, t.ok, t.failed,
           t.differing, total_wrong, t.first_failed);
    fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
