/* An unmodified MPI program: MPI_Alltoall on MPI_COMM_WORLD, a dup and a split, in place and
 * not, 1 byte to 1 MiB per rank, as bytes and as ints, interleaved with other collectives; then
 * with derived datatypes (contiguous, a strided vector on either side, subarrays, in place), and
 * once with a pair type on rank 0 only; then MPI_Alltoallv with counts drawn per pair (a quarter
 * zero), blocks out of order with gaps, as bytes, as ints, in place, and with a strided type on
 * either side, and twice with every count 1200 times as large (pairs of up to 3.4 MB: more than
 * one round of ohiod's default buffers across nodes). Every received byte, and every byte between the ones a type selects or a gap
 * leaves, is checked. Knows nothing of ohio.
 *
 * usage: alltoall_check [max_bytes] [iterations] [passes]   (defaults 1 MiB, 20, 1)
 * With CHECK_PAUSE_FILE=F and several passes, rank 0 creates F.ready after each pass and waits
 * (at most 60 s) for F.go before the next, so a test can change the world in between.
 * Prints "rank R: ALL OK" per rank on success; exits non-zero on the first wrong byte. */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned char pattern(int src, int dst, long i, int it) {
  return (unsigned char)(src * 131 + dst * 31 + i * 7 + it * 13 + (i >> 8));
}

static int check(MPI_Comm comm, long bytes, int it, int in_place, const char* what) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  unsigned char* send = malloc((size_t)bytes * size + 1);
  unsigned char* recv = malloc((size_t)bytes * size + 1);
  for (int d = 0; d < size; ++d)
    for (long i = 0; i < bytes; ++i) send[d * bytes + i] = pattern(rank, d, i, it);
  memset(recv, 0xEE, (size_t)bytes * size);
  int rc;
  if (in_place) {
    memcpy(recv, send, (size_t)bytes * size);
    rc = MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, (int)bytes, MPI_BYTE, comm);
  } else if (bytes % 4 == 0) {
    rc = MPI_Alltoall(send, (int)(bytes / 4), MPI_INT, recv, (int)(bytes / 4), MPI_INT, comm);
  } else {
    rc = MPI_Alltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, comm);
  }
  if (rc != MPI_SUCCESS) {
    printf("rank %d: %s: MPI_Alltoall returned %d\n", rank, what, rc);
    return 1;
  }
  for (int s = 0; s < size; ++s)
    for (long i = 0; i < bytes; ++i)
      if (recv[s * bytes + i] != pattern(s, rank, i, it)) {
        printf("rank %d: %s: WRONG byte %ld from %d (bytes %ld, iteration %d)\n", rank, what, i, s, bytes, it);
        return 1;
      }
  free(send);
  free(recv);
  return 0;
}

static int fail(int rank, const char* what, long at, int got, int want) {
  printf("rank %d: %s: WRONG int %ld: got %d want %d\n", rank, what, at, got, want);
  return 1;
}

/* Distinct for every (src, dst, k) of fewer than 31 ranks and k below a million: a piece landing
 * in another pair's block shows, even for the large alltoallv's. */
static int value(int src, int dst, int k) { return (src * 131 + dst * 31 + 1) * 1000003 + k; }

/* Derived datatypes on both sides of MPI_Alltoall. N ints go to each rank; a strided vector
 * takes every other int of 2N, a subarray a 3x4 window of a 5x6 matrix. Bytes a type skips must
 * come back untouched. */
