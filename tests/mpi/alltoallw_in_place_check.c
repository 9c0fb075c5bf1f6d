/* An unmodified MPI program whose in-place calls pass send-side arrays MPI ignores (sendcounts,
 * sdispls, sendtypes) that point at a page nobody may read: whatever reads one element of them
 * faults. MPI_Alltoallw in place (a contiguous block type received at displacements in reverse
 * rank order), MPI_Alltoallv in place and MPI_Ialltoallv in place (counts differing per pair,
 * gaps between the blocks). Every int of the receive buffer is checked, gaps and the tail
 * included. Knows nothing of ohio.
 *
 * usage: alltoallw_in_place_check [iterations]   (default 1)
 * Prints "rank R: ALL OK" per rank on success; a line with WRONG and exit 1 on the first wrong int. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

enum { kCount = 256, kGap = 2 };

static int me, n, iteration;

static int value(int src, int dst, int k, int call) { return src * 1000003 + dst * 10007 + k * 7 + iteration * 131 + call; }

static void wrong(const char* what, int from, int k, int got, int want) {
  printf("rank %d: WRONG: %s: from rank %d int %d iteration %d: got %d want %d\n", me, what, from, k, iteration, got,
         want);
  fflush(stdout);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static void expect_ok(int rc, const char* what) {
  if (rc != MPI_SUCCESS) wrong(what, -1, -1, rc, MPI_SUCCESS);
}

/* A page mapped unreadable: where the ignored arrays point. */
static void* guard_page(void) {
  void* p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    perror("mmap");
    exit(1);
  }
  return p;
}

/* In place, counts differing per pair (the same both ways, as in place requires), kGap ints after
 * each block: what goes to rank j lies where what comes from it lands. */
static void fill_vector(int* buf, int total, int* counts, int* displs, int call) {
  for (int k = 0; k < total; ++k) buf[k] = -1;
  int at = 0;
  for (int j = 0; j < n; ++j) {
    counts[j] = kCount - (me + j) % 3;
    displs[j] = at;
    for (int k = 0; k < counts[j]; ++k) buf[at + k] = value(me, j, k, call);
    at += counts[j] + kGap;
  }
}

static void check_vector(const int* buf, int total, const int* counts, const int* displs, int call, const char* what) {
  int end = 0;
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < counts[i] + kGap; ++k) {
      const int want = k < counts[i] ? value(i, me, k, call) : -1;
      if (buf[displs[i] + k] != want) wrong(what, i, k, buf[displs[i] + k], want);
    }
    end = displs[i] + counts[i] + kGap;
  }
  for (int k = end; k < total; ++k) {
    if (buf[k] != -1) wrong(what, -1, k, buf[k], -1);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const int iterations = argc > 1 ? atoi(argv[1]) : 1;
  void* guard = guard_page();
  const int* ignored_ints = guard;
  const MPI_Datatype* ignored_types = guard;
  const int total = n * (kCount + 4);
  int* buf = malloc(sizeof(int) * (size_t)total);
  int* counts = malloc(sizeof(int) * (size_t)n);
  int* displs = malloc(sizeof(int) * (size_t)n);
  MPI_Datatype* types = malloc(sizeof(MPI_Datatype) * (size_t)n);
  MPI_Datatype block;
  MPI_Type_contiguous(kCount, MPI_INT, &block);
  MPI_Type_commit(&block);

  for (iteration = 1; iteration <= iterations; ++iteration) {
    /* MPI_Alltoallw in place: the block of rank i at block n-1-i, displacements in bytes. */
    for (int k = 0; k < total; ++k) buf[k] = -1;
    for (int i = 0; i < n; ++i) {
      counts[i] = 1;
      displs[i] = (n - 1 - i) * kCount * (int)sizeof(int);
      types[i] = block;
      for (int k = 0; k < kCount; ++k) buf[(n - 1 - i) * kCount + k] = value(me, i, k, 1);
    }
    expect_ok(MPI_Alltoallw(MPI_IN_PLACE, ignored_ints, ignored_ints, ignored_types, buf, counts, displs, types,
                            MPI_COMM_WORLD),
              "MPI_Alltoallw in place");
    for (int i = 0; i < n; ++i) {
      for (int k = 0; k < kCount; ++k) {
        const int got = buf[(n - 1 - i) * kCount + k];
        if (got != value(i, me, k, 1)) wrong("MPI_Alltoallw in place", i, k, got, value(i, me, k, 1));
      }
    }
    for (int k = n * kCount; k < total; ++k) {
      if (buf[k] != -1) wrong("MPI_Alltoallw in place (past the blocks)", -1, k, buf[k], -1);
    }

    fill_vector(buf, total, counts, displs, 2);
    expect_ok(MPI_Alltoallv(MPI_IN_PLACE, ignored_ints, ignored_ints, MPI_DATATYPE_NULL, buf, counts, displs, MPI_INT,
                            MPI_COMM_WORLD),
              "MPI_Alltoallv in place");
    check_vector(buf, total, counts, displs, 2, "MPI_Alltoallv in place");

    fill_vector(buf, total, counts, displs, 3);
    MPI_Request req;
    expect_ok(MPI_Ialltoallv(MPI_IN_PLACE, ignored_ints, ignored_ints, MPI_DATATYPE_NULL, buf, counts, displs, MPI_INT,
                             MPI_COMM_WORLD, &req),
              "MPI_Ialltoallv in place");
    expect_ok(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait");
    check_vector(buf, total, counts, displs, 3, "MPI_Ialltoallv in place + MPI_Wait");
  }

  MPI_Type_free(&block);
  printf("rank %d: ALL OK\n", me);
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
