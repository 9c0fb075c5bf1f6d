/* An unmodified MPI program: a persistent MPI_Alltoall_init (MPI 4.0; Open MPI 4.1's
 * MPIX_Alltoall_init) started several times.
 * Knows nothing of ohio.
 *   1. One request, 3 cycles of MPI_Start / MPI_Wait, the send data changed between cycles;
 *      after each Wait the request is still there (inactive), not MPI_REQUEST_NULL.
 *   2. Two requests (bytes, and ints in buffers of their own, as a derived datatype the program
 *      frees right after the init: the request keeps it), 2 cycles of MPI_Startall /
 *      MPI_Waitall.
 *   3. One more cycle of the first, completed by MPI_Test polling (gives up after 60 s).
 *   4. Both started again and completed by MPI_Waitany beside an Irecv and an Isend of the
 *      library's own (a ring), then once more by MPI_Testsome: each completion names a request
 *      still active, and the persistent request stays (inactive).
 *   5. MPI_Request_free of both inactive requests.
 * Every received byte is checked.
 *
 * usage: alltoall_init_check bytes
 * Prints "rank R: starts=N" and "rank R: ALL OK" on success; exits non-zero on the first
 * wrong byte. */
#include <mpi.h>
#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION < 5
/* Open MPI 4.1 has MPI 4.0's persistent collectives as the extension MPIX_Alltoall_init; 5.0 has
 * MPI_Alltoall_init itself. */
#include <mpi-ext.h>
#define MPI_Alltoall_init MPIX_Alltoall_init
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static int starts;

static unsigned char pattern(int src, int dst, long i, int cycle) {
  return (unsigned char)(src * 131 + dst * 31 + i * 7 + cycle * 13 + (i >> 8));
}

/* block_bytes per destination. */
static void fill(unsigned char* send, unsigned char* recv, long block_bytes, int cycle) {
  for (int d = 0; d < size; ++d)
    for (long i = 0; i < block_bytes; ++i) send[d * block_bytes + i] = pattern(rank, d, i, cycle);
  memset(recv, 0xEE, (size_t)block_bytes * size);
}

static void verify(const unsigned char* recv, long block_bytes, int cycle, const char* what) {
  for (int s = 0; s < size; ++s)
    for (long i = 0; i < block_bytes; ++i)
      if (recv[s * block_bytes + i] != pattern(s, rank, i, cycle)) {
        printf("rank %d: %s: WRONG byte %ld from %d (cycle %d): got %u\n", rank, what, i, s, cycle,
               recv[s * block_bytes + i]);
        exit(1);
      }
}

