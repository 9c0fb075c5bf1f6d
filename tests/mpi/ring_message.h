/* A ring message of the MPI library's own, posted beside a nonblocking collective so that one
 * Wait or Test call completes both kinds of request: 64 ints from the left neighbour on
 * MPI_COMM_WORLD, 64 to the right, tagged with the call. Shared by the check programs. */
#pragma once

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int out[64], in[64];
} Ring;

static inline void ring_post(Ring* g, int call, MPI_Request* recv, MPI_Request* send) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int i = 0; i < 64; ++i) g->out[i] = rank * 1000 + call * 7 + i;
  memset(g->in, 0, sizeof(g->in));
  MPI_Irecv(g->in, 64, MPI_INT, (rank + size - 1) % size, call, MPI_COMM_WORLD, recv);
  MPI_Isend(g->out, 64, MPI_INT, (rank + 1) % size, call, MPI_COMM_WORLD, send);
}

/* Exits, saying WRONG, unless what came from the left is what ring_post sent there. */
static inline void ring_verify(const Ring* g, int call, const char* what) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int left = (rank + size - 1) % size;
  for (int i = 0; i < 64; ++i)
    if (g->in[i] != left * 1000 + call * 7 + i) {
      printf("rank %d: %s: WRONG ring int %d: got %d\n", rank, what, i, g->in[i]);
      exit(1);
    }
}
