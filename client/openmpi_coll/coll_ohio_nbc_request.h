/* Ohio's collective requests in Open MPI, and what makes one. MPI_Ialltoall and friends write the
 * call's derived datatypes and a completion callback into the request a component returns
 * (ompi_coll_base_retain_datatypes), taking it for one of Open MPI's own nonblocking collective
 * requests (ompi_coll_base_nbc_request_t): ohio's nonblocking requests begin with one. Its size
 * and fields differ between Open MPI 4.1 and 5.0; its class, ompi_coll_base_nbc_request_t_class,
 * is the parent of ohio's nonblocking request class in both. (MPI_Alltoall_init hands its request
 * there too, but a new persistent request is complete, which that function leaves alone.) */
#ifndef OHIO_CLIENT_OPENMPI_COLL_COLL_OHIO_NBC_REQUEST_H
#define OHIO_CLIENT_OPENMPI_COLL_COLL_OHIO_NBC_REQUEST_H

#include "ompi_config.h"

#include "ompi/request/request.h"

#if OMPI_MAJOR_VERSION >= 5
/* Open MPI 5's header compiles against the packaged headers (with the ones tests/trixie/make-root.sh
 * adds from the source package). */
#include "ompi/mca/coll/base/coll_base_util.h"
typedef ompi_coll_base_nbc_request_t ohio_nbc_request_t;
#else
/* Open MPI 4.1's ompi_coll_base_nbc_request_t, field for field: its header
 * (ompi/mca/coll/base/coll_base_util.h) includes a Fortran header that the packaged headers leave
 * out. */
typedef struct ohio_nbc_request_t {
  ompi_request_t super;
  union {
    ompi_request_complete_fn_t req_complete_cb;
    ompi_request_free_fn_t req_free;
  } cb;
  void *req_complete_cb_data;
  union {
    opal_object_t *objs[2];
  } data;
} ohio_nbc_request_t;
OMPI_DECLSPEC extern opal_class_t ompi_coll_base_nbc_request_t_class;
#endif

/* A collective cannot be cancelled: a started request completes as its call does. */
static inline int ohio_collective_request_cancel(ompi_request_t *request, int complete) {
  (void)request;
  (void)complete;
  return OMPI_SUCCESS;
}

/* Makes `request` (just made with OBJ_NEW) one of ohio's collective requests on `comm`, freed by
 * `release`: persistent (MPI_Alltoall_init's, inactive) or not (started, active). */
static inline void ohio_collective_request_init(ompi_request_t *request, bool persistent,
                                                struct ompi_communicator_t *comm, ompi_request_free_fn_t release) {
  OMPI_REQUEST_INIT(request, persistent);
  request->req_type = OMPI_REQUEST_COLL;
  if (!persistent) request->req_state = OMPI_REQUEST_ACTIVE;
  request->req_status = ompi_status_empty;
  request->req_mpi_object.comm = comm;
  request->req_free = release;
  request->req_cancel = ohio_collective_request_cancel;
}

#endif