static void still_there(MPI_Request r, const char* what) {
  if (r == MPI_REQUEST_NULL) {
    printf("rank %d: %s: WRONG: the persistent request became MPI_REQUEST_NULL\n", rank, what);
    exit(1);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 2) {
    if (rank == 0) printf("usage: alltoall_init_check bytes\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const long bytes = atol(argv[1]);
  const long ints = bytes / (long)sizeof(int);
  unsigned char* send = malloc((size_t)bytes * size);
  unsigned char* recv = malloc((size_t)bytes * size);
  unsigned char* send_i = malloc((size_t)ints * sizeof(int) * size);
  unsigned char* recv_i = malloc((size_t)ints * sizeof(int) * size);
  MPI_Request r[2];
  MPI_Alltoall_init(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD, MPI_INFO_NULL, &r[0]);
  /* A derived datatype: Open MPI keeps it in the request the component returned, and lets go of
   * it when the request is freed. */
  MPI_Datatype one_int;
  MPI_Type_contiguous(1, MPI_INT, &one_int);
  MPI_Type_commit(&one_int);
  MPI_Alltoall_init(send_i, (int)ints, one_int, recv_i, (int)ints, one_int, MPI_COMM_WORLD, MPI_INFO_NULL, &r[1]);
  MPI_Type_free(&one_int);
  int cycle = 0;

  /* 1 */
  for (int k = 0; k < 3; ++k, ++cycle) {
    fill(send, recv, bytes, cycle);
    if (MPI_Start(&r[0]) != MPI_SUCCESS || MPI_Wait(&r[0], MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      printf("rank %d: MPI_Start/MPI_Wait failed\n", rank);
      return 1;
    }
    ++starts;
    still_there(r[0], "Wait");
    verify(recv, bytes, cycle, "Start/Wait");
  }

  /* 2 */
  for (int k = 0; k < 2; ++k, ++cycle) {
    fill(send, recv, bytes, cycle);
    fill(send_i, recv_i, ints * (long)sizeof(int), cycle + 100);
    MPI_Status statuses[2];
    if (MPI_Startall(2, r) != MPI_SUCCESS || MPI_Waitall(2, r, statuses) != MPI_SUCCESS) {
      printf("rank %d: MPI_Startall/MPI_Waitall failed\n", rank);
      return 1;
    }
    starts += 2;
    still_there(r[0], "Waitall");
    still_there(r[1], "Waitall");
    verify(recv, bytes, cycle, "Startall");
    verify(recv_i, ints * (long)sizeof(int), cycle + 100, "Startall (ints)");
  }

  /* 3 */
  {
    fill(send, recv, bytes, cycle);
    if (MPI_Start(&r[0]) != MPI_SUCCESS) {
      printf("rank %d: MPI_Start failed\n", rank);
      return 1;
    }
    ++starts;
    int done = 0;
    const double start = MPI_Wtime();
    while (!done) {
      if (MPI_Test(&r[0], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        printf("rank %d: MPI_Test failed\n", rank);
        return 1;
      }
      if (MPI_Wtime() - start > 60) {
        printf("rank %d: Test: WRONG: not complete after 60 s\n", rank);
        return 1;
      }
    }
    still_there(r[0], "Test");
    verify(recv, bytes, cycle, "Start/Test");
    ++cycle;
  }

  /* 4 */
  {
    fill(send, recv, bytes, cycle);
    fill(send_i, recv_i, ints * (long)sizeof(int), cycle + 100);
    const int left = (rank + size - 1) % size, right = (rank + 1) % size;
    int ring_out = rank * 1000 + cycle, ring_in = -1;
    MPI_Request all[4];
    if (MPI_Startall(2, r) != MPI_SUCCESS) {
      printf("rank %d: MPI_Startall failed\n", rank);
      return 1;
    }
    starts += 2;
    all[0] = r[0];
    all[1] = r[1];
    MPI_Irecv(&ring_in, 1, MPI_INT, left, 7, MPI_COMM_WORLD, &all[2]);
    MPI_Isend(&ring_out, 1, MPI_INT, right, 7, MPI_COMM_WORLD, &all[3]);
    /* Four calls, each completing one active request. (Not "until MPI_UNDEFINED": MPICH 4.0.2
     * itself keeps returning an inactive persistent collective request from MPI_Waitany.) */
    int seen[4] = {0, 0, 0, 0};
    for (int k = 0; k < 4; ++k) {
      int index = MPI_UNDEFINED;
      if (MPI_Waitany(4, all, &index, MPI_STATUS_IGNORE) != MPI_SUCCESS || index < 0 || index > 3 || seen[index]) {
        printf("rank %d: Waitany: WRONG: call %d returned index %d\n", rank, k, index);
        return 1;
      }
      seen[index] = 1;
      /* A persistent request stays, inactive: keep it, and leave it out of the next calls. */
      if (index < 2) {
        still_there(all[index], "Waitany");
        r[index] = all[index];
        all[index] = MPI_REQUEST_NULL;
      }
    }
    if (ring_in != left * 1000 + cycle) {
      printf("rank %d: Waitany: WRONG: ring value %d\n", rank, ring_in);
      return 1;
    }
    verify(recv, bytes, cycle, "Startall/Waitany");
    verify(recv_i, ints * (long)sizeof(int), cycle + 100, "Startall/Waitany (ints)");
    ++cycle;

    fill(send, recv, bytes, cycle);
    fill(send_i, recv_i, ints * (long)sizeof(int), cycle + 100);
    if (MPI_Startall(2, r) != MPI_SUCCESS) {
      printf("rank %d: MPI_Startall failed\n", rank);
      return 1;
    }
    starts += 2;
    int completed = 0;
    MPI_Request active[2] = {r[0], r[1]};
    const double start = MPI_Wtime();
    while (completed < 2) {
      int outcount = 0, indices[2];
      if (MPI_Testsome(2, active, &outcount, indices, MPI_STATUSES_IGNORE) != MPI_SUCCESS || outcount == MPI_UNDEFINED) {
        printf("rank %d: MPI_Testsome failed or found nothing active\n", rank);
        return 1;
      }
      for (int k = 0; k < outcount; ++k) {
        still_there(active[indices[k]], "Testsome");
        r[indices[k]] = active[indices[k]];
        active[indices[k]] = MPI_REQUEST_NULL;
      }
      completed += outcount;
      if (MPI_Wtime() - start > 60) {
        printf("rank %d: Testsome: WRONG: not complete after 60 s\n", rank);
        return 1;
      }
    }
    verify(recv, bytes, cycle, "Startall/Testsome");
    verify(recv_i, ints * (long)sizeof(int), cycle + 100, "Startall/Testsome (ints)");
    ++cycle;
  }

  /* 5 */
  if (MPI_Request_free(&r[0]) != MPI_SUCCESS || MPI_Request_free(&r[1]) != MPI_SUCCESS || r[0] != MPI_REQUEST_NULL ||
      r[1] != MPI_REQUEST_NULL) {
    printf("rank %d: WRONG: MPI_Request_free of the inactive persistent requests\n", rank);
    return 1;
  }
  printf("rank %d: starts=%d\n", rank, starts);
  printf("rank %d: ALL OK\n", rank);
  free(send);
  free(recv);
  free(send_i);
  free(recv_i);
  MPI_Finalize();
  return 0;
}
