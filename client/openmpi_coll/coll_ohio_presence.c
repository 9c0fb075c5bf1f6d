/* Whether any node of the job has an ohiod, told through Open MPI's modex: with none, coll/ohio
 * gives no communicator of the job a module, so that a node where the package is installed and
 * the daemon is not running costs a job nothing, not even a set-up per communicator.
 *
 * The decision must be the same on every rank of a communicator: ranks that took a module would
 * meet in ohio's set-up collective while the others do not. One node's socket cannot decide (a
 * job may span nodes with and without ohiod), so each process posts whether its node's socket
 * is there when the component opens, before the modex, and the decision is made from every
 * rank's post: stand aside only where no rank of the job has one. A rank that has one knows at
 * once; one that has none reads the others' posts once, at the first comm_query. Every rank
 * reads the same posts, so every rank decides alike. A communicator with a process of another
 * job (MPI_Comm_connect, spawn) keeps its module, and its set-up decides as before.
 *
 * Open MPI 4.x's modex (opal_pmix). Open MPI 5 opens its components in another order around
 * its PMIx fence, untested here: there the module is always given, as before. */
#include "client/openmpi_coll/coll_ohio.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if OMPI_MAJOR_VERSION < 5
#include "ompi/group/group.h"
#include "ompi/proc/proc.h"
#include "opal/mca/pmix/pmix.h"

#define OHIO_PRESENCE_KEY "ohio.daemon_here"

/* -1: not yet read; 0: some rank of the job has an ohiod (or did not say); 1: none has. */
static int none_in_job = -1;
static uint8_t here = 1;

void mca_coll_ohio_announce_presence(void) {
  here = ohio_coll_daemon_socket_here() ? 1 : 0;
  int rc;
  OPAL_MODEX_SEND_VALUE(rc, OPAL_PMIX_GLOBAL, OHIO_PRESENCE_KEY, &here, OPAL_UINT8);
  /* Not posted: the others find no post of this rank and keep their modules, as before. */
  (void)rc;
}

/* Reads every rank's post of MPI_COMM_WORLD until one has an ohiod or did not post. */
static int no_rank_has_a_daemon(void) {
  if (here) return 0;
  ompi_group_t *world = ompi_mpi_comm_world.comm.c_local_group;
  for (int r = 0; r < ompi_group_size(world); ++r) {
    opal_process_name_t name = ompi_group_get_proc_name(world, r);
    uint8_t theirs = 1, *at = &theirs;
    int rc;
    OPAL_MODEX_RECV_VALUE(rc, OHIO_PRESENCE_KEY, &name, &at, OPAL_UINT8);
    if (OPAL_SUCCESS != rc || theirs) return 0;
  }
  return 1;
}

/* Whether every process of the intracommunicator is of this job. */
static bool all_of_this_job(struct ompi_communicator_t *comm) {
  ompi_group_t *group = comm->c_local_group;
  for (int r = 0; r < ompi_group_size(group); ++r) {
    if (ompi_group_get_proc_name(group, r).jobid != OMPI_PROC_MY_NAME->jobid) return false;
  }
  return true;
}

bool mca_coll_ohio_stands_aside(struct ompi_communicator_t *comm) {
  int none = __atomic_load_n(&none_in_job, __ATOMIC_ACQUIRE);
  if (none < 0) {
    /* Two threads creating communicators at once may both read: they find the same. */
    none = no_rank_has_a_daemon();
    __atomic_store_n(&none_in_job, none, __ATOMIC_RELEASE);
    const char *stats = getenv("OHIO_STATS");
    if (none && NULL != stats && 0 == strcmp(stats, "1") && 0 == ompi_comm_rank(&ompi_mpi_comm_world.comm)) {
      fprintf(stderr, "ohio: no node of this job has an ohiod: coll/ohio left every communicator to the other "
                      "collective components\n");
    }
  }
  return none && !OMPI_COMM_IS_INTER(comm) && all_of_this_job(comm);
}
#else
void mca_coll_ohio_announce_presence(void) {}
bool mca_coll_ohio_stands_aside(struct ompi_communicator_t *comm) {
  (void)comm;
  return false;
}
#endif
