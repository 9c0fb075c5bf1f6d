/* An unmodified MPI program: MPI_Alltoallw with a datatype of its own for every pair on each side
 * (MPI_INT, a contiguous, a strided vector, a subarray window, an int resized to leave a gap),
 * byte displacements with the blocks out of order and gaps between them, a quarter of the pairs
 * empty; not in place, in place, and with contiguous types only. Then once with a darray (a type
 * the shim cannot flatten) on rank 0 only. Every byte of every receive buffer is checked, those a
 * type skips or a gap leaves included, against MPI_Unpack of the expected values by the same
 * types. Knows nothing of ohio.
 *
 * usage: alltoallw_check [iterations] [mismatch]   (default 10)
 * With "mismatch", one call has rank 0 send rank 1 one int more than rank 1 expects, under
 * MPI_ERRORS_RETURN: every rank prints the error class it got, and a checked call follows.
 * Prints "rank R: ALL OK" per rank on success; exits non-zero on the first wrong byte. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { KIND_INT, KIND_CONTIG, KIND_VECTOR, KIND_SUBARRAY, KIND_RESIZED, KINDS, KIND_DARRAY = KINDS };
/* Ints per element of each kind: every pair carries a multiple of 6 ints. */
static const int kIntsPer[] = {1, 6, 6, 6, 1, 6};
static MPI_Datatype types[KINDS + 1];

static void make_types(void) {
  types[KIND_INT] = MPI_INT;
  MPI_Type_contiguous(6, MPI_INT, &types[KIND_CONTIG]);
  MPI_Type_vector(3, 2, 3, MPI_INT, &types[KIND_VECTOR]);
  int sizes[2] = {4, 5}, subsizes[2] = {2, 3}, starts[2] = {1, 1};
  MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &types[KIND_SUBARRAY]);
  MPI_Type_create_resized(MPI_INT, 0, 3 * (MPI_Aint)sizeof(int), &types[KIND_RESIZED]);
  int gsizes[1] = {6}, distribs[1] = {MPI_DISTRIBUTE_BLOCK}, dargs[1] = {MPI_DISTRIBUTE_DFLT_DARG}, psizes[1] = {1};
  MPI_Type_create_darray(1, 0, 1, gsizes, distribs, dargs, psizes, MPI_ORDER_C, MPI_INT, &types[KIND_DARRAY]);
  for (int k = KIND_CONTIG; k <= KIND_DARRAY; ++k) MPI_Type_commit(&types[k]);
}

static int value(int src, int dst, int k, int call) { return src * 1000000 + dst * 10000 + k * 7 + call; }

/* Ints rank a and rank b exchange in each direction in `call`: symmetric, so that in place works;
 * a quarter of the pairs are empty, some blocks are a few KiB. */
static int pair_ints(int a, int b, int call) {
  const int lo = a < b ? a : b, hi = a < b ? b : a;
  const int units = (lo * 7 + hi * 3 + call) % 4;
  return 6 * units * (1 + (call % 3) * 50);
}

/* The kind rank `me` uses for its block with `peer`; contiguous_only picks MPI_INT or the
 * contiguous type (the shim then uses the buffers where they lie). */
static int kind_of(int me, int peer, int call, int contiguous_only) {
  const int k = (me + 2 * peer + call) % KINDS;
  return contiguous_only ? (k % 2 ? KIND_CONTIG : KIND_INT) : k;
}

/* One side of a call: a type, count and byte displacement per rank, blocks laid out from the
 * last rank to the first with a 12-byte gap before each. */
struct side {
  int* counts;
  int* displs;
  MPI_Datatype* types;
  int* kinds;
  size_t bytes;
};

static void lay_out(struct side* s, int size, int me, int call, int kind_salt, int contiguous_only,
                    int darray_peer) {
  s->counts = malloc(sizeof(int) * size);
  s->displs = malloc(sizeof(int) * size);
  s->types = malloc(sizeof(MPI_Datatype) * size);
  s->kinds = malloc(sizeof(int) * size);
  size_t at = 0;
  for (int j = size - 1; j >= 0; --j) {
    const int kind = j == darray_peer ? KIND_DARRAY : kind_of(me, j, call + kind_salt, contiguous_only);
    MPI_Aint lb, extent;
    MPI_Type_get_extent(types[kind], &lb, &extent);
    s->kinds[j] = kind;
    s->types[j] = types[kind];
    s->counts[j] = pair_ints(me, j, call) / kIntsPer[kind];
    at += 12;
    s->displs[j] = (int)at;
    at += (size_t)extent * s->counts[j];
  }
  s->bytes = at + 12;
}

static void free_side(struct side* s) {
  free(s->counts);
  free(s->displs);
  free(s->types);
  free(s->kinds);
}

