/* coll/ohio: ohio as an Open MPI collective component (mca_coll_ohio.so). Open MPI's MPI
 * functions, from every language binding, end in the communicator's table of collective
 * functions; this component puts ohio's MPI_Alltoall, Alltoallv, Alltoallw, Ialltoall,
 * Ialltoallv and the persistent MPI_Alltoall_init (Open MPI 4.1's MPIX_Alltoall_init) there,
 * above the module that had them, and hands that module every call ohio does not serve. Open MPI
 * loads it from its component path, chooses it by the MCA parameters coll_ohio_* and lists it in
 * ompi_info.
 *
 * Built once per Open MPI: for Debian 12's 4.1 (client/openmpi_coll:mca_coll_ohio.so) and
 * Debian 13's 5.0 (client/openmpi_coll/openmpi5:mca_coll_ohio.so). A component built for one
 * is refused by the other (coll_ohio_component.c).
 *
 * The serving itself is the shared core's (client/mpi/served_calls.h), reached through
 * coll_ohio_bridge.h; these C files are what Open MPI's internal headers are needed for. */
#ifndef OHIO_CLIENT_OPENMPI_COLL_COLL_OHIO_H
#define OHIO_CLIENT_OPENMPI_COLL_COLL_OHIO_H

#include "ompi_config.h"

#include "client/openmpi_coll/coll_ohio_bridge.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/request/request.h"

BEGIN_C_DECLS

typedef struct mca_coll_ohio_component_t {
  mca_coll_base_component_t super; /* 2.0.0 in Open MPI 4.1, 2.4.0 in 5.0 */
  int priority; /* coll_ohio_priority */
} mca_coll_ohio_component_t;

OMPI_DECLSPEC extern mca_coll_ohio_component_t mca_coll_ohio_component;

/* One per communicator ohio serves, living and dying with it. */
typedef struct mca_coll_ohio_module_t {
  mca_coll_base_module_t super;
  ohio_coll_comm comm;
} mca_coll_ohio_module_t;

OBJ_CLASS_DECLARATION(mca_coll_ohio_module_t);

/* The component's comm_query: a module for every intracommunicator but ohio's own. */
mca_coll_base_module_t *mca_coll_ohio_comm_query(struct ompi_communicator_t *comm, int *priority);

/* coll_ohio_presence.c: when the component opens, this process posts through the modex whether
 * its node's ohiod socket is there; comm_query then stands aside for a communicator of this job
 * when no rank of the job has one (Open MPI 4.1 and 5.0 alike). */
void mca_coll_ohio_announce_presence(void);
bool mca_coll_ohio_stands_aside(struct ompi_communicator_t *comm);

/* Unregisters the progress of ohio's requests if it is still registered (component close). */
void mca_coll_ohio_request_stop_progress(void);

/* The module's MPI_Alltoall_init: a persistent request of ohio's (coll_ohio_persistent.c). */
int mca_coll_ohio_alltoall_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                struct ompi_info_t *info, ompi_request_t **request, mca_coll_base_module_t *module);
/* Likewise for the progress of ohio's persistent requests. */
void mca_coll_ohio_persistent_stop_progress(void);

END_C_DECLS

#endif
