/* Persistent alltoalls (MPI_Alltoall_init: MPI 4.0, Open MPI 5.0; Open MPI 4.1's persistent
 * collectives extension MPIX_Alltoall_init) as ohio's persistent requests. The request the
 * program holds is ohio's; it keeps the call's arguments and the module below's own persistent
 * request for the same call. Each MPI_Start runs one of the two (ohio_coll_start_alltoall: ohio's
 * nonblocking call where ohio serves it, decided alike on every rank, else the library's
 * request), and a progress callback completes the program's request when what it runs completes,
 * leaving it inactive to be started again. A Start does not block: a rank may start, then receive
 * what another sends before it starts.
 *
 * Open MPI's MPI_Alltoall_init keeps the call's derived datatypes in the request a component
 * returns, as in a nonblocking collective's (coll_ohio_nbc_request.h), and releases them by
 * wrapping the request's free: after ohio's free returns it still reads the request. A request
 * the program frees is therefore retired, not destroyed, and destroyed at the next entry into
 * this file (or when the component closes). */
#include "client/openmpi_coll/coll_ohio.h"

#include "client/openmpi_coll/coll_ohio_nbc_request.h"
#include "ompi/datatype/ompi_datatype.h"
#include "opal/runtime/opal_progress.h"

typedef struct mca_coll_ohio_persistent_t {
  ohio_nbc_request_t super;
  mca_coll_ohio_module_t *module; /* retained: the communicator's ohio state lives there */
  const void *sbuf;
  int scount;
  ompi_datatype_t *sdtype; /* retained, as the program may free its handle after the init */
  void *rbuf;
  int rcount;
  ompi_datatype_t *rdtype; /* retained */
  ompi_communicator_t *comm;
  ompi_request_t *library; /* the module below's persistent request for the same call */
  ompi_request_t *running; /* what the current Start runs (ohio's request or `library`), or NULL */
  bool freed;              /* freed by the program (if running, destroyed when that completes) */
  struct mca_coll_ohio_persistent_t *next; /* among the running ones, or the retired ones */
} mca_coll_ohio_persistent_t;

OBJ_CLASS_INSTANCE(mca_coll_ohio_persistent_t, ompi_coll_base_nbc_request_t, NULL, NULL);

static mca_coll_ohio_persistent_t *running = NULL;
static mca_coll_ohio_persistent_t *retired = NULL;
static int live_persistents = 0;
static bool progressing = false;

static void ohio_persistent_destroy(mca_coll_ohio_persistent_t *p) {
  if (MPI_REQUEST_NULL != p->library) ompi_request_free(&p->library);
  OBJ_RELEASE(p->sdtype);
  OBJ_RELEASE(p->rdtype);
  mca_coll_base_module_t *module = &p->module->super;
  OBJ_RELEASE(module);
  OMPI_REQUEST_FINI(&p->super.super);
  OBJ_RELEASE(p);
}

/* Freed by the program: no longer live, destroyed by the next ohio_persistent_reap. */
static void ohio_persistent_retire(mca_coll_ohio_persistent_t *p) {
  --live_persistents;
  p->next = retired;
  retired = p;
}

static void ohio_persistent_reap(void) {
  while (NULL != retired) {
    mca_coll_ohio_persistent_t *p = retired;
    retired = p->next;
    ohio_persistent_destroy(p);
  }
}

static int ohio_persistent_progress(void) {
  ohio_persistent_reap();
  int completed = 0;
  mca_coll_ohio_persistent_t **link = &running;
  while (NULL != *link) {
    mca_coll_ohio_persistent_t *p = *link;
    if (!REQUEST_COMPLETE(p->running)) {
      link = &p->next;
      continue;
    }
    *link = p->next;
    ++completed;
    p->super.super.req_status = p->running->req_status;
    if (p->running == p->library) {
      /* Nobody waits on the library's request but this: it is made ready for the next Start
       * as a Wait would make it. */
      p->library->req_state = OMPI_REQUEST_INACTIVE;
    } else {
      ompi_request_free(&p->running);
    }
    p->running = NULL;
    if (p->freed) {
      /* Its free has long returned: nothing of Open MPI's reads it any more. */
      --live_persistents;
      ohio_persistent_destroy(p);
    } else {
      ompi_request_complete(&p->super.super, true);
    }
  }
  return completed;
}

static void ohio_persistent_unregister(void) {
  if (progressing) opal_progress_unregister(ohio_persistent_progress);
  progressing = false;
}

void mca_coll_ohio_persistent_stop_progress(void) {
  ohio_persistent_reap();
  ohio_persistent_unregister();
}

static int ohio_persistent_start(size_t count, ompi_request_t **requests) {
  for (size_t i = 0; i < count; ++i) {
    mca_coll_ohio_persistent_t *p = (mca_coll_ohio_persistent_t *)requests[i];
    ompi_request_t *started = MPI_REQUEST_NULL;
    const int rc = ohio_coll_start_alltoall(&p->module->comm, p->sbuf, p->scount, p->sdtype, p->rbuf, p->rcount,
                                            p->rdtype, p->comm, p->library, &started);
    if (MPI_SUCCESS != rc) return rc;
    p->running = started;
    p->super.super.req_status = ompi_status_empty;
    p->super.super.req_complete = REQUEST_PENDING;
    p->super.super.req_state = OMPI_REQUEST_ACTIVE;
    p->next = running;
    running = p;
  }
  return OMPI_SUCCESS;
}

static int ohio_persistent_free(ompi_request_t **handle) {
  mca_coll_ohio_persistent_t *p = (mca_coll_ohio_persistent_t *)*handle;
  *handle = MPI_REQUEST_NULL;
  p->freed = true;
  /* Running, it stays live until the progress callback sees what it runs complete. */
  if (NULL == p->running) ohio_persistent_retire(p);
  /* Not reaped here: Open MPI may read the request just retired once this returns. */
  if (0 == live_persistents) ohio_persistent_unregister();
  return OMPI_SUCCESS;
}

int mca_coll_ohio_alltoall_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module) {
  ohio_persistent_reap();
  mca_coll_ohio_module_t *m = (mca_coll_ohio_module_t *)module;
  const ohio_coll_previous *below = &m->comm.previous;
  ompi_request_t *library = MPI_REQUEST_NULL;
  int rc = below->alltoall_init(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, info, &library,
                                below->alltoall_init_module);
  if (OMPI_SUCCESS != rc) return rc;
  mca_coll_ohio_persistent_t *p = OBJ_NEW(mca_coll_ohio_persistent_t);
  if (NULL == p) {
    ompi_request_free(&library);
    return OMPI_ERR_OUT_OF_RESOURCE;
  }
  ompi_request_t *base = ohio_nbc_request_init(&p->super, true, comm, ohio_persistent_free);
  base->req_start = ohio_persistent_start;
  OBJ_RETAIN(&m->super);
  p->module = m;
  p->sbuf = sbuf;
  p->scount = scount;
  OBJ_RETAIN(sdtype);
  p->sdtype = sdtype;
  p->rbuf = rbuf;
  p->rcount = rcount;
  OBJ_RETAIN(rdtype);
  p->rdtype = rdtype;
  p->comm = comm;
  p->library = library;
  p->running = NULL;
  p->freed = false;
  p->next = NULL;
  ++live_persistents;
  if (!progressing) {
    opal_progress_register(ohio_persistent_progress);
    progressing = true;
  }
  *request = base;
  return OMPI_SUCCESS;
}
