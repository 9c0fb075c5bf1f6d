/* The component Open MPI finds as mca_coll_ohio_component in mca_coll_ohio.so: its MCA
 * parameters, and what it does when Open MPI opens and closes it. */
#include "client/openmpi_coll/coll_ohio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/mca/base/mca_base_var.h"

/* The collective framework's version of the Open MPI the component is built for: Open MPI takes
 * a collective component of its own version only, whatever else is in the component path. */
#if OMPI_MAJOR_VERSION >= 5
#define OHIO_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_4_0
#else
#define OHIO_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0
#endif

/* Above every collective component Open MPI 4.1 and 5.0 ship (tuned 30, han 35, hcoll 90): ohio's module takes
 * only the all-to-all functions it serves, and every call of theirs it does not serve goes to
 * the module it went above, which is then the best that was there. */
#define OHIO_DEFAULT_PRIORITY 95

/* Each OHIO_* setting of ohio's client library and of the LD_PRELOAD shim, as the MCA parameter
 * coll_ohio_<name>. Unset, a parameter shows the environment variable's value (or nothing); set
 * (--mca, OMPI_MCA_coll_ohio_<name>, an MCA parameter file), it is exported as the variable when
 * the component opens, so the client library reads the same value either way. */
typedef struct ohio_setting {
  const char *name;
  const char *variable;
  const char *description;
  char *value;
} ohio_setting;

static ohio_setting settings[] = {
    {"disable", "OHIO_DISABLE", "1: every call goes to the next collective component (OHIO_DISABLE)", NULL},
    {"stats", "OHIO_STATS", "1: at MPI_Finalize rank 0 prints, per function, the calls ohiod served and those that "
                            "went to the next component, with rank 0's reasons (OHIO_STATS)", NULL},
    {"quiet", "OHIO_QUIET", "1: no warning when a call goes to the next component (OHIO_QUIET)", NULL},
    {"socket", "OHIO_SOCKET", "ohiod's control socket; default /run/ohio/ohiod.sock (OHIO_SOCKET)", NULL},
    {"timeout_ms", "OHIO_TIMEOUT_MS", "how long connecting to ohiod and joining a group may take, in milliseconds; default 60000 (OHIO_TIMEOUT_MS)", NULL},
    {"selection", "OHIO_SELECTION",
     "table (default): the selection table ohiod hands out decides which calls ohio serves and which go to the next "
     "component; always: ohio serves every call it can (OHIO_SELECTION)", NULL},
    {"ialltoall_min_bytes", "OHIO_IALLTOALL_MIN_BYTES",
     "from how many bytes per rank ohiod moves an MPI_Ialltoall (and, set at all, every MPI_Ialltoallv), instead of "
     "the selection table's verdict; unset, the table decides (OHIO_IALLTOALL_MIN_BYTES)", NULL},
    {"design", "OHIO_DESIGN", "the node-level design asked of ohiod: v1, v2 or v3; unset, the daemon's default (OHIO_DESIGN)", NULL},
    {"algorithm", "OHIO_ALGORITHM", "the former name of coll_ohio_design (OHIO_ALGORITHM), still read", NULL},
    {"internode_algorithm", "OHIO_INTERNODE_ALGORITHM", "the inter-node algorithm every call of the job uses, instead of the daemons' inter-node table (OHIO_INTERNODE_ALGORITHM)", NULL},
    {"spin_us", "OHIO_SPIN_US", "how long a waiting rank spins before it sleeps, in microseconds; default 200, 0 never spins (OHIO_SPIN_US)",
     NULL},
    {"spin_max_us", "OHIO_SPIN_MAX_US", "the most a rank spins while waiting, in microseconds (OHIO_SPIN_MAX_US)",
     NULL},
    {"single_copy_bytes", "OHIO_SINGLE_COPY_BYTES",
     "from how many bytes per rank ranks on one node copy from each other's memory (OHIO_SINGLE_COPY_BYTES)", NULL},
    {"stage_times", "OHIO_STAGE_TIMES", "1: print each call's stage times (OHIO_STAGE_TIMES)", NULL},
    {"serve_thread_multiple", "OHIO_SERVE_THREAD_MULTIPLE",
     "1 (default): serve a job initialised with MPI_THREAD_MULTIPLE (threads calling alltoalls on different "
     "communicators at once progress independently); 0: leave such a job to the next component "
     "(OHIO_SERVE_THREAD_MULTIPLE)", NULL},
};
#define OHIO_SETTING_COUNT (sizeof(settings) / sizeof(settings[0]))

/* Whether the Open MPI that loaded the component is the release (major.minor) it was built
 * against. A component built for 4.1 is refused by 5.0 (and the other way round) before this
 * runs: the framework versions differ, and each is linked to its release's libopen-pal (.so.40,
 * .so.80). This catches the releases that share both, whose internal structures still differ
 * (4.0 and 4.1), and says what is wrong. */
