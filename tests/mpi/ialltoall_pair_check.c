/* An unmodified MPI program: MPI_Ialltoall of (double, int) pairs, 16 bytes apart (4 bytes of
 * padding after each int), with a datatype ohio has no layout for (the pair type
 * MPI_DOUBLE_INT) on some ranks. The other ranks describe the same memory with a struct type
 * of the same signature (double, int), resized to the pair's 16 bytes, which ohio has a layout
 * for. Knows nothing of ohio.
 *   1. One Ialltoall completed by MPI_Wait.
 *   2. Two Ialltoalls outstanding, completed by MPI_Waitall in reverse order.
 *   3. One Ialltoall in place.
 *   4. One Ialltoallv, counts differing per pair (1 to 7 pairs), blocks in reverse rank order.
 * Every received pair is checked, and every padding byte of the receive buffer left untouched.
 * The Waits run under MPI_ERRORS_RETURN: a failed call is reported, not aborted on.
 *
 * usage: ialltoall_pair_check elements_per_rank all|rank0
 *   all: every rank uses MPI_DOUBLE_INT; rank0: rank 0 alone does.
 * Prints "rank R: ialltoalls=N ialltoallvs=M" and "rank R: ALL OK" on success; exits non-zero on the first
 * wrong pair or failed call. */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  double value;
  int index;
} Pair;

static int rank, size, elements, ialltoalls, ialltoallvs;
static MPI_Datatype type;

static Pair expected(int src, int dst, int i, int call) {
  Pair p;
  memset(&p, 0xEE, sizeof p);
  p.value = src * 1000.0 + dst + i * 0.5 + call * 0.25;
  p.index = src * 7919 + dst * 104729 + i + call * 31;
  return p;
}

static Pair* filled(int call) {
  Pair* buffer = malloc(sizeof(Pair) * elements * size);
  memset(buffer, 0xEE, sizeof(Pair) * elements * size);
  for (int d = 0; d < size; ++d)
    for (int i = 0; i < elements; ++i) {
      const Pair p = expected(rank, d, i, call);
      buffer[d * elements + i].value = p.value;
      buffer[d * elements + i].index = p.index;
    }
  return buffer;
}

static Pair* empty(void) {
  Pair* buffer = malloc(sizeof(Pair) * elements * size);
  memset(buffer, 0xEE, sizeof(Pair) * elements * size);
  return buffer;
}

static void start(const Pair* send, Pair* recv, MPI_Request* request) {
  const void* from = send == recv ? MPI_IN_PLACE : (const void*)send;
  if (MPI_Ialltoall(from, elements, type, recv, elements, type, MPI_COMM_WORLD, request) != MPI_SUCCESS) {
    printf("rank %d: MPI_Ialltoall failed\n", rank);
    exit(1);
  }
  ++ialltoalls;
}

static void complete(int n, MPI_Request* requests) {
  MPI_Status statuses[2];
  const int rc = MPI_Waitall(n, requests, statuses);
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(rc, text, &length);
    printf("rank %d: MPI_Waitall failed: %s\n", rank, text);
    exit(1);
  }
}

/* The pairs rank src sends rank dst in part 4, and where block `peer` lies: in reverse order. */
static int vector_count(int src, int dst) { return 1 + (src * 3 + dst * 5) % 7; }

static void vector_places(int counts[], int displs[], int sending, int* total) {
  *total = 0;
  for (int p = size - 1; p >= 0; --p) {
    counts[p] = sending ? vector_count(rank, p) : vector_count(p, rank);
    displs[p] = *total;
    *total += counts[p];
  }
}

static void check_pair(const Pair* got, int s, int i, int call, const char* what) {
  unsigned char padding[sizeof(Pair)];
  memset(padding, 0xEE, sizeof padding);
  const size_t data = offsetof(Pair, index) + sizeof(int);
  const Pair want = expected(s, rank, i, call);
  if (got->value != want.value || got->index != want.index) {
    printf("rank %d: WRONG %s: from rank %d element %d: (%g, %d), expected (%g, %d)\n", rank, what, s, i, got->value,
           got->index, want.value, want.index);
    exit(1);
  }
  /* In place, the padding is the program's own: whatever it held, it keeps. */
  if (memcmp((const unsigned char*)got + data, padding, sizeof(Pair) - data) != 0) {
    printf("rank %d: WRONG %s: the padding after element %d from rank %d was written\n", rank, what, i, s);
    exit(1);
  }
}

