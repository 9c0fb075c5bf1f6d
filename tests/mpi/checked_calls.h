/* The calls of the daemon loss and upgrade checks (daemon_loss_check.c, daemon_upgrade_check.c):
 * MPI_Alltoall calls (or MPI_Ialltoall, each completed by MPI_Wait at once), each with bytes of
 * its own and every fifth in place, whose outcomes are recorded per call and compared across
 * ranks at the end. */
#ifndef OHIO_TESTS_MPI_CHECKED_CALLS_H_
#define OHIO_TESTS_MPI_CHECKED_CALLS_H_

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The byte `src` sends `dst` at offset k in call `call`. */
static uint8_t CheckedByte(int src, int dst, long k, int call) {
  return (uint8_t)(src * 31 + dst * 7 + k * 3 + call * 13 + (k >> 7));
}

/* Call `call` of M bytes per rank on comm (send and recv hold size * M bytes), checked byte for
 * byte; an MPI_Ialltoall and its MPI_Wait if `nonblocking`. Its outcome: 0 for MPI_SUCCESS with every byte right, -1 for MPI_SUCCESS with a wrong
 * byte (said at once, "rank R: call C: N WRONG bytes": a later call may end the job under
 * MPI_ERRORS_ARE_FATAL before any tally), else the error class. Wrong bytes add to *wrong_bytes. */
static int CheckedAlltoall(MPI_Comm comm, int rank, int size, long m, int call, uint8_t* send, uint8_t* recv,
                           long* wrong_bytes, int nonblocking) {
  const int in_place = call % 5 == 0;
  uint8_t* mine = in_place ? recv : send;
  for (int d = 0; d < size; ++d) {
    for (long k = 0; k < m; ++k) mine[(size_t)d * m + k] = CheckedByte(rank, d, k, call);
  }
  if (!in_place) memset(recv, 0xEE, (size_t)m * size);
  int rc = MPI_SUCCESS;
  if (nonblocking) {
    MPI_Request request = MPI_REQUEST_NULL;
    rc = MPI_Ialltoall(in_place ? MPI_IN_PLACE : send, (int)m, MPI_BYTE, recv, (int)m, MPI_BYTE, comm, &request);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&request, MPI_STATUS_IGNORE);
  } else {
    rc = MPI_Alltoall(in_place ? MPI_IN_PLACE : send, (int)m, MPI_BYTE, recv, (int)m, MPI_BYTE, comm);
  }
  if (rc != MPI_SUCCESS) {
    int cls = 0;
    MPI_Error_class(rc, &cls);
    return cls > 0 ? cls : 1;
  }
  long wrong = 0;
  for (int s = 0; s < size; ++s) {
    for (long k = 0; k < m; ++k) wrong += recv[(size_t)s * m + k] != CheckedByte(s, rank, k, call);
  }
  *wrong_bytes += wrong;
  if (wrong == 0) return 0;
  printf("rank %d: call %d: %ld WRONG bytes\n", rank, call, wrong);
  fflush(stdout);
  return -1;
}

/* Calls [from, to) of every rank's outcomes (`all`: rank r's `calls` outcomes at r * calls):
 * those right on every rank, failed on rank 0, and not the same on every rank (the first five of
 * these printed, by *printed_differing, which counts them over every use). */
typedef struct {
  int ok, failed, differing, first_failed;
} CheckedTally;

static CheckedTally TallyOutcomes(const int* all, int size, int calls, int from, int to, int* printed_differing) {
  CheckedTally t = {0, 0, 0, -1};
  for (int c = from; c < to; ++c) {
    int same = 1;
    for (int r = 1; r < size; ++r) same &= all[(size_t)r * calls + c] == all[c];
    if (!same) {
      if ((*printed_differing)++ < 5) {
        printf("rank 0: call %d differs:", c);
        for (int r = 0; r < size; ++r) printf(" %d", all[(size_t)r * calls + c]);
        printf("\n");
      }
      ++t.differing;
    }
    if (all[c] == 0 && same) ++t.ok;
    if (all[c] > 0) {
      ++t.failed;
      if (t.first_failed < 0) t.first_failed = c;
    }
  }
  return t;
}

#endif /* OHIO_TESTS_MPI_CHECKED_CALLS_H_ */
