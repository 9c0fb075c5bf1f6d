/* An unmodified MPI program at MPI_THREAD_MULTIPLE whose ranks each run two threads, each in a
 * loop of MPI_Alltoall, MPI_Ialltoall + MPI_Wait and MPI_Alltoallv (uneven counts) on a
 * communicator of its own (two
 * MPI_Comm_dup of MPI_COMM_WORLD), as MPI allows: collectives on different communicators from
 * different threads at the same time. Even ranks start the thread of communicator 0 first, odd
 * ranks that of communicator 1: a client that held one lock over a whole call would have rank 0
 * wait in communicator 0 for rank 1, which holds its lock waiting in communicator 1 for rank 0.
 * Knows nothing of ohio.
 *
 * Every received byte is checked against what its sender, receiver, offset, iteration and
 * communicator say it must be.
 *
 * usage: thread_multiple_check iterations
 * Aborts if the library provides less than MPI_THREAD_MULTIPLE. Prints, per rank and
 * communicator, "rank R: comm C: alltoalls=N ialltoalls=N alltoallvs=N", then "rank R: ALL OK"; exits
 * non-zero on the first wrong byte or failed call. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bytes per rank: below and above the sizes where ohio changes how it moves a call (one copy
 * through the segment, single copy from the sender's memory, several rounds). */
static const long kSizes[] = {1, 100, 4096, 65536};
#define SIZE_COUNT ((int)(sizeof(kSizes) / sizeof(kSizes[0])))

static int rank, size, iterations;

static unsigned char pattern(int src, int dst, long i, int iteration, int comm) {
  return (unsigned char)(src * 131 + dst * 31 + i * 7 + iteration * 13 + comm * 101 + (i >> 8));
}

typedef struct {
  int index; /* which communicator: 0 or 1 */
  MPI_Comm comm;
  int alltoalls, ialltoalls, alltoallvs;
  int wrong; /* set on the first wrong byte or failed call */
} Worker;

static void fill(unsigned char* send, unsigned char* recv, long bytes, int iteration, int comm) {
  for (int d = 0; d < size; ++d)
    for (long i = 0; i < bytes; ++i) send[d * bytes + i] = pattern(rank, d, i, iteration, comm);
  memset(recv, 0xEE, (size_t)bytes * size);
}

/* Block s of `recv` (counts[s] bytes at displs[s]) is what rank s sent this rank. */
static int verify_blocks(Worker* w, const unsigned char* recv, const int* counts, const int* displs, int iteration,
                         const char* what) {
  for (int s = 0; s < size; ++s) {
    for (long i = 0; i < counts[s]; ++i) {
      const unsigned char want = pattern(s, rank, i, iteration, w->index);
      if (recv[displs[s] + i] != want) {
        printf("rank %d: comm %d: WRONG %s bytes=%d iteration %d from %d at %ld: %d, expected %d\n", rank, w->index,
               what, counts[s], iteration, s, i, recv[displs[s] + i], want);
        fflush(stdout);
        return 0;
      }
    }
  }
  return 1;
}

static int verify(Worker* w, const unsigned char* recv, long bytes, int iteration, const char* what) {
  int counts[size], displs[size];
  for (int s = 0; s < size; ++s) {
    counts[s] = (int)bytes;
    displs[s] = (int)(s * bytes);
  }
  return verify_blocks(w, recv, counts, displs, iteration, what);
}

