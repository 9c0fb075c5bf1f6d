/* ohiod killed in the middle of a stream of MPI_Alltoall calls, under MPI_ERRORS_RETURN.
 * argv: CALLS BYTES_PER_RANK KILL_AT [ialltoall]. Every rank makes CALLS calls of MPI_Alltoall
 * (with "ialltoall": MPI_Ialltoall, each completed by MPI_Wait at once) on
 * MPI_COMM_WORLD, 200 us apart, each with bytes of its own (every fifth in place); at call
 * KILL_AT rank 0 creates the file $CHECK_KILL_FILE, at which the test kills the daemon, and
 * goes on at once. Each rank records every call's outcome: 0 for MPI_SUCCESS with every byte
 * right, -1 for MPI_SUCCESS with a wrong byte, else the error class. At the end rank 0 gathers
 * the outcomes (MPI_Gather, which the shim does not serve) and prints
 *   "rank 0: calls C ok O failed F differing D wrong_bytes W first_failed K"
 * D: calls whose outcome is not the same on every rank; W: wrong bytes summed over the ranks. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/mpi/checked_calls.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 4 && !(argc == 5 && strcmp(argv[4], "ialltoall") == 0)) {
    if (rank == 0) fprintf(stderr, "usage: daemon_loss_check CALLS BYTES_PER_RANK KILL_AT [ialltoall]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int calls = atoi(argv[1]);
  const long m = atol(argv[2]);
  const int kill_at = atoi(argv[3]);
  const int nonblocking = argc == 5;
  const char* kill_file = getenv("CHECK_KILL_FILE");
  uint8_t* send = malloc((size_t)m * size);
  uint8_t* recv = malloc((size_t)m * size);
  int* outcome = calloc((size_t)calls, sizeof(int));
  long wrong_bytes = 0;
  for (int c = 0; c < calls; ++c) {
    if (rank == 0 && c == kill_at && kill_file != NULL) {
      FILE* f = fopen(kill_file, "w");
      if (f != NULL) fclose(f);
    }
    outcome[c] = CheckedAlltoall(MPI_COMM_WORLD, rank, size, m, c, send, recv, &wrong_bytes, nonblocking);
    usleep(200);
  }
  int* all = rank == 0 ? malloc(sizeof(int) * (size_t)calls * size) : NULL;
  MPI_Gather(outcome, calls, MPI_INT, all, calls, MPI_INT, 0, MPI_COMM_WORLD);
  long total_wrong = 0;
  MPI_Reduce(&wrong_bytes, &total_wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    int printed = 0;
    const CheckedTally t = TallyOutcomes(all, size, calls, 0, calls, &printed);
    printf("rank 0: calls %d ok %d failed %d differing %d wrong_bytes %ld first_failed %d\n", calls, t.ok, t.failed,
           t.differing, total_wrong, t.first_failed);
    fflush(stdout);
  }
  MPI_Finalize();
  return 0;
}
