/* The soak's MPI program: an unmodified MPI_Alltoall caller under MPI_ERRORS_RETURN, run with
 * libohio_mpi preloaded while the soak's chaos restarts and stops daemons. argv: CALLS MAX_BYTES
 * SEED. Call c moves M bytes per rank, the same on every rank (log-uniform in [0, MAX_BYTES],
 * drawn from SEED and c; every seventh in place), each byte a pattern of (source, destination,
 * byte, call, seed); every rank checks every byte it receives. Each rank prints, for every call
 * that returned an error, "rank R: call C failed with MPI_ERR_OTHER" (or "with class K" for any
 * other class), and at the end
 *   "rank R: calls C ok O failed F wrong_bytes W"
 * where W counts bytes wrong in calls that returned MPI_SUCCESS: the one thing that must never
 * happen. (The shim prints its reason for a failure on stderr: "ohio: MPI_Alltoall failed: ...".) */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static uint8_t Byte(int src, int dst, long k, int call, uint64_t seed) {
  return (uint8_t)(src * 31 + dst * 7 + k * 3 + call * 13 + (k >> 7) + seed);
}

/* Log-uniform: a bit width drawn first, then a size of that width, so small and large calls
 * are about as many. */
static long BytesOf(int call, uint64_t seed, long max_bytes) {
  const uint64_t r = Mix(seed ^ Mix((uint64_t)call));
  int width = 0;
  while (width < 62 && (1l << width) <= max_bytes) ++width;
  const int bits = (int)(r % (uint64_t)(width + 1));
  const long m = bits == 0 ? 0 : (long)((r >> 8) % (1ull << bits));
  return m > max_bytes ? max_bytes : m;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 4) {
    if (rank == 0) fprintf(stderr, "usage: mpi_soak_check CALLS MAX_BYTES SEED\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int calls = atoi(argv[1]);
  const long max_bytes = atol(argv[2]);
  const uint64_t seed = strtoull(argv[3], NULL, 10);
  uint8_t* send = malloc((size_t)(max_bytes > 0 ? max_bytes : 1) * size);
  uint8_t* recv = malloc((size_t)(max_bytes > 0 ? max_bytes : 1) * size);
  int ok = 0, failed = 0;
  long wrong_bytes = 0;
  for (int c = 0; c < calls; ++c) {
    const long m = BytesOf(c, seed, max_bytes);
    const int in_place = c % 7 == 0;
    uint8_t* mine = in_place ? recv : send;
    for (int d = 0; d < size; ++d) {
      for (long k = 0; k < m; ++k) mine[(size_t)d * m + k] = Byte(rank, d, k, c, seed);
    }
    if (!in_place) memset(recv, 0xEE, (size_t)m * size);
    const int rc = MPI_Alltoall(in_place ? MPI_IN_PLACE : send, (int)m, MPI_BYTE, recv, (int)m, MPI_BYTE,
                                MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
      int cls = 0;
      MPI_Error_class(rc, &cls);
      if (cls == MPI_ERR_OTHER) {
        printf("rank %d: call %d failed with MPI_ERR_OTHER\n", rank, c);
      } else {
        printf("rank %d: call %d failed with class %d\n", rank, c, cls);
      }
      ++failed;
      continue;
    }
    long wrong = 0;
    for (int s = 0; s < size; ++s) {
      for (long k = 0; k < m; ++k) wrong += recv[(size_t)s * m + k] != Byte(s, rank, k, c, seed);
    }
    if (wrong != 0) printf("rank %d: call %d (%ld bytes per rank) succeeded with %ld WRONG bytes\n", rank, c, m, wrong);
    wrong_bytes += wrong;
    ok += wrong == 0;
  }
  printf("rank %d: calls %d ok %d failed %d wrong_bytes %ld\n", rank, calls, ok, failed, wrong_bytes);
  fflush(stdout);
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
