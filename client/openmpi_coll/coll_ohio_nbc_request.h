/* The shape Open MPI gives the requests of its own nonblocking and persistent collectives
 * (ompi_coll_base_nbc_request_t): MPI_Ialltoall, MPI_Alltoall_init and friends write the call's
 * derived datatypes and a completion or free callback there, in whatever request a component
 * returns (ompi_coll_base_retain_datatypes), so ohio's requests must begin with one. Its size and
 * fields differ between Open MPI 4.1 and 5.0; its class, ompi_coll_base_nbc_request_t_class, is
 * the parent of ohio's request classes in both. */
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

#endif