/* MPI_Alltoallv with `bytes` give or take 2 per pair, alike on both sides of each pair. */
static int alltoallv(Worker* w, unsigned char* send, unsigned char* recv, long bytes, int iteration) {
  int scounts[size], sdispls[size], rcounts[size], rdispls[size];
  for (int d = 0, at = 0; d < size; ++d) {
    scounts[d] = (int)bytes + (rank + 2 * d) % 3;
    sdispls[d] = at;
    at += scounts[d];
    for (long i = 0; i < scounts[d]; ++i) send[sdispls[d] + i] = pattern(rank, d, i, iteration, w->index);
  }
  for (int s = 0, at = 0; s < size; ++s) {
    rcounts[s] = (int)bytes + (s + 2 * rank) % 3;
    rdispls[s] = at;
    at += rcounts[s];
  }
  memset(recv, 0xEE, (size_t)(bytes + 2) * size);
  if (MPI_Alltoallv(send, scounts, sdispls, MPI_BYTE, recv, rcounts, rdispls, MPI_BYTE, w->comm) != MPI_SUCCESS) {
    printf("rank %d: comm %d: WRONG MPI_Alltoallv failed\n", rank, w->index);
    return 0;
  }
  ++w->alltoallvs;
  return verify_blocks(w, recv, rcounts, rdispls, iteration, "MPI_Alltoallv");
}

static void* run(void* arg) {
  Worker* w = arg;
  const long most = kSizes[SIZE_COUNT - 1];
  unsigned char* send = malloc((size_t)(most + 2) * size);
  unsigned char* recv = malloc((size_t)(most + 2) * size);
  for (int it = 0; it < iterations && !w->wrong; ++it) {
    for (int k = 0; k < SIZE_COUNT && !w->wrong; ++k) {
      const long bytes = kSizes[k];
      /* Each call of an iteration and size has its own pattern: a stale receive shows. */
      const int blocking = 3 * (it * SIZE_COUNT + k), nonblocking = blocking + 1, vector = blocking + 2;
      fill(send, recv, bytes, blocking, w->index);
      if (MPI_Alltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, w->comm) != MPI_SUCCESS) {
        printf("rank %d: comm %d: WRONG MPI_Alltoall failed\n", rank, w->index);
        w->wrong = 1;
        break;
      }
      ++w->alltoalls;
      if (!verify(w, recv, bytes, blocking, "MPI_Alltoall")) {
        w->wrong = 1;
        break;
      }
      fill(send, recv, bytes, nonblocking, w->index);
      MPI_Request request;
      if (MPI_Ialltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, w->comm, &request) != MPI_SUCCESS ||
          MPI_Wait(&request, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        printf("rank %d: comm %d: WRONG MPI_Ialltoall or MPI_Wait failed\n", rank, w->index);
        w->wrong = 1;
        break;
      }
      ++w->ialltoalls;
      if (!verify(w, recv, bytes, nonblocking, "MPI_Ialltoall") || !alltoallv(w, send, recv, bytes, vector)) {
        w->wrong = 1;
      }
    }
  }
  free(send);
  free(recv);
  return NULL;
}

int main(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (provided < MPI_THREAD_MULTIPLE) {
    fprintf(stderr, "rank %d: the MPI library provides thread level %d, not MPI_THREAD_MULTIPLE\n", rank, provided);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (argc != 2 || (iterations = atoi(argv[1])) <= 0) {
    if (rank == 0) fprintf(stderr, "usage: %s iterations\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  Worker workers[2];
  memset(workers, 0, sizeof(workers));
  for (int c = 0; c < 2; ++c) {
    workers[c].index = c;
    MPI_Comm_dup(MPI_COMM_WORLD, &workers[c].comm);
  }
  /* Even ranks start communicator 0's thread first, odd ranks communicator 1's; the second
   * starts once the first has had time to enter its first call. */
  const int first = rank % 2;
  pthread_t threads[2];
  pthread_create(&threads[first], NULL, run, &workers[first]);
  usleep(100000);
  pthread_create(&threads[1 - first], NULL, run, &workers[1 - first]);
  int wrong = 0;
  for (int c = 0; c < 2; ++c) {
    pthread_join(threads[c], NULL);
    printf("rank %d: comm %d: alltoalls=%d ialltoalls=%d alltoallvs=%d\n", rank, c, workers[c].alltoalls,
           workers[c].ialltoalls, workers[c].alltoallvs);
    wrong |= workers[c].wrong;
  }
  fflush(stdout);
  if (wrong) MPI_Abort(MPI_COMM_WORLD, 1);
  for (int c = 0; c < 2; ++c) MPI_Comm_free(&workers[c].comm);
  printf("rank %d: ALL OK\n", rank);
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