static bool ohio_built_for_this_open_mpi(void) {
  char library[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  int major = -1;
  int minor = -1;
  if (MPI_SUCCESS != PMPI_Get_library_version(library, &length) ||
      2 != sscanf(library, "Open MPI v%d.%d", &major, &minor)) {
    major = minor = -1;
  }
  if (OMPI_MAJOR_VERSION == major && OMPI_MINOR_VERSION == minor) return true;
  fprintf(stderr,
          "coll/ohio: built for Open MPI %d.%d, but this is %.40s: not used (install the ohio package built for this "
          "Open MPI)\n",
          OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, major < 0 ? "an Open MPI whose version it cannot read" : library);
  return false;
}

/* The priority's scope and flag let a program write it through MPI_T (MPI_T_cvar_write) between
 * communicator creations: comm_query reads it for each new communicator, so a program can leave
 * one communicator to the MPI library's own components, and a benchmark can time ohio's and the
 * library's calls in one job. ALL_EQ: every rank must write the same value, or the ranks of one
 * communicator would disagree about whether ohio serves it. */
static int ohio_register(void) {
  if (!ohio_built_for_this_open_mpi()) return OMPI_ERR_NOT_SUPPORTED;
  mca_coll_ohio_component.priority = OHIO_DEFAULT_PRIORITY;
  (void)mca_base_component_var_register(&mca_coll_ohio_component.super.collm_version, "priority",
                                        "Priority of coll/ohio (negative: never chosen); above tuned (30), han (35) and hcoll "
                                        "(90) by default, which serve what ohio does not. A program may write it "
                                        "through MPI_T, alike on every rank: communicators created while it is "
                                        "negative are left to the other components",
                                        MCA_BASE_VAR_TYPE_INT, NULL, 0, MCA_BASE_VAR_FLAG_SETTABLE, OPAL_INFO_LVL_5,
                                        MCA_BASE_VAR_SCOPE_ALL_EQ, &mca_coll_ohio_component.priority);
  for (size_t i = 0; i < OHIO_SETTING_COUNT; ++i) {
    const char *from_environment = getenv(settings[i].variable);
    settings[i].value = (char *)(NULL != from_environment ? from_environment : "");
    (void)mca_base_component_var_register(&mca_coll_ohio_component.super.collm_version, settings[i].name,
                                          settings[i].description, MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0,
                                          OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY, &settings[i].value);
  }
  return OMPI_SUCCESS;
}

static int ohio_open(void) {
  if (mca_coll_ohio_component.priority < 0) return OMPI_SUCCESS;
  for (size_t i = 0; i < OHIO_SETTING_COUNT; ++i) {
    if (NULL != settings[i].value && '\0' != settings[i].value[0]) setenv(settings[i].variable, settings[i].value, 1);
  }
  /* Open MPI opens the collective components before its modex: the post reaches every rank. */
  mca_coll_ohio_announce_presence();
  return OMPI_SUCCESS;
}

static int ohio_close(void) {
  mca_coll_ohio_request_stop_progress();
  mca_coll_ohio_persistent_stop_progress();
  return OMPI_SUCCESS;
}

/* The core serves threads on different communicators at once (docs/ARCHITECTURE.md, the client's
 * threading model), so a job initialised with MPI_THREAD_MULTIPLE is served, unless
 * serve_thread_multiple is 0: then every collective goes to the other components (a preloaded
 * shim, unmarked, leaves them to the library likewise, and says so in OHIO_STATS). */
static int ohio_init_query(bool enable_progress_threads, bool enable_mpi_threads) {
  (void)enable_progress_threads;
  const char *serve = getenv("OHIO_SERVE_THREAD_MULTIPLE");
  const bool serve_threads = NULL == serve || 0 != strcmp(serve, "0");
  if ((enable_mpi_threads && !serve_threads) || mca_coll_ohio_component.priority < 0) return OMPI_ERR_NOT_SUPPORTED;
  ohio_coll_opened();
  return OMPI_SUCCESS;
}

mca_coll_ohio_component_t mca_coll_ohio_component = {
    .super =
        {
            .collm_version =
                {
                    OHIO_COLL_BASE_VERSION,
                    .mca_component_name = "ohio",
                    MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
                                          OMPI_RELEASE_VERSION),
                    .mca_open_component = ohio_open,
                    .mca_close_component = ohio_close,
                    .mca_register_component_params = ohio_register,
                },
            .collm_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
            .collm_init_query = ohio_init_query,
            .collm_comm_query = mca_coll_ohio_comm_query,
        },
    .priority = OHIO_DEFAULT_PRIORITY,
};