/* Writes the ints src sends dst in `call` into buf at side s's block for `peer`, by its type. */
static void place(const struct side* s, int peer, int src, int dst, int call, unsigned char* buf, MPI_Comm comm) {
  const int n = s->counts[peer] * kIntsPer[s->kinds[peer]];
  if (n == 0) return;
  int* ints = malloc(sizeof(int) * n);
  for (int k = 0; k < n; ++k) ints[k] = value(src, dst, k, call);
  int packed_size = 0, position = 0;
  MPI_Pack_size(n, MPI_INT, comm, &packed_size);
  void* packed = malloc(packed_size);
  MPI_Pack(ints, n, MPI_INT, packed, packed_size, &position, comm);
  const int used = position;
  position = 0;
  MPI_Unpack(packed, used, &position, buf + s->displs[peer], s->counts[peer], s->types[peer], comm);
  free(packed);
  free(ints);
}

/* One MPI_Alltoallw: mode 0 mixed types, 1 contiguous types only, 2 in place; darray_peer >= 0
 * gives that peer's send block a darray. Returns non-zero on a wrong byte or an error. */
static int check(MPI_Comm comm, int call, int mode, int darray_peer, const char* what) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int in_place = mode == 2;
  struct side send, recv;
  lay_out(&send, size, rank, call, 0, mode == 1, darray_peer);
  /* The receive side mostly uses other kinds than the sender for the same pair. */
  lay_out(&recv, size, rank, call, 1, mode == 1, -1);
  unsigned char* sendbuf = malloc(send.bytes);
  unsigned char* recvbuf = malloc(recv.bytes);
  unsigned char* expected = malloc(recv.bytes);
  memset(sendbuf, 0xAB, send.bytes);
  memset(recvbuf, 0xEE, recv.bytes);
  for (int j = 0; j < size; ++j) {
    if (in_place) {
      place(&recv, j, rank, j, call, recvbuf, comm);
    } else {
      place(&send, j, rank, j, call, sendbuf, comm);
    }
  }
  memcpy(expected, recvbuf, recv.bytes);
  for (int i = 0; i < size; ++i) place(&recv, i, i, rank, call, expected, comm);
  int rc;
  if (in_place) {
    rc = MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, recvbuf, recv.counts, recv.displs, recv.types, comm);
  } else {
    rc = MPI_Alltoallw(sendbuf, send.counts, send.displs, send.types, recvbuf, recv.counts, recv.displs, recv.types,
                       comm);
  }
  int wrong = 0;
  if (rc != MPI_SUCCESS) {
    printf("rank %d: %s: MPI_Alltoallw returned %d\n", rank, what, rc);
    wrong = 1;
  }
  for (size_t b = 0; b < recv.bytes && !wrong; ++b) {
    if (recvbuf[b] != expected[b]) {
      printf("rank %d: %s: WRONG byte %zu of %zu: got 0x%02x want 0x%02x (call %d)\n", rank, what, b, recv.bytes,
             recvbuf[b], expected[b], call);
      wrong = 1;
    }
  }
  free(sendbuf);
  free(recvbuf);
  free(expected);
  free_side(&send);
  free_side(&recv);
  return wrong;
}

/* Rank 0 sends rank 1 one int more than rank 1 expects: every rank gets an error (through ohio:
 * MPI_ERR_COUNT) and says which; the communicator is checked usable afterwards by the caller. */
static void mismatch(MPI_Comm comm) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int* counts = calloc(size, sizeof(int));
  int* rcounts = calloc(size, sizeof(int));
  int* displs = calloc(size, sizeof(int));
  MPI_Datatype* ints = malloc(sizeof(MPI_Datatype) * size);
  for (int j = 0; j < size; ++j) {
    counts[j] = rcounts[j] = 2;
    displs[j] = j * 3 * (int)sizeof(int);
    ints[j] = MPI_INT;
  }
  if (rank == 0) counts[1] = 3;
  int send[3 * 64] = {0}, recv[3 * 64] = {0};
  const int rc = MPI_Alltoallw(send, counts, displs, ints, recv, rcounts, displs, ints, comm);
  int error_class = MPI_SUCCESS;
  MPI_Error_class(rc, &error_class);
  printf("rank %d: mismatch: error class %s\n", rank,
         error_class == MPI_ERR_COUNT ? "MPI_ERR_COUNT" : error_class == MPI_SUCCESS ? "MPI_SUCCESS" : "other");
  free(counts);
  free(rcounts);
  free(displs);
  free(ints);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int iterations = argc > 1 ? atoi(argv[1]) : 10;
  const int with_mismatch = argc > 2 && strcmp(argv[2], "mismatch") == 0;
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  make_types();
  static const char* const kModes[] = {"mixed types", "contiguous types", "in place"};
  int call = 0;
  for (int it = 0; it < iterations; ++it) {
    for (int mode = 0; mode < 3; ++mode) {
      if (check(MPI_COMM_WORLD, call++, mode, -1, kModes[mode])) MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  /* Only rank 0 has a type without a layout: every rank must still take the same path. */
  if (check(MPI_COMM_WORLD, call++, 0, rank == 0 && size > 1 ? 1 : -1, "darray on rank 0")) {
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (with_mismatch && size > 1) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    mismatch(MPI_COMM_WORLD);
    if (check(MPI_COMM_WORLD, call++, 0, -1, "after the mismatch")) MPI_Abort(MPI_COMM_WORLD, 1);
  }
  printf("rank %d: ALL OK\n", rank);
  MPI_Finalize();
  return 0;
}
