/* Ohio's nonblocking calls as Open MPI requests. A component cannot take part in MPI_Wait or
 * MPI_Test, so ohio's requests are completed by a progress callback that Open MPI runs from every
 * Wait, Test and blocking call: it asks ohio, without waiting, whether each started call is done
 * and completes the request of each that is. The callback is registered while ohio's requests are
 * outstanding and unregistered when the last one is freed (not from inside the callback, where
 * the list of callbacks is being walked).
 *
 * Open MPI's MPI_Ialltoall and friends take the request a component returns for one of its own
 * nonblocking collective requests, where they keep the call's derived datatypes until it
 * completes: ohio's requests are made of one (coll_ohio_nbc_request.h). */
#include "client/openmpi_coll/coll_ohio.h"

#include "client/openmpi_coll/coll_ohio_nbc_request.h"
#include "opal/runtime/opal_progress.h"

typedef struct mca_coll_ohio_request_t {
  ohio_nbc_request_t super;
  void *call; /* the core's call */
  bool freed;   /* the program freed the request before it completed */
  struct mca_coll_ohio_request_t *next;
} mca_coll_ohio_request_t;

OBJ_CLASS_INSTANCE(mca_coll_ohio_request_t, ompi_coll_base_nbc_request_t, NULL, NULL);

/* Started calls not completed yet, and whether the callback is registered. */
static mca_coll_ohio_request_t *outstanding = NULL;
static int live_requests = 0;
static bool progressing = false;

static void ohio_request_destroy(mca_coll_ohio_request_t *request) {
  ohio_coll_nonblocking_release(request->call);
  --live_requests;
  OMPI_REQUEST_FINI(&request->super.super);
  OBJ_RELEASE(request);
}

static int ohio_progress(void) {
  int completed = 0;
  mca_coll_ohio_request_t **link = &outstanding;
  while (NULL != *link) {
    mca_coll_ohio_request_t *request = *link;
    int error = MPI_SUCCESS;
    if (!ohio_coll_nonblocking_finish(request->call, &error)) {
      link = &request->next;
      continue;
    }
    *link = request->next;
    ++completed;
    request->super.super.req_status.MPI_ERROR = error;
    /* Completing also lets go of the datatypes MPI_Ialltoall kept for the call. */
    ompi_request_complete(&request->super.super, true);
    if (request->freed) ohio_request_destroy(request);
  }
  return completed;
}

void mca_coll_ohio_request_stop_progress(void) {
  if (progressing) opal_progress_unregister(ohio_progress);
  progressing = false;
}

static int ohio_request_free(ompi_request_t **handle) {
  mca_coll_ohio_request_t *request = (mca_coll_ohio_request_t *)*handle;
  *handle = MPI_REQUEST_NULL;
  if (REQUEST_COMPLETE(&request->super.super)) {
    ohio_request_destroy(request);
  } else {
    /* Freed while ohiod still moves its data: destroyed when the call completes. */
    request->freed = true;
  }
  if (0 == live_requests) mca_coll_ohio_request_stop_progress();
  return OMPI_SUCCESS;
}

int mca_coll_ohio_request_start(void *call, MPI_Comm comm, MPI_Request *handle) {
  mca_coll_ohio_request_t *request = OBJ_NEW(mca_coll_ohio_request_t);
  if (NULL == request) return MPI_ERR_NO_MEM;
  ompi_request_t *base = &request->super.super;
  ohio_collective_request_init(base, false, comm, ohio_request_free);
  request->call = call;
  request->freed = false;
  request->next = outstanding;
  outstanding = request;
  ++live_requests;
  if (!progressing) {
    opal_progress_register(ohio_progress);
    progressing = true;
  }
  *handle = base;
  return MPI_SUCCESS;
}
