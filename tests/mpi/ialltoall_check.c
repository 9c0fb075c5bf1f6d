/* An unmodified MPI program: MPI_Ialltoall completed every way MPI allows, beside the
 * library's own requests. Knows nothing of ohio.
 *   1. Ialltoall + Irecv + Isend (a ring), a computation, then one MPI_Waitall of all three.
 *   2. The same three completed one by one with MPI_Testany.
 *   3. Three Ialltoalls outstanding on one communicator with a blocking MPI_Alltoall between
 *      them, completed in another order by MPI_Wait.
 *   4. MPI_Test and MPI_Request_get_status polled until complete; in place.
 *   5. MPI_Waitsome and MPI_Testsome over two Ialltoalls and an Irecv.
 *   6. A strided receive datatype (every other byte): received bytes checked, and every byte
 *      between them untouched.
 *   7. (strict only) MPI_Request_free and MPI_Cancel of an Ialltoall's request are erroneous
 *      (MPI 3.1 and 4.0, 5.12): with MPI_ERRORS_RETURN each must return an error of class
 *      MPI_ERR_REQUEST and leave the request to be completed by MPI_Wait.
 * Every received byte is checked; every poll loop gives up after 60 s.
 *
 * usage: ialltoall_check bytes iterations compute_us [strict]
 * Prints "rank R: ialltoalls=N" and "rank R: ALL OK" on success; exits non-zero on the first
 * wrong byte. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/mpi/ring_message.h"

static int rank, size;
static long bytes;
static int ialltoalls;

static unsigned char pattern(int src, int dst, long i, int call) {
  return (unsigned char)(src * 131 + dst * 31 + i * 7 + call * 13 + (i >> 8));
}

typedef struct {
  unsigned char *send, *recv;
  int call;
} Exchange;

static Exchange prepare(int call, int in_place) {
  Exchange x;
  x.call = call;
  x.send = malloc((size_t)bytes * size);
  x.recv = in_place ? x.send : malloc((size_t)bytes * size);
  for (int d = 0; d < size; ++d)
    for (long i = 0; i < bytes; ++i) x.send[d * bytes + i] = pattern(rank, d, i, call);
  if (!in_place) memset(x.recv, 0xEE, (size_t)bytes * size);
  return x;
}

static void post(Exchange* x, MPI_Request* request) {
  const void* send = x->recv == x->send ? MPI_IN_PLACE : x->send;
  if (MPI_Ialltoall(send, (int)bytes, MPI_BYTE, x->recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD, request) != MPI_SUCCESS) {
    printf("rank %d: MPI_Ialltoall failed\n", rank);
    exit(1);
  }
  ++ialltoalls;
}

static void verify(Exchange* x, const char* what) {
  for (int s = 0; s < size; ++s)
    for (long i = 0; i < bytes; ++i)
      if (x->recv[s * bytes + i] != pattern(s, rank, i, x->call)) {
        printf("rank %d: %s: WRONG byte %ld from %d (call %d): got %u\n", rank, what, i, s, x->call,
               x->recv[s * bytes + i]);
        exit(1);
      }
  if (x->recv != x->send) free(x->recv);
  free(x->send);
}

static void compute(double us) {
  const double end = MPI_Wtime() + us * 1e-6;
  volatile double x = 1.0;
  while (MPI_Wtime() < end) x = x * 1.0000001 + 1e-9;
}

static void give_up_after(double start, const char* what) {
  if (MPI_Wtime() - start > 60) {
    printf("rank %d: %s: WRONG: not complete after 60 s\n", rank, what);
    exit(1);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 4) {
    if (rank == 0) printf("usage: ialltoall_check bytes iterations compute_us [strict]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  bytes = atol(argv[1]);
  const int iterations = atoi(argv[2]);
  const double compute_us = atof(argv[3]);
  const int strict = argc > 4 && strcmp(argv[4], "strict") == 0;
  int call = 0;

  /* 1 */
  for (int it = 0; it < iterations; ++it, ++call) {
    MPI_Request r[3];
    Exchange x = prepare(call, 0);
    Ring g;
    post(&x, &r[0]);
    ring_post(&g, call, &r[1], &r[2]);
    compute(compute_us);
    MPI_Status statuses[3];
    if (MPI_Waitall(3, r, statuses) != MPI_SUCCESS) {
      printf("rank %d: MPI_Waitall failed\n", rank);
      return 1;
    }
    verify(&x, "Waitall");
    ring_verify(&g, call, "Waitall");
  }

  /* 2 */
  {
    MPI_Request r[3];
    Exchange x = prepare(call, 0);
    Ring g;
    ring_post(&g, call, &r[0], &r[2]);
    post(&x, &r[1]);
    int seen[3] = {0, 0, 0}, done = 0;
    const double start = MPI_Wtime();
    while (done < 3) {
      int index = -1, flag = 0;
      MPI_Testany(3, r, &index, &flag, MPI_STATUS_IGNORE);
      if (flag && index != MPI_UNDEFINED) {
        if (seen[index]++) {
          printf("rank %d: Testany: WRONG: request %d completed twice\n", rank, index);
          return 1;
        }
        ++done;
      } else if (flag) {
        printf("rank %d: Testany: WRONG: no active request left with %d of 3 complete\n", rank, done);
        return 1;
      }
      give_up_after(start, "Testany");
      usleep(50);
    }
    verify(&x, "Testany");
    ring_verify(&g, call, "Testany");
    ++call;
  }

  /* 3 */
  {
    MPI_Request r[3];
    Exchange x[3];
    for (int k = 0; k < 3; ++k) {
      x[k] = prepare(call + k, 0);
      post(&x[k], &r[k]);
      if (k == 1) {
        Exchange b = prepare(call + 100, 0);
        if (MPI_Alltoall(b.send, (int)bytes, MPI_BYTE, b.recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD) != MPI_SUCCESS) {
          printf("rank %d: MPI_Alltoall between Ialltoalls failed\n", rank);
          return 1;
        }
        verify(&b, "blocking Alltoall between Ialltoalls");
      }
    }
    compute(compute_us);
    const int order[3] = {2, 0, 1};
    for (int k = 0; k < 3; ++k) {
      MPI_Wait(&r[order[k]], MPI_STATUS_IGNORE);
      if (r[order[k]] != MPI_REQUEST_NULL) {
        printf("rank %d: Wait: WRONG: the request was not set to MPI_REQUEST_NULL\n", rank);
        return 1;
      }
      verify(&x[order[k]], "several outstanding");
    }
    call += 3;
  }

  /* 4 */
  {
    MPI_Request r;
    Exchange x = prepare(call, 1);
    post(&x, &r);
    int flag = 0;
    double start = MPI_Wtime();
    while (!flag) {
      MPI_Request_get_status(r, &flag, MPI_STATUS_IGNORE);
      give_up_after(start, "Request_get_status");
      if (!flag) usleep(50);
    }
    if (r == MPI_REQUEST_NULL) {
      printf("rank %d: Request_get_status: WRONG: it freed the request\n", rank);
      return 1;
    }
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    verify(&x, "Request_get_status, in place");
    ++call;
    x = prepare(call, 0);
    post(&x, &r);
    flag = 0;
    start = MPI_Wtime();
    while (!flag) {
      MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
      give_up_after(start, "Test");
      if (!flag) usleep(50);
    }
    verify(&x, "Test");
    ++call;
  }

  /* 5 */
  {
    MPI_Request r[4];
    Exchange x[2];
    Ring g;
    x[0] = prepare(call, 0);
    post(&x[0], &r[0]);
    ring_post(&g, call, &r[1], &r[3]);
    x[1] = prepare(call + 1, 0);
    post(&x[1], &r[2]);
    int done = 0, use_test = 0;
    const double start = MPI_Wtime();
    while (done < 4) {
      int outcount = 0, indices[4];
      MPI_Status statuses[4];
      if (use_test ^= 1) {
        MPI_Testsome(4, r, &outcount, indices, statuses);
      } else {
        MPI_Waitsome(4, r, &outcount, indices, statuses);
      }
      if (outcount == MPI_UNDEFINED) {
        printf("rank %d: Waitsome: WRONG: no active request left with %d of 4 complete\n", rank, done);
        return 1;
      }
      done += outcount;
      give_up_after(start, "Waitsome");
    }
    verify(&x[0], "Waitsome");
    verify(&x[1], "Waitsome");
    ring_verify(&g, call, "Waitsome");
    call += 2;
  }

  /* 6 */
  {
    MPI_Datatype every_other, strided;
    MPI_Type_vector((int)bytes, 1, 2, MPI_BYTE, &every_other);
    MPI_Type_create_resized(every_other, 0, 2 * bytes, &strided);
    MPI_Type_commit(&strided);
    Exchange x = prepare(call, 0);
    unsigned char* spread = malloc((size_t)bytes * size * 2);
    memset(spread, 0xEE, (size_t)bytes * size * 2);
    MPI_Request r;
    if (MPI_Ialltoall(x.send, (int)bytes, MPI_BYTE, spread, 1, strided, MPI_COMM_WORLD, &r) != MPI_SUCCESS) {
      printf("rank %d: MPI_Ialltoall with a strided type failed\n", rank);
      return 1;
    }
    ++ialltoalls;
    compute(compute_us);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    for (int s = 0; s < size; ++s)
      for (long i = 0; i < 2 * bytes; ++i) {
        const unsigned char want = i % 2 ? 0xEE : pattern(s, rank, i / 2, call);
        if (spread[s * 2 * bytes + i] != want) {
          printf("rank %d: strided: WRONG byte %ld of rank %d's block: got %u want %u\n", rank, i, s,
                 spread[s * 2 * bytes + i], want);
          return 1;
        }
      }
    free(spread);
    free(x.recv);
    free(x.send);
    MPI_Type_free(&strided);
    MPI_Type_free(&every_other);
    ++call;
  }

  /* 7 */
  if (strict) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Request r;
    Exchange x = prepare(call, 0);
    post(&x, &r);
    MPI_Request kept = r;
    const char* names[2] = {"MPI_Request_free", "MPI_Cancel"};
    for (int k = 0; k < 2; ++k) {
      const int rc = k == 0 ? MPI_Request_free(&r) : MPI_Cancel(&r);
      int error_class = MPI_SUCCESS;
      MPI_Error_class(rc, &error_class);
      if (error_class != MPI_ERR_REQUEST || r != kept) {
        printf("rank %d: %s of an Ialltoall: WRONG: error class %d (want %d), request %s\n", rank, names[k],
               error_class, MPI_ERR_REQUEST, r == kept ? "kept" : "changed");
        return 1;
      }
    }
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    verify(&x, "after Request_free and Cancel were refused");
    ++call;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  }

  printf("rank %d: ialltoalls=%d\n", rank, ialltoalls);
  printf("rank %d: ALL OK\n", rank);
  MPI_Finalize();
  return 0;
}
