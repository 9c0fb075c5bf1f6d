/* The module of coll/ohio on one communicator: its enable keeps the functions it goes above (and
 * a reference to their modules) for what ohio does not serve, its destructor gives them back and
 * releases the communicator's ohio state. */
#include "client/openmpi_coll/coll_ohio.h"

#define OHIO_KEEP_PREVIOUS(module, comm, name)                                   \
  do {                                                                           \
    (module)->comm.previous.name = (comm)->c_coll->coll_##name;                  \
    (module)->comm.previous.name##_module = (comm)->c_coll->coll_##name##_module; \
    if (NULL != (module)->comm.previous.name##_module) {                         \
      OBJ_RETAIN((module)->comm.previous.name##_module);                         \
    }                                                                            \
  } while (0)

#define OHIO_RELEASE_PREVIOUS(module, name)                      \
  do {                                                           \
    if (NULL != (module)->comm.previous.name##_module) {         \
      OBJ_RELEASE((module)->comm.previous.name##_module);        \
      (module)->comm.previous.name##_module = NULL;              \
    }                                                            \
  } while (0)

static int ohio_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                         struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module) {
  return ohio_coll_alltoall(&((mca_coll_ohio_module_t *)module)->comm, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                            comm);
}

static int ohio_alltoallv(const void *sbuf, const int *scounts, const int *sdisps, struct ompi_datatype_t *sdtype,
                          void *rbuf, const int *rcounts, const int *rdisps, struct ompi_datatype_t *rdtype,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module) {
  return ohio_coll_alltoallv(&((mca_coll_ohio_module_t *)module)->comm, sbuf, scounts, sdisps, sdtype, rbuf, rcounts,
                             rdisps, rdtype, comm);
}

static int ohio_alltoallw(const void *sbuf, const int *scounts, const int *sdisps,
                          struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts, const int *rdisps,
                          struct ompi_datatype_t *const *rdtypes, struct ompi_communicator_t *comm,
                          mca_coll_base_module_t *module) {
  return ohio_coll_alltoallw(&((mca_coll_ohio_module_t *)module)->comm, sbuf, scounts, sdisps, sdtypes, rbuf,
                             rcounts, rdisps, rdtypes, comm);
}

static int ohio_ialltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                          struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *module) {
  return ohio_coll_ialltoall(&((mca_coll_ohio_module_t *)module)->comm, sbuf, scount, sdtype, rbuf, rcount, rdtype,
                             comm, request);
}

static int ohio_ialltoallv(const void *sbuf, const int *scounts, const int *sdisps, struct ompi_datatype_t *sdtype,
                           void *rbuf, const int *rcounts, const int *rdisps, struct ompi_datatype_t *rdtype,
                           struct ompi_communicator_t *comm, ompi_request_t **request,
                           mca_coll_base_module_t *module) {
  return ohio_coll_ialltoallv(&((mca_coll_ohio_module_t *)module)->comm, sbuf, scounts, sdisps, sdtype, rbuf,
                              rcounts, rdisps, rdtype, comm, request);
}

/* Modules are enabled from the lowest priority up: what the communicator's table holds now is
 * what ohio goes above. Without a function below to fall back to, ohio takes none. */
static int ohio_module_enable(mca_coll_base_module_t *base, struct ompi_communicator_t *comm) {
  mca_coll_ohio_module_t *module = (mca_coll_ohio_module_t *)base;
  if (NULL == comm->c_coll->coll_alltoall || NULL == comm->c_coll->coll_alltoallv ||
      NULL == comm->c_coll->coll_alltoallw || NULL == comm->c_coll->coll_ialltoall ||
      NULL == comm->c_coll->coll_ialltoallv || NULL == comm->c_coll->coll_alltoall_init) {
    return OMPI_ERROR;
  }
  OHIO_KEEP_PREVIOUS(module, comm, alltoall);
  OHIO_KEEP_PREVIOUS(module, comm, alltoallv);
  OHIO_KEEP_PREVIOUS(module, comm, alltoallw);
  OHIO_KEEP_PREVIOUS(module, comm, ialltoall);
  OHIO_KEEP_PREVIOUS(module, comm, ialltoallv);
  OHIO_KEEP_PREVIOUS(module, comm, alltoall_init);
  return OMPI_SUCCESS;
}

static void ohio_module_construct(mca_coll_ohio_module_t *module) {
  memset(&module->comm, 0, sizeof(module->comm));
}

static void ohio_module_destruct(mca_coll_ohio_module_t *module) {
  ohio_coll_release(&module->comm);
  OHIO_RELEASE_PREVIOUS(module, alltoall);
  OHIO_RELEASE_PREVIOUS(module, alltoallv);
  OHIO_RELEASE_PREVIOUS(module, alltoallw);
  OHIO_RELEASE_PREVIOUS(module, ialltoall);
  OHIO_RELEASE_PREVIOUS(module, ialltoallv);
  OHIO_RELEASE_PREVIOUS(module, alltoall_init);
}

OBJ_CLASS_INSTANCE(mca_coll_ohio_module_t, mca_coll_base_module_t, ohio_module_construct, ohio_module_destruct);

mca_coll_base_module_t *mca_coll_ohio_comm_query(struct ompi_communicator_t *comm, int *priority) {
  /* The agreement duplicate is ohio's own, where its collectives must reach the library. An
   * intercommunicator gets a module too: the core sends its calls to the module below, counted
   * as handed back with the reason (an all-to-all between two groups is not ohio's). */
  if (ohio_coll_creating_internal_communicator() || mca_coll_ohio_component.priority < 0 ||
      mca_coll_ohio_stands_aside(comm)) {
    return NULL;
  }
  mca_coll_ohio_module_t *module = OBJ_NEW(mca_coll_ohio_module_t);
  if (NULL == module) return NULL;
  *priority = mca_coll_ohio_component.priority;
  module->super.coll_module_enable = ohio_module_enable;
  module->super.coll_alltoall = ohio_alltoall;
  module->super.coll_alltoallv = ohio_alltoallv;
  module->super.coll_alltoallw = ohio_alltoallw;
  module->super.coll_ialltoall = ohio_ialltoall;
  module->super.coll_ialltoallv = ohio_ialltoallv;
  module->super.coll_alltoall_init = mca_coll_ohio_alltoall_init;
  return &module->super;
}
