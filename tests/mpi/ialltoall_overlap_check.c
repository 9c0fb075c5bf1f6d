/* An unmodified MPI program whose ranks leave their cores while an MPI_Ialltoall is
 * outstanding, as a rank waiting on a GPU kernel or on I/O does: after posting the call a rank
 * only sleeps (nanosleep) and reads its receive buffer, calling no MPI function, so an MPI
 * library that progresses a collective only inside its own calls moves nothing meanwhile.
 * Knows nothing of ohio.
 *
 * First one blocking MPI_Alltoall of an int, so that whatever a library (or a layer over it)
 * sets up at a communicator's first collective is done before the calls looked at: such a
 * setup meets the other ranks and would line up the staggered posts below.
 * Then per size asked for (call c = 0, 1, ...):
 *   - every rank fills its send block for peer d with pattern(rank, d, i, c) and its receive
 *     buffer with the complement of what it expects there, so that a byte reads right only once
 *     something wrote it;
 *   - MPI_Barrier, then rank r sleeps r * stagger_ms and posts MPI_Ialltoall: rank 0 posts
 *     first and is asleep, out of its MPI_Ialltoall, before any other rank posts, so no library
 *     can have moved another rank's data to it inside that call;
 *   - sleeps of sleep_ms, after each of which the rank counts the receive bytes already right,
 *     until all are or deadline_ms have passed (no MPI call: the clock is clock_gettime's);
 *   - once all are right, one more sleep: the last byte is written an instant before the call
 *     is published complete, and the first check may have fallen in between;
 *   - one MPI_Test, its flag noted; MPI_Wait if it was 0;
 *   - every byte checked again.
 *
 * usage: ialltoall_overlap_check sleep_ms deadline_ms stagger_ms bytes_per_rank...
 * Prints per rank and call
 *   "rank R: call C: bytes_per_rank=B filled_before_any_mpi_call=F/T sleeps=N first_test_flag=X verified_after=V/T"
 * (F bytes of the T received were right before any MPI call; V after the Test, or the Wait),
 * then "rank R: ALL OK" if every byte was right in the end; exits non-zero on a wrong byte. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank, size;

static unsigned char pattern(int src, int dst, long i, int call) {
  return (unsigned char)(src * 131 + dst * 31 + i * 7 + call * 13 + (i >> 8));
}

/* Receive bytes that are already right. volatile: ohiod writes them from outside this process. */
static long right_bytes(const volatile unsigned char* recv, long bytes, int call) {
  long right = 0;
  for (int s = 0; s < size; ++s)
    for (long i = 0; i < bytes; ++i) right += recv[s * bytes + i] == pattern(s, rank, i, call);
  return right;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 5) {
    if (rank == 0) printf("usage: ialltoall_overlap_check sleep_ms deadline_ms stagger_ms bytes_per_rank...\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const long sleep = atol(argv[1]);
  const double deadline = atof(argv[2]);
  const long stagger = atol(argv[3]);
  int* ints = malloc(sizeof(int) * 2 * size);
  for (int d = 0; d < size; ++d) ints[d] = rank * size + d;
  MPI_Alltoall(ints, 1, MPI_INT, ints + size, 1, MPI_INT, MPI_COMM_WORLD);
  for (int s = 0; s < size; ++s)
    if (ints[size + s] != s * size + rank) {
      printf("rank %d: WRONG: the first MPI_Alltoall delivered %d from rank %d\n", rank, ints[size + s], s);
      return 1;
    }
  free(ints);
  int all_ok = 1;
  for (int call = 0; call + 4 < argc; ++call) {
    const long bytes = atol(argv[call + 4]);
    const long total = bytes * size;
    unsigned char* send = malloc((size_t)total);
    unsigned char* recv = malloc((size_t)total);
    for (int d = 0; d < size; ++d)
      for (long i = 0; i < bytes; ++i) {
        send[d * bytes + i] = pattern(rank, d, i, call);
        recv[d * bytes + i] = (unsigned char)~pattern(d, rank, i, call);
      }
    MPI_Barrier(MPI_COMM_WORLD);
    sleep_ms(rank * stagger);
    MPI_Request request;
    if (MPI_Ialltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD, &request) != MPI_SUCCESS) {
      printf("rank %d: call %d: MPI_Ialltoall failed\n", rank, call);
      return 1;
    }
    /* From here to MPI_Test: no MPI function. */
    const double start = now_ms();
    long right = 0;
    int sleeps = 0;
    do {
      sleep_ms(sleep);
      ++sleeps;
      right = right_bytes(recv, bytes, call);
    } while (right < total && now_ms() - start < deadline);
    if (right == total) sleep_ms(sleep);
    int flag = 0;
    MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
    const int first_flag = flag;
    if (!flag) MPI_Wait(&request, MPI_STATUS_IGNORE);
    const long verified = right_bytes(recv, bytes, call);
    printf("rank %d: call %d: bytes_per_rank=%ld filled_before_any_mpi_call=%ld/%ld sleeps=%d first_test_flag=%d "
           "verified_after=%ld/%ld\n",
           rank, call, bytes, right, total, sleeps, first_flag, verified, total);
    if (verified != total) {
      printf("rank %d: call %d: WRONG: %ld of %ld received bytes wrong after the call completed\n", rank, call,
             total - verified, total);
      all_ok = 0;
    }
    fflush(stdout);
    free(send);
    free(recv);
  }
  if (all_ok) printf("rank %d: ALL OK\n", rank);
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