static int check_types(MPI_Comm comm) {
  enum { N = 6, ROWS = 5, COLS = 6, SUB_R = 3, SUB_C = 4, AT_R = 1, AT_C = 2 };
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Datatype quad, strided, every_other, window;
  MPI_Type_contiguous(4, MPI_BYTE, &quad);
  MPI_Type_vector(N, 1, 2, MPI_INT, &strided);
  MPI_Type_create_resized(strided, 0, 2 * N * (MPI_Aint)sizeof(int), &every_other);
  int sizes[2] = {ROWS, COLS}, subsizes[2] = {SUB_R, SUB_C}, starts[2] = {AT_R, AT_C};
  MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &window);
  MPI_Type_commit(&quad);
  MPI_Type_commit(&every_other);
  MPI_Type_commit(&window);
  int* wide = malloc(sizeof(int) * 2 * N * size);
  int* tight = malloc(sizeof(int) * N * size);
  int* matrix_in = malloc(sizeof(int) * ROWS * COLS * size);
  int* matrix_out = malloc(sizeof(int) * ROWS * COLS * size);
  int bad = 0;

  /* A contiguous type: 4 bytes per element. */
  for (int d = 0; d < size; ++d)
    for (int k = 0; k < N; ++k) tight[d * N + k] = value(rank, d, k);
  for (long i = 0; i < 2L * N * size; ++i) wide[i] = -7;
  MPI_Alltoall(tight, N, quad, wide, N, quad, comm);
  for (int s = 0; s < size && !bad; ++s)
    for (int k = 0; k < N && !bad; ++k)
      if (wide[s * N + k] != value(s, rank, k)) bad = fail(rank, "contiguous", s * N + k, wide[s * N + k], value(s, rank, k));

  /* Send strided, receive contiguous. */
  for (int d = 0; d < size; ++d)
    for (int k = 0; k < 2 * N; ++k) wide[d * 2 * N + k] = k % 2 ? -1 : value(rank, d, k / 2);
  for (long i = 0; i < (long)N * size; ++i) tight[i] = -7;
  MPI_Alltoall(wide, 1, every_other, tight, N, MPI_INT, comm);
  for (int s = 0; s < size && !bad; ++s)
    for (int k = 0; k < N && !bad; ++k)
      if (tight[s * N + k] != value(s, rank, k)) bad = fail(rank, "vector send", s * N + k, tight[s * N + k], value(s, rank, k));

  /* Send contiguous, receive strided: the odd ints stay as they were. */
  for (int d = 0; d < size; ++d)
    for (int k = 0; k < N; ++k) tight[d * N + k] = value(rank, d, k);
  for (long i = 0; i < 2L * N * size; ++i) wide[i] = -7;
  MPI_Alltoall(tight, N, MPI_INT, wide, 1, every_other, comm);
  for (int s = 0; s < size && !bad; ++s)
    for (int k = 0; k < 2 * N && !bad; ++k) {
      const int want = k % 2 ? -7 : value(s, rank, k / 2);
      if (wide[s * 2 * N + k] != want) bad = fail(rank, "vector receive", s * 2 * N + k, wide[s * 2 * N + k], want);
    }

  /* A subarray on both sides: only the window moves, the rest of each matrix stays. */
  for (int d = 0; d < size; ++d)
    for (int r = 0; r < ROWS; ++r)
      for (int c = 0; c < COLS; ++c) {
        const int in = r >= AT_R && r < AT_R + SUB_R && c >= AT_C && c < AT_C + SUB_C;
        matrix_in[(d * ROWS + r) * COLS + c] = in ? value(rank, d, (r - AT_R) * SUB_C + (c - AT_C)) : -1;
      }
  for (long i = 0; i < (long)ROWS * COLS * size; ++i) matrix_out[i] = -7;
  MPI_Alltoall(matrix_in, 1, window, matrix_out, 1, window, comm);
  for (int s = 0; s < size && !bad; ++s)
    for (int r = 0; r < ROWS && !bad; ++r)
      for (int c = 0; c < COLS && !bad; ++c) {
        const int in = r >= AT_R && r < AT_R + SUB_R && c >= AT_C && c < AT_C + SUB_C;
        const int want = in ? value(s, rank, (r - AT_R) * SUB_C + (c - AT_C)) : -7;
        const long at = (s * ROWS + r) * (long)COLS + c;
        if (matrix_out[at] != want) bad = fail(rank, "subarray", at, matrix_out[at], want);
      }

  /* In place with the strided type. */
  for (int d = 0; d < size; ++d)
    for (int k = 0; k < 2 * N; ++k) wide[d * 2 * N + k] = k % 2 ? -3 : value(rank, d, k / 2);
  MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, wide, 1, every_other, comm);
  for (int s = 0; s < size && !bad; ++s)
    for (int k = 0; k < 2 * N && !bad; ++k) {
      const int want = k % 2 ? -3 : value(s, rank, k / 2);
      if (wide[s * 2 * N + k] != want) bad = fail(rank, "vector in place", s * 2 * N + k, wide[s * 2 * N + k], want);
    }

  MPI_Type_free(&quad);
  MPI_Type_free(&strided);
  MPI_Type_free(&every_other);
  MPI_Type_free(&window);
  free(wide);
  free(tight);
  free(matrix_in);
  free(matrix_out);
  return bad;
}

