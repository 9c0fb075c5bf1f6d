/* Persistent alltoalls (MPI_Alltoall_init: MPI 4.0, Open MPI 5.0; Open MPI 4.1's persistent
 * collectives extension MPIX_Alltoall_init) as ohio's persistent requests. The request the
 * program holds is ohio's; it keeps the call's arguments and the module below's own persistent
 * request for the same call. Each MPI_Start runs one of the two (ohio_coll_start_alltoall: ohio's
 * nonblocking call where ohio serves it, decided alike on every rank, else the library's
 * request), and a progress callback completes the program's request when what it runs completes,
 * leaving it inactive to be started again. A Start does not block: a rank may start, then
 * receive what another sends before it starts.
 *
 * Under MPI_THREAD_MULTIPLE threads start, progress and free these at once: the list of running
 * ones is guarded by `lock`, held to look and to link or unlink only; what completes is finished
 * outside it (`completing` keeps a free meanwhile from destroying it). The callback, registered
 * with the first request, stays until the component closes; with none running it costs a load. */
#include "client/openmpi_coll/coll_ohio.h"

#include <pthread.h>

#include "client/openmpi_coll/coll_ohio_nbc_request.h"
#include "ompi/datatype/ompi_datatype.h"
#include "opal/runtime/opal_progress.h"

typedef struct mca_coll_ohio_persistent_t {
  ompi_request_t super;
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
  bool freed;              /* freed by the program while running: destroyed when it completes */
  bool completing;         /* a progress call is finishing it, outside the lock */
  struct mca_coll_ohio_persistent_t *next; /* among the running ones */
} mca_coll_ohio_persistent_t;

OBJ_CLASS_INSTANCE(mca_coll_ohio_persistent_t, ompi_request_t, NULL, NULL);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static mca_coll_ohio_persistent_t *running = NULL;
static int running_count = 0; /* also read without the lock */
static bool progressing = false;

static void ohio_persistent_destroy(mca_coll_ohio_persistent_t *p) {
  if (MPI_REQUEST_NULL != p->library) ompi_request_free(&p->library);
  OBJ_RELEASE(p->sdtype);
  OBJ_RELEASE(p->rdtype);
  mca_coll_base_module_t *module = &p->module->super;
  OBJ_RELEASE(module);
  OMPI_REQUEST_FINI(&p->super);
  OBJ_RELEASE(p);
}

static int ohio_persistent_progress(void) {
  if (0 == __atomic_load_n(&running_count, __ATOMIC_ACQUIRE)) return 0;
  mca_coll_ohio_persistent_t *done = NULL;
  pthread_mutex_lock(&lock);
  mca_coll_ohio_persistent_t **link = &running;
  while (NULL != *link) {
    mca_coll_ohio_persistent_t *p = *link;
    if (!REQUEST_COMPLETE(p->running)) {
      link = &p->next;
      continue;
    }
    *link = p->next;
    __atomic_store_n(&running_count, running_count - 1, __ATOMIC_RELEASE);
    p->completing = true;
    p->next = done;
    done = p;
  }
  pthread_mutex_unlock(&lock);
  int completed = 0;
  while (NULL != done) {
    mca_coll_ohio_persistent_t *p = done;
    done = p->next;
    ++completed;
    p->super.req_status = p->running->req_status;
    if (p->running == p->library) {
      /* Nobody waits on the library's request but this: it is made ready for the next Start
       * as a Wait would make it. */
      p->library->req_state = OMPI_REQUEST_INACTIVE;
    } else {
      ompi_request_free(&p->running);
    }
    pthread_mutex_lock(&lock);
    p->running = NULL;
    p->completing = false;
    const bool freed = p->freed;
    pthread_mutex_unlock(&lock);
    if (freed) {
      ohio_persistent_destroy(p);
    } else {
      ompi_request_complete(&p->super, true);
    }
  }
  return completed;
}

void mca_coll_ohio_persistent_stop_progress(void) {
  pthread_mutex_lock(&lock);
  const bool registered = progressing;
  progressing = false;
  pthread_mutex_unlock(&lock);
  if (registered) opal_progress_unregister(ohio_persistent_progress);
}

static int ohio_persistent_start(size_t count, ompi_request_t **requests) {
  for (size_t i = 0; i < count; ++i) {
    mca_coll_ohio_persistent_t *p = (mca_coll_ohio_persistent_t *)requests[i];
    ompi_request_t *started = MPI_REQUEST_NULL;
    const int rc = ohio_coll_start_alltoall(&p->module->comm, p->sbuf, p->scount, p->sdtype, p->rbuf, p->rcount,
                                            p->rdtype, p->comm, p->library, &started);
    if (MPI_SUCCESS != rc) return rc;
    p->super.req_status = ompi_status_empty;
    p->super.req_complete = REQUEST_PENDING;
    p->super.req_state = OMPI_REQUEST_ACTIVE;
    pthread_mutex_lock(&lock);
    p->running = started;
    p->next = running;
    running = p;
    __atomic_store_n(&running_count, running_count + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&lock);
  }
  return OMPI_SUCCESS;
}

static int ohio_persistent_free(ompi_request_t **handle) {
  mca_coll_ohio_persistent_t *p = (mca_coll_ohio_persistent_t *)*handle;
  *handle = MPI_REQUEST_NULL;
  pthread_mutex_lock(&lock);
  const bool now = NULL == p->running && !p->completing;
  if (!now) p->freed = true;
  pthread_mutex_unlock(&lock);
  if (now) ohio_persistent_destroy(p);
  return OMPI_SUCCESS;
}

int mca_coll_ohio_alltoall_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module) {
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
  ohio_collective_request_init(&p->super, true, comm, ohio_persistent_free);
  p->super.req_start = ohio_persistent_start;
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
  p->completing = false;
  p->next = NULL;
  pthread_mutex_lock(&lock);
  const bool registering = !progressing;
  progressing = true;
  pthread_mutex_unlock(&lock);
  /* Outside the lock: Open MPI's own progress lock is taken in there. */
  if (registering) opal_progress_register(ohio_persistent_progress);
  *request = &p->super;
  return OMPI_SUCCESS;
}