static void verify(const Pair* recv, int call, const char* what) {
  for (int s = 0; s < size; ++s)
    for (int i = 0; i < elements; ++i) check_pair(&recv[s * elements + i], s, i, call, what);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (argc != 3) {
    if (rank == 0) fprintf(stderr, "usage: ialltoall_pair_check elements_per_rank all|rank0\n");
    MPI_Finalize();
    return 2;
  }
  elements = atoi(argv[1]);
  const int pair_type_here = strcmp(argv[2], "all") == 0 || rank == 0;
  MPI_Datatype structured = MPI_DATATYPE_NULL;
  if (pair_type_here) {
    type = MPI_DOUBLE_INT;
  } else {
    const int lengths[2] = {1, 1};
    const MPI_Aint displacements[2] = {offsetof(Pair, value), offsetof(Pair, index)};
    const MPI_Datatype types[2] = {MPI_DOUBLE, MPI_INT};
    MPI_Type_create_struct(2, lengths, displacements, types, &structured);
    MPI_Type_create_resized(structured, 0, sizeof(Pair), &type);
    MPI_Type_commit(&type);
  }

  /* 1. */
  Pair* send = filled(1);
  Pair* recv = empty();
  MPI_Request one;
  start(send, recv, &one);
  complete(1, &one);
  verify(recv, 1, "a single call");
  free(send);
  free(recv);

  /* 2. */
  Pair *send2 = filled(2), *recv2 = empty(), *send3 = filled(3), *recv3 = empty();
  MPI_Request two[2];
  start(send2, recv2, &two[1]);
  start(send3, recv3, &two[0]);
  complete(2, two);
  verify(recv2, 2, "the first of two outstanding");
  verify(recv3, 3, "the second of two outstanding");
  free(send2);
  free(recv2);
  free(send3);
  free(recv3);

  /* 3. */
  Pair* both = filled(4);
  start(both, both, &one);
  complete(1, &one);
  verify(both, 4, "in place");
  free(both);

  /* 4. */
  int *send_counts = malloc(sizeof(int) * size), *send_displs = malloc(sizeof(int) * size);
  int *recv_counts = malloc(sizeof(int) * size), *recv_displs = malloc(sizeof(int) * size);
  int send_total = 0, recv_total = 0;
  vector_places(send_counts, send_displs, 1, &send_total);
  vector_places(recv_counts, recv_displs, 0, &recv_total);
  Pair* vsend = malloc(sizeof(Pair) * send_total);
  Pair* vrecv = malloc(sizeof(Pair) * recv_total);
  memset(vsend, 0xEE, sizeof(Pair) * send_total);
  memset(vrecv, 0xEE, sizeof(Pair) * recv_total);
  for (int d = 0; d < size; ++d)
    for (int i = 0; i < send_counts[d]; ++i) {
      const Pair p = expected(rank, d, i, 5);
      vsend[send_displs[d] + i].value = p.value;
      vsend[send_displs[d] + i].index = p.index;
    }
  if (MPI_Ialltoallv(vsend, send_counts, send_displs, type, vrecv, recv_counts, recv_displs, type, MPI_COMM_WORLD,
                     &one) != MPI_SUCCESS) {
    printf("rank %d: MPI_Ialltoallv failed\n", rank);
    exit(1);
  }
  ++ialltoallvs;
  complete(1, &one);
  for (int s = 0; s < size; ++s)
    for (int i = 0; i < recv_counts[s]; ++i) check_pair(&vrecv[recv_displs[s] + i], s, i, 5, "an Ialltoallv");
  free(vsend);
  free(vrecv);
  free(send_counts);
  free(send_displs);
  free(recv_counts);
  free(recv_displs);

  if (structured != MPI_DATATYPE_NULL) {
    MPI_Type_free(&type);
    MPI_Type_free(&structured);
  }
  printf("rank %d: ialltoalls=%d ialltoallvs=%d\n", rank, ialltoalls, ialltoallvs);
  printf("rank %d: ALL OK\n", rank);
  MPI_Finalize();
  return 0;
}