/* Rank 0 sends MPI_SHORT_INT (a pair type with a hole after the short, which libohio does not
 * serve); the others send and everyone receives the same signature built as a struct, which it
 * does. Only rank 0 cannot take ohio: every rank must hand the call back together. */
static int check_pair_type_on_one_rank(MPI_Comm comm) {
  typedef struct { short s; int i; } short_int;
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int lengths[2] = {1, 1};
  MPI_Aint displs[2] = {offsetof(short_int, s), offsetof(short_int, i)};
  MPI_Datatype types[2] = {MPI_SHORT, MPI_INT}, as_struct, pair;
  MPI_Type_create_struct(2, lengths, displs, types, &as_struct);
  MPI_Type_create_resized(as_struct, 0, sizeof(short_int), &pair);
  MPI_Type_commit(&pair);
  short_int* send = malloc(sizeof(short_int) * size);
  short_int* recv = malloc(sizeof(short_int) * size);
  for (int d = 0; d < size; ++d) {
    send[d].s = (short)(rank * 10 + d);
    send[d].i = value(rank, d, 0);
  }
  memset(recv, 0, sizeof(short_int) * size);
  MPI_Alltoall(send, 1, rank == 0 ? MPI_SHORT_INT : pair, recv, 1, pair, comm);
  int bad = 0;
  for (int s = 0; s < size && !bad; ++s)
    if (recv[s].s != (short)(s * 10 + rank) || recv[s].i != value(s, rank, 0)) bad = fail(rank, "pair type", s, recv[s].i, value(s, rank, 0));
  MPI_Type_free(&as_struct);
  MPI_Type_free(&pair);
  free(send);
  free(recv);
  return bad;
}

/* Ints rank src sends rank dst in call `it` of check_alltoallv: a quarter of the pairs send
 * nothing. Symmetric in place (MPI requires it there). */
static int v_count(int src, int dst, int it, int symmetric) {
  if (symmetric && src > dst) { int t = src; src = dst; dst = t; }
  unsigned h = (unsigned)(src * 2654435761u) ^ (unsigned)(dst * 40503u) ^ (unsigned)(it * 97u);
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  return h % 4 == 0 ? 0 : (int)(h % 700);
}

/* MPI_Alltoallv of ints: mode 0 as MPI_INT, 1 as bytes, 2 in place, 3 a strided type (every
 * other int) on the send side, 4 on the receive side; every count times `scale`. Blocks lie in
 * reverse rank order with a gap of 3 elements after each; gaps and the holes of the strided
 * type must stay untouched. */
