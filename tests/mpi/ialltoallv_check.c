/* An unmodified MPI program: MPI_Ialltoallv with counts of its own for every pair (about a
 * third of them zero) and displacements out of order with gaps between the blocks. Knows
 * nothing of ohio.
 *   1. Ialltoallv + Irecv + Isend (a ring), then one MPI_Waitall of all three; bytes.
 *   2. The same in MPI_INT, two outstanding, completed in reverse order by MPI_Wait.
 *   3. A strided receive datatype (every other byte): received bytes checked, and every byte
 *      between them untouched.
 *   4. In place, with counts alike both ways for every pair; completed by MPI_Test polling.
 *   5. Two outstanding, then a blocking MPI_Alltoallv (MPI orders it after them), then the two
 *      completed by MPI_Waitany.
 *   6. (mismatch only) With MPI_ERRORS_RETURN, the last rank sends rank 0 one byte more than
 *      rank 0 expects: MPI_Wait must return an error of class MPI_ERR_COUNT on every rank, and
 *      the next call must work.
 * Every received byte and every gap is checked; every poll loop gives up after 60 s.
 *
 * usage: ialltoallv_check bytes iterations [mismatch]
 * Prints "rank R: ialltoallvs=N" and "rank R: ALL OK" on success; exits non-zero on the first
 * wrong byte. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/mpi/ring_message.h"

static int rank, size;
static long bytes;
static int ialltoallvs;

static unsigned char pattern(int src, int dst, long i, int call) {
  return (unsigned char)(src * 131 + dst * 31 + i * 7 + call * 13 + (i >> 8));
}

/* Elements src sends dst in `call`, the same on both ends; a third of the pairs send none. */
static int count_of(int src, int dst, int call) {
  const unsigned h = (unsigned)(src * 7919 + dst * 104729 + call * 1299709) * 2654435761u;
  if ((h >> 7) % 3 == 0) return 0;
  return (int)(bytes / 2 + (h >> 11) % (unsigned)bytes);
}

/* Alike both ways, for in place. */
static int symmetric_count_of(int a, int b, int call) {
  return a < b ? count_of(a, b, call) : count_of(b, a, call);
}

typedef struct {
  int call, elem;  /* elem: bytes of one element of the data (1 or sizeof(int)) */
  int stride;      /* receive: one element every `stride` elements */
  int scounts[64], sdispls[64], rcounts[64], rdispls[64];
  unsigned char *send, *recv;
  long send_len, recv_len;  /* in bytes */
} Exchange;

/* Send blocks in reverse rank order one element apart; receive blocks from rank+1 on, two
 * extents of the receive type apart (an extent is `stride` elements: the element in its first
 * bytes, the rest a hole). Byte i of a block holds pattern(src, dst, i, call). */
static Exchange prepare(int call, int elem, int stride, int in_place) {
  Exchange x;
  memset(&x, 0, sizeof(x));
  x.call = call;
  x.elem = elem;
  x.stride = stride;
  int at = 0;
  for (int k = 1; k <= size; ++k) {
    const int s = (rank + k) % size;
    x.rcounts[s] = in_place ? symmetric_count_of(s, rank, call) : count_of(s, rank, call);
    x.rdispls[s] = at;  /* in extents of the receive type: elem * stride bytes */
    at += x.rcounts[s] + 2;
  }
  x.recv_len = (long)at * elem * stride;
  x.recv = malloc(x.recv_len + 1);
  memset(x.recv, 0xEE, x.recv_len);
  if (in_place) {
    for (int s = 0; s < size; ++s)
      for (long i = 0; i < (long)x.rcounts[s] * elem; ++i) x.recv[(long)x.rdispls[s] * elem + i] = pattern(rank, s, i, call);
    return x;
  }
  at = 0;
  for (int d = size - 1; d >= 0; --d) {
    x.scounts[d] = count_of(rank, d, call);
    x.sdispls[d] = at;
    at += x.scounts[d] + 1;
  }
  x.send_len = (long)at * elem;
  x.send = malloc(x.send_len + 1);
  memset(x.send, 0x55, x.send_len);
  for (int d = 0; d < size; ++d)
    for (long i = 0; i < (long)x.scounts[d] * elem; ++i) x.send[(long)x.sdispls[d] * elem + i] = pattern(rank, d, i, call);
  return x;
}

static void post(Exchange* x, MPI_Datatype sendtype, MPI_Datatype recvtype, MPI_Request* request) {
  const void* send = x->send == NULL ? MPI_IN_PLACE : x->send;
  if (MPI_Ialltoallv(send, x->scounts, x->sdispls, sendtype, x->recv, x->rcounts, x->rdispls, recvtype,
                     MPI_COMM_WORLD, request) != MPI_SUCCESS) {
    printf("rank %d: MPI_Ialltoallv failed\n", rank);
    exit(1);
  }
  ++ialltoallvs;
}

