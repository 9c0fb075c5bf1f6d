/* Between the Open MPI collective component (C, against Open MPI's internal headers: coll_ohio.h)
 * and ohio's shared core (C++, against mpi.h alone: client/mpi/served_calls.h). In Open MPI an MPI
 * handle is the library's object itself (MPI_Comm is struct ompi_communicator_t *, MPI_Request
 * struct ompi_request_t *), so both sides speak of the same things through mpi.h's types. */
#ifndef OHIO_CLIENT_OPENMPI_COLL_COLL_OHIO_BRIDGE_H
#define OHIO_CLIENT_OPENMPI_COLL_COLL_OHIO_BRIDGE_H

#include <mpi.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Open MPI's collective module, whose struct is named for its version (coll.h): 2.3.0 in Open MPI
 * 4.1, 2.4.0 in 5.0. The bridge only hands module pointers back to the functions they came with,
 * so it may be compiled against one Open MPI's mpi.h and the glue against the other's. */
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5
#define OHIO_COLL_MODULE struct mca_coll_base_module_2_4_0_t
#else
#define OHIO_COLL_MODULE struct mca_coll_base_module_2_3_0_t
#endif
OHIO_COLL_MODULE;

/* The functions (and their modules) that served the communicator before ohio's module was
 * enabled over them: where everything ohio does not serve goes. */
typedef struct ohio_coll_previous {
  int (*alltoall)(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount, MPI_Datatype rdtype,
                  MPI_Comm comm, OHIO_COLL_MODULE *module);
  OHIO_COLL_MODULE *alltoall_module;
  int (*alltoallv)(const void *sbuf, const int *scounts, const int *sdisps, MPI_Datatype sdtype, void *rbuf,
                   const int *rcounts, const int *rdisps, MPI_Datatype rdtype, MPI_Comm comm,
                   OHIO_COLL_MODULE *module);
  OHIO_COLL_MODULE *alltoallv_module;
  int (*alltoallw)(const void *sbuf, const int *scounts, const int *sdisps, MPI_Datatype const *sdtypes, void *rbuf,
                   const int *rcounts, const int *rdisps, MPI_Datatype const *rdtypes, MPI_Comm comm,
                   OHIO_COLL_MODULE *module);
  OHIO_COLL_MODULE *alltoallw_module;
  int (*ialltoall)(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount, MPI_Datatype rdtype,
                   MPI_Comm comm, MPI_Request *request, OHIO_COLL_MODULE *module);
  OHIO_COLL_MODULE *ialltoall_module;
  int (*ialltoallv)(const void *sbuf, const int *scounts, const int *sdisps, MPI_Datatype sdtype, void *rbuf,
                    const int *rcounts, const int *rdisps, MPI_Datatype rdtype, MPI_Comm comm, MPI_Request *request,
                    OHIO_COLL_MODULE *module);
  OHIO_COLL_MODULE *ialltoallv_module;
  /* MPI_Alltoall_init (MPI 4.0, Open MPI 5.0; Open MPI 4.1's persistent collectives extension
   * MPIX_Alltoall_init): its persistent request is what a Start ohio does not serve starts. */
  int (*alltoall_init)(const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                       MPI_Datatype rdtype, MPI_Comm comm, MPI_Info info, MPI_Request *request,
                       OHIO_COLL_MODULE *module);
  OHIO_COLL_MODULE *alltoall_init_module;
} ohio_coll_previous;

/* What ohio's module holds for its communicator. */
typedef struct ohio_coll_comm {
  ohio_coll_previous previous;
  void *state; /* the core's state of the communicator, set up by its first served call (or NULL) */
} ohio_coll_comm;

/* The served functions, through the core (coll_ohio_bridge.cc). */
int ohio_coll_alltoall(ohio_coll_comm *c, const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                       MPI_Datatype rdtype, MPI_Comm comm);
int ohio_coll_alltoallv(ohio_coll_comm *c, const void *sbuf, const int *scounts, const int *sdisps,
                        MPI_Datatype sdtype, void *rbuf, const int *rcounts, const int *rdisps, MPI_Datatype rdtype,
                        MPI_Comm comm);
int ohio_coll_alltoallw(ohio_coll_comm *c, const void *sbuf, const int *scounts, const int *sdisps,
                        MPI_Datatype const *sdtypes, void *rbuf, const int *rcounts, const int *rdisps,
                        MPI_Datatype const *rdtypes, MPI_Comm comm);
int ohio_coll_ialltoall(ohio_coll_comm *c, const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf, int rcount,
                        MPI_Datatype rdtype, MPI_Comm comm, MPI_Request *request);
int ohio_coll_ialltoallv(ohio_coll_comm *c, const void *sbuf, const int *scounts, const int *sdisps,
                         MPI_Datatype sdtype, void *rbuf, const int *rcounts, const int *rdisps, MPI_Datatype rdtype,
                         MPI_Comm comm, MPI_Request *request);

/* A Start of a persistent alltoall: started as an MPI_Ialltoall is (the same opt-in, decided alike
 * on every rank), ohio's request in *started; or, where ohio does not serve it, `library` (the
 * module below's persistent request for the same call) started and put in *started. */
int ohio_coll_start_alltoall(ohio_coll_comm *c, const void *sbuf, int scount, MPI_Datatype sdtype, void *rbuf,
                             int rcount, MPI_Datatype rdtype, MPI_Comm comm, MPI_Request library,
                             MPI_Request *started);

/* The communicator's state gone with its module: the group left, the agreement duplicate freed. */
void ohio_coll_release(ohio_coll_comm *c);

/* When Open MPI has found the component usable (its init_query): the process is marked as
 * served by it (the shim, if preloaded, passes everything through), and errors are returned to
 * the MPI function, which puts them through the communicator's error handler itself. */
void ohio_coll_opened(void);

/* Whether this node's ohiod socket is there ($OHIO_SOCKET, else the default path): a stat, no
 * connection (ohiod removes its socket when it stops). OHIO_DISABLE does not matter here: a
 * disabled job keeps its modules, which count its calls as handed back, disabled. */
bool ohio_coll_daemon_socket_here(void);

/* Whether the communicator being created is ohio's own (its agreement duplicate), which ohio
 * must not serve. */
bool ohio_coll_creating_internal_communicator(void);

/* A started nonblocking call of the core's: finished if ohio is done with it (true, *error set),
 * and released once the program has freed its request. */
bool ohio_coll_nonblocking_finish(void *call, int *error);
void ohio_coll_nonblocking_release(void *call);

/* Hands a started call to the program as an Open MPI request (coll_ohio_request.c). */
int mca_coll_ohio_request_start(void *call, MPI_Comm comm, MPI_Request *request);

#ifdef __cplusplus
}
#endif

#endif