static int check_alltoallv(MPI_Comm comm, int it, int mode, int scale) {
  enum { GAP = 3, HOLE = -7 };
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int in_place = mode == 2;
  int *scount = malloc(sizeof(int) * size), *sdispl = malloc(sizeof(int) * size);
  int *rcount = malloc(sizeof(int) * size), *rdispl = malloc(sizeof(int) * size);
  int sn = GAP, rn = GAP;
  for (int k = 0; k < size; ++k) {
    int j = size - 1 - k;
    scount[j] = v_count(rank, j, it, in_place) * scale;
    rcount[j] = v_count(j, rank, it, in_place) * scale;
    sdispl[j] = sn;
    sn += scount[j] + GAP;
    rdispl[j] = rn;
    rn += rcount[j] + GAP;
  }
  /* A strided element is two ints wide; the buffers are sized for that. */
  int* send = malloc(sizeof(int) * 2 * (size_t)sn);
  int* recv = malloc(sizeof(int) * 2 * (size_t)rn);
  for (int i = 0; i < 2 * sn; ++i) send[i] = HOLE;
  for (int i = 0; i < 2 * rn; ++i) recv[i] = HOLE;
  int* fill = in_place ? recv : send;
  const int* fill_displ = in_place ? rdispl : sdispl;
  const int stride = mode == 3 ? 2 : 1;
  for (int j = 0; j < size; ++j)
    for (int k = 0; k < scount[j]; ++k) fill[(fill_displ[j] + k) * stride] = value(rank, j, k);
  MPI_Datatype strided;
  MPI_Datatype one_of_two;
  MPI_Type_vector(1, 1, 2, MPI_INT, &one_of_two);
  MPI_Type_create_resized(one_of_two, 0, 2 * sizeof(int), &strided);
  MPI_Type_commit(&strided);
  int rc;
  if (mode == 1) {
    for (int j = 0; j < size; ++j) {
      scount[j] *= 4; sdispl[j] *= 4; rcount[j] *= 4; rdispl[j] *= 4;
    }
    rc = MPI_Alltoallv(send, scount, sdispl, MPI_BYTE, recv, rcount, rdispl, MPI_BYTE, comm);
    for (int j = 0; j < size; ++j) {
      scount[j] /= 4; sdispl[j] /= 4; rcount[j] /= 4; rdispl[j] /= 4;
    }
  } else if (in_place) {
    rc = MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, recv, rcount, rdispl, MPI_INT, comm);
  } else {
    rc = MPI_Alltoallv(send, scount, sdispl, mode == 3 ? strided : MPI_INT, recv, rcount, rdispl,
                       mode == 4 ? strided : MPI_INT, comm);
  }
  MPI_Type_free(&strided);
  MPI_Type_free(&one_of_two);
  int bad = 0;
  if (rc != MPI_SUCCESS) {
    printf("rank %d: alltoallv mode %d: returned %d\n", rank, mode, rc);
    bad = 1;
  }
  const int rstride = mode == 4 ? 2 : 1;
  for (int i = 0; i < rn * rstride && !bad; ++i) {
    /* Which block, if any, element i / rstride belongs to. */
    int want = HOLE;
    if (i % rstride == 0) {
      int e = i / rstride;
      for (int s = 0; s < size; ++s)
        if (e >= rdispl[s] && e < rdispl[s] + rcount[s]) want = value(s, rank, e - rdispl[s]);
    }
    if (recv[i] != want) bad = fail(rank, "alltoallv", i, recv[i], want);
  }
  free(send); free(recv); free(scount); free(sdispl); free(rcount); free(rdispl);
  return bad;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  long max_bytes = argc > 1 ? atol(argv[1]) : 1 << 20;
  int iterations = argc > 2 ? atoi(argv[2]) : 20;
  int passes = argc > 3 ? atoi(argv[3]) : 1;
  const char* pause_file = getenv("CHECK_PAUSE_FILE");
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm dup, split;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &split); /* reversed order inside */
  int bad = 0;
  for (int pass = 0; pass < passes && !bad; ++pass) {
  if (pass > 0 && pause_file != NULL) {
    if (rank == 0) {
      char path[4096];
      snprintf(path, sizeof path, "%s.ready", pause_file);
      fclose(fopen(path, "w"));
      snprintf(path, sizeof path, "%s.go", pause_file);
      for (int waited = 0; access(path, F_OK) != 0 && waited < 6000; ++waited) usleep(10000);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  for (long bytes = 1; bytes <= max_bytes && !bad; bytes *= 4) {
    int n = bytes >= 65536 ? (iterations + 3) / 4 : iterations;
    for (int it = 0; it < n && !bad; ++it) {
      bad |= check(MPI_COMM_WORLD, bytes, it, it % 3 == 2, "world");
      int sum = 0, one = 1;
      MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      if (sum != size) bad = 1;
      bad |= check(dup, bytes + 3, it, 0, "dup");
      MPI_Barrier(dup);
      bad |= check(split, bytes, it, it % 2, "split");
      MPI_Bcast(&sum, 1, MPI_INT, 0, split);
    }
  }
  }
  if (!bad) bad |= check_types(MPI_COMM_WORLD);
  if (!bad) bad |= check_types(split);
  if (!bad) bad |= check_pair_type_on_one_rank(MPI_COMM_WORLD);
  if (!bad) bad |= check(MPI_COMM_WORLD, 64, 7, 0, "after the pair type");
  for (int it = 0; it < 10 && !bad; ++it) {
    bad |= check_alltoallv(MPI_COMM_WORLD, it, it % 5, 1);
    bad |= check_alltoallv(split, it, (it + 2) % 5, 1);
  }
  for (int it = 0; it < 2 && !bad; ++it) bad |= check_alltoallv(MPI_COMM_WORLD, it, 1, 1200);
  MPI_Comm_free(&split);
  MPI_Comm_free(&dup);
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!any) printf("rank %d: ALL OK\n", rank);
  fflush(stdout);
  MPI_Finalize();
  return any;
}
