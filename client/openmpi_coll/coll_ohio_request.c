/* Ohio's nonblocking calls as Open MPI requests. A component cannot take part in MPI_Wait or
 * MPI_Test, so ohio's requests are completed by a progress callback that Open MPI runs from every
 * Wait, Test and blocking call: it asks ohio, without waiting, whether each started call is done
 * and completes the request of each that is. The callback is registered with the first request
 * and stays until the component closes; with none outstanding it costs one load.
 *
 * Under MPI_THREAD_MULTIPLE threads start, progress and free requests at once: the list and the
 * counts are guarded by `lock`, held to look and to link or unlink only. A request is completed
 * outside it (completing wakes its waiter, which may free it at once: `completing` keeps the
 * free from destroying it under the completing thread's feet).
 *
 * Open MPI's MPI_Ialltoall and friends take the request a component returns for one of its own
 * nonblocking collective requests, where they keep the call's derived datatypes until it
 * completes: ohio's requests are made of one (coll_ohio_nbc_request.h). */
#include "client/openmpi_coll/coll_ohio.h"

#include <pthread.h>

#include "client/openmpi_coll/coll_ohio_nbc_request.h"
#include "opal/runtime/opal_progress.h"

typedef struct mca_coll_ohio_request_t {
  ohio_nbc_request_t super;
  void *call; /* the core's call */
  bool freed;   /* the program freed the request before it completed */
  bool completing; /* a progress call is completing it, outside the lock */
  struct mca_coll_ohio_request_t *next;
} mca_coll_ohio_request_t;

OBJ_CLASS_INSTANCE(mca_coll_ohio_request_t, ompi_coll_base_nbc_request_t, NULL, NULL);

/* Started calls not completed yet (their number as an atomic too, read without the lock), and
 * whether the callback is registered. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static mca_coll_ohio_request_t *outstanding = NULL;
static int outstanding_count = 0;
static bool progressing = false;

/* Outside the lock: the request is no longer in the list, and nobody else holds it. */
static void ohio_request_destroy(mca_coll_ohio_request_t *request) {
  ohio_coll_nonblocking_release(request->call);
  OMPI_REQUEST_FINI(&request->super.super);
  OBJ_RELEASE(request);
}

static int ohio_progress(void) {
  if (0 == __atomic_load_n(&outstanding_count, __ATOMIC_ACQUIRE)) return 0;
  /* The calls ohio is done with, unlinked under the lock; completed after it. */
  mca_coll_ohio_request_t *done = NULL;
  pthread_mutex_lock(&lock);
  mca_coll_ohio_request_t **link = &outstanding;
  while (NULL != *link) {
    mca_coll_ohio_request_t *request = *link;
    int error = MPI_SUCCESS;
    if (!ohio_coll_nonblocking_finish(request->call, &error)) {
      link = &request->next;
      continue;
    }
    *link = request->next;
    __atomic_store_n(&outstanding_count, outstanding_count - 1, __ATOMIC_RELEASE);
    request->super.super.req_status.MPI_ERROR = error;
    request->completing = true;
    request->next = done;
    done = request;
  }
  pthread_mutex_unlock(&lock);
  int completed = 0;
  while (NULL != done) {
    mca_coll_ohio_request_t *request = done;
    done = request->next;
    ++completed;
    /* Completing also lets go of the datatypes MPI_Ialltoall kept for the call. */
    ompi_request_complete(&request->super.super, true);
    pthread_mutex_lock(&lock);
    request->completing = false;
    const bool freed = request->freed;
    pthread_mutex_unlock(&lock);
    if (freed) ohio_request_destroy(request);
  }
  return completed;
}

void mca_coll_ohio_request_stop_progress(void) {
  pthread_mutex_lock(&lock);
  const bool registered = progressing;
  progressing = false;
  pthread_mutex_unlock(&lock);
  if (registered) opal_progress_unregister(ohio_progress);
}

static int ohio_request_free(ompi_request_t **handle) {
  mca_coll_ohio_request_t *request = (mca_coll_ohio_request_t *)*handle;
  *handle = MPI_REQUEST_NULL;
  pthread_mutex_lock(&lock);
  /* Freed while ohiod still moves its data, or while a progress call completes it: destroyed
   * by that progress call. */
  const bool now = REQUEST_COMPLETE(&request->super.super) && !request->completing;
  if (!now) request->freed = true;
  pthread_mutex_unlock(&lock);
  if (now) ohio_request_destroy(request);
  return OMPI_SUCCESS;
}

int mca_coll_ohio_request_start(void *call, MPI_Comm comm, MPI_Request *handle) {
  mca_coll_ohio_request_t *request = OBJ_NEW(mca_coll_ohio_request_t);
  if (NULL == request) return MPI_ERR_NO_MEM;
  ompi_request_t *base = &request->super.super;
  ohio_collective_request_init(base, false, comm, ohio_request_free);
  request->call = call;
  request->freed = false;
  request->completing = false;
  pthread_mutex_lock(&lock);
  request->next = outstanding;
  outstanding = request;
  __atomic_store_n(&outstanding_count, outstanding_count + 1, __ATOMIC_RELEASE);
  const bool registering = !progressing;
  progressing = true;
  pthread_mutex_unlock(&lock);
  /* Outside the lock: Open MPI's own progress lock is taken in there. */
  if (registering) opal_progress_register(ohio_progress);
  *handle = base;
  return MPI_SUCCESS;
}
