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
 * Why the post reaches every rank, in both Open MPI releases the component is built for:
 * - 4.1: ompi_mpi_init opens the coll framework (mca_base_framework_open, which calls each
 *   component's open) before its opal_pmix.commit and fence.
 * - 5.0 (checked against v5.0.7, Debian 13's, and the v5.0.x branch): MPI_Init and
 *   MPI_Session_init both start in ompi_mpi_instance_init_common (ompi/instance/instance.c,
 *   once per process), which opens ompi_framework_dependencies, ompi_coll_base_framework among
 *   them (its open is mca_base_framework_components_open: each component's open), then calls
 *   PMIx_Commit and PMIx_Fence_nb with PMIX_COLLECT_DATA (or, with pmix_base_async_modex, runs
 *   the fence in the background and waits for it before returning; with async modex and no
 *   collection, a Get fetches the post from its node on demand). ompi_mpi_init fences again
 *   after that; communicators get their modules after both (mca_coll_base_comm_select). So
 *   OPAL_MODEX_SEND_VALUE, a PMIx_Put with scope PMIX_GLOBAL, in the component's open is
 *   committed and exchanged like the PML's own posts, and OPAL_MODEX_RECV_VALUE (PMIx_Get,
 *   which asks the local PMIx server when the post is not held locally) finds it on every rank.
 *   The optional and immediate forms could not do: they look only at what this rank happens to
 *   hold, which under a direct modex differs between ranks. */
#include "client/openmpi_coll/coll_ohio.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/group/group.h"
#include "ompi/proc/proc.h"
#if OMPI_MAJOR_VERSION >= 5
#include "opal/mca/pmix/pmix-internal.h"
#define OHIO_PRESENCE_SCOPE PMIX_GLOBAL
#define OHIO_PRESENCE_TYPE PMIX_UINT8
#define OHIO_PRESENCE_FOUND PMIX_SUCCESS
#else
#include "opal/mca/pmix/pmix.h"
#define OHIO_PRESENCE_SCOPE OPAL_PMIX_GLOBAL
#define OHIO_PRESENCE_TYPE OPAL_UINT8
#define OHIO_PRESENCE_FOUND OPAL_SUCCESS
#endif

#define OHIO_PRESENCE_KEY "ohio.daemon_here"

/* -1: not yet read; 0: some rank of the job has an ohiod (or did not say); 1: none has. */
static int none_in_job = -1;
static uint8_t here = 1;

void mca_coll_ohio_announce_presence(void) {
  here = ohio_coll_daemon_socket_here() ? 1 : 0;
  int rc;
  OPAL_MODEX_SEND_VALUE(rc, OHIO_PRESENCE_SCOPE, OHIO_PRESENCE_KEY, &here, OHIO_PRESENCE_TYPE);
  /* Not posted: the others find no post of this rank and keep their modules, as before. */
  (void)rc;
}

/* Reads every process's post of this job (its ranks are the vpids below the job's size, with or
 * without an MPI_COMM_WORLD: a job of MPI sessions has none) until one has an ohiod or did not
 * post. */
static int no_rank_has_a_daemon(void) {
  if (here) return 0;
  const int job_size = ompi_proc_world_size();
  for (int r = 0; r < job_size; ++r) {
    opal_process_name_t name = {.jobid = OMPI_PROC_MY_NAME->jobid, .vpid = (opal_vpid_t)r};
    uint8_t theirs = 1, *at = &theirs;
    int rc;
    OPAL_MODEX_RECV_VALUE(rc, OHIO_PRESENCE_KEY, &name, &at, OHIO_PRESENCE_TYPE);
    if (OHIO_PRESENCE_FOUND != rc || theirs) return 0;
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
    if (none && NULL != stats && 0 == strcmp(stats, "1") && 0 == OMPI_PROC_MY_NAME->vpid) {
      fprintf(stderr, "ohio: no node of this job has an ohiod: coll/ohio left every communicator to the other "
                      "collective components\n");
    }
  }
  return none && !OMPI_COMM_IS_INTER(comm) && all_of_this_job(comm);
}