/* Every byte of the receive buffer: the blocks' elements and everything else still 0xEE. */
static void verify(Exchange* x, const char* what) {
  unsigned char* want = malloc(x->recv_len + 1);
  memset(want, 0xEE, x->recv_len);
  for (int s = 0; s < size; ++s)
    for (long e = 0; e < x->rcounts[s]; ++e)
      for (int b = 0; b < x->elem; ++b)
        want[((long)x->rdispls[s] + e) * x->stride * x->elem + b] = pattern(s, rank, e * x->elem + b, x->call);
  for (long i = 0; i < x->recv_len; ++i)
    if (x->recv[i] != want[i]) {
      printf("rank %d: %s: WRONG byte at %ld (call %d): got %u want %u\n", rank, what, i, x->call, x->recv[i], want[i]);
      exit(1);
    }
  free(want);
  free(x->send);
  free(x->recv);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 3 || size > 64) {
    if (rank == 0) printf("usage: ialltoallv_check bytes iterations (at most 64 ranks)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  bytes = atol(argv[1]);
  const int iterations = atoi(argv[2]);
  const int mismatch = argc > 3 && strcmp(argv[3], "mismatch") == 0;
  int call = 0;

  /* 1 */
  for (int it = 0; it < iterations; ++it, ++call) {
    MPI_Request r[3];
    Exchange x = prepare(call, 1, 1, 0);
    Ring g;
    post(&x, MPI_BYTE, MPI_BYTE, &r[0]);
    ring_post(&g, call, &r[1], &r[2]);
    MPI_Status statuses[3];
    if (MPI_Waitall(3, r, statuses) != MPI_SUCCESS) {
      printf("rank %d: MPI_Waitall failed\n", rank);
      return 1;
    }
    verify(&x, "Waitall");
    ring_verify(&g, call, "ring");
  }

  /* 2 */
  {
    MPI_Request r[2];
    Exchange x[2];
    for (int k = 0; k < 2; ++k, ++call) {
      x[k] = prepare(call, (int)sizeof(int), 1, 0);
      post(&x[k], MPI_INT, MPI_INT, &r[k]);
    }
    for (int k = 1; k >= 0; --k) {
      if (MPI_Wait(&r[k], MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        printf("rank %d: MPI_Wait failed\n", rank);
        return 1;
      }
      verify(&x[k], "Wait");
    }
  }

  /* 3 */
  {
    MPI_Datatype strided;
    MPI_Type_create_resized(MPI_BYTE, 0, 2, &strided);
    MPI_Type_commit(&strided);
    MPI_Request r;
    Exchange x = prepare(call++, 1, 2, 0);
    post(&x, MPI_BYTE, strided, &r);
    if (MPI_Wait(&r, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      printf("rank %d: MPI_Wait (strided) failed\n", rank);
      return 1;
    }
    verify(&x, "strided");
    MPI_Type_free(&strided);
  }

  /* 4 */
  {
    MPI_Request r;
    Exchange x = prepare(call++, 1, 1, 1);
    post(&x, MPI_BYTE, MPI_BYTE, &r);
    int done = 0;
    const double start = MPI_Wtime();
    while (!done) {
      if (MPI_Test(&r, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        printf("rank %d: MPI_Test failed\n", rank);
        return 1;
      }
      if (MPI_Wtime() - start > 60) {
        printf("rank %d: in place: WRONG: not complete after 60 s\n", rank);
        return 1;
      }
    }
    verify(&x, "in place");
  }

  /* 5 */
  {
    MPI_Request r[2];
    Exchange x[2];
    for (int k = 0; k < 2; ++k, ++call) {
      x[k] = prepare(call, 1, 1, 0);
      post(&x[k], MPI_BYTE, MPI_BYTE, &r[k]);
    }
    Exchange b = prepare(call++, 1, 1, 0);
    if (MPI_Alltoallv(b.send, b.scounts, b.sdispls, MPI_BYTE, b.recv, b.rcounts, b.rdispls, MPI_BYTE,
                      MPI_COMM_WORLD) != MPI_SUCCESS) {
      printf("rank %d: the blocking MPI_Alltoallv between outstanding calls failed\n", rank);
      return 1;
    }
    verify(&b, "blocking between outstanding");
    for (int k = 0; k < 2; ++k) {
      int index = MPI_UNDEFINED;
      if (MPI_Waitany(2, r, &index, MPI_STATUS_IGNORE) != MPI_SUCCESS || index < 0 || index > 1) {
        printf("rank %d: MPI_Waitany failed\n", rank);
        return 1;
      }
      verify(&x[index], "Waitany");
    }
  }

  /* 6 */
  if (mismatch) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Request r;
    Exchange bad = prepare(call++, 1, 1, 0);
    if (rank == size - 1) ++bad.scounts[0];  /* the gap after the block is there to be read */
    post(&bad, MPI_BYTE, MPI_BYTE, &r);
    const int rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
    int error_class = MPI_SUCCESS;
    MPI_Error_class(rc, &error_class);
    printf("rank %d: mismatch: error class %d (MPI_ERR_COUNT is %d)\n", rank, error_class, MPI_ERR_COUNT);
    if (error_class != MPI_ERR_COUNT) {
      printf("rank %d: mismatch: WRONG error class\n", rank);
      return 1;
    }
    free(bad.send);
    free(bad.recv);
    Exchange good = prepare(call++, 1, 1, 0);
    post(&good, MPI_BYTE, MPI_BYTE, &r);
    if (MPI_Wait(&r, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      printf("rank %d: MPI_Wait after the mismatch failed\n", rank);
      return 1;
    }
    verify(&good, "after the mismatch");
  }

  printf("rank %d: ialltoallvs=%d\n", rank, ialltoallvs);
  printf("rank %d: ALL OK\n", rank);
  MPI_Finalize();
  return 0;
}
