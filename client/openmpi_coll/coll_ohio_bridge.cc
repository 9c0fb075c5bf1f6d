// The component's side of the shared core (client/mpi/served_calls.h): the state lives in the
// module (coll_ohio_bridge.h ohio_coll_comm), what ohio does not serve goes to the module below.
#include "client/openmpi_coll/coll_ohio_bridge.h"

#include <sys/stat.h>

#include <cstdlib>
#include <memory>
#include <mutex>

#include "client/libohio/ohio.h"
#include "client/mpi/component_mark.h"
#include "client/mpi/hand_back_at_once.h"
#include "client/mpi/mpi_nonblocking_request.h"
#include "client/mpi/mpi_shim_state.h"
#include "client/mpi/served_calls.h"

using namespace ohio::shim;

namespace {

// At MPI_Finalize, before anything is torn down (the attributes of MPI_COMM_SELF are deleted
// first): OHIO_STATS's report and every group left, as the shim's MPI_Finalize does.
int AtFinalize(MPI_Comm, int, void*, void*) {
  ReportAndLeave();
  return MPI_SUCCESS;
}

void WatchFinalize() {
  static std::once_flag watching;  // the first communicator set up, from whichever thread
  std::call_once(watching, [] {
    int keyval = MPI_KEYVAL_INVALID;
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, AtFinalize, &keyval, nullptr);
    PMPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr);
  });
}

StateFor StateIn(ohio_coll_comm* c, MPI_Comm comm) {
  return [c, comm](uint64_t first_bytes) {
    if (c->state != nullptr) return static_cast<CommState*>(c->state);
    WatchFinalize();
    return SetUp(comm, first_bytes, [c](CommState* st) { c->state = st; });
  };
}

// Whether the communicator, set up already without a group, is handed back at once
// (client/mpi/hand_back_at_once.h).
bool NoGroupHandsBackAtOnce(ohio_coll_comm* c, FunctionIndex function) {
  return c->state != nullptr && ohio::shim::NoGroupHandsBackAtOnce(static_cast<CommState*>(c->state), function);
}

Start StartIn(MPI_Comm comm, MPI_Request* request) {
  return [comm, request](std::unique_ptr<OhioRequest> r) {
    const int rc = mca_coll_ohio_request_start(r.get(), comm, request);
    if (rc == MPI_SUCCESS) r.release();
    return rc;
  };
}

}  // namespace

extern "C" {

int ohio_coll_alltoall(ohio_coll_comm* c, const void* sbuf, int scount, MPI_Datatype sdtype, void* rbuf, int rcount,
                       MPI_Datatype rdtype, MPI_Comm comm) {
  const ohio_coll_previous& p = c->previous;
  if (AlltoallGoesToLibraryAtOnce(static_cast<CommState*>(c->state), kIndexAlltoall, ohio::SelectedFunction::kAlltoall,
                                  sbuf == MPI_IN_PLACE, scount, sdtype, rcount, rdtype)) {
    return p.alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, p.alltoall_module);
  }
  return ServeAlltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, StateIn(c, comm), [&] {
    return p.alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, p.alltoall_module);
  });
}

int ohio_coll_alltoallv(ohio_coll_comm* c, const void* sbuf, const int* scounts, const int* sdisps,
                        MPI_Datatype sdtype, void* rbuf, const int* rcounts, const int* rdisps, MPI_Datatype rdtype,
                        MPI_Comm comm) {
  const ohio_coll_previous& p = c->previous;
  if (NoGroupHandsBackAtOnce(c, kIndexAlltoallv)) {
    return p.alltoallv(sbuf, scounts, sdisps, sdtype, rbuf, rcounts, rdisps, rdtype, comm, p.alltoallv_module);
  }
  return ServeAlltoallv(sbuf, scounts, sdisps, sdtype, rbuf, rcounts, rdisps, rdtype, comm, StateIn(c, comm), [&] {
    return p.alltoallv(sbuf, scounts, sdisps, sdtype, rbuf, rcounts, rdisps, rdtype, comm, p.alltoallv_module);
  });
}

int ohio_coll_alltoallw(ohio_coll_comm* c, const void* sbuf, const int* scounts, const int* sdisps,
                        MPI_Datatype const* sdtypes, void* rbuf, const int* rcounts, const int* rdisps,
                        MPI_Datatype const* rdtypes, MPI_Comm comm) {
  const ohio_coll_previous& p = c->previous;
  if (NoGroupHandsBackAtOnce(c, kIndexAlltoallw)) {
    return p.alltoallw(sbuf, scounts, sdisps, sdtypes, rbuf, rcounts, rdisps, rdtypes, comm, p.alltoallw_module);
  }
  return ServeAlltoallw(sbuf, scounts, sdisps, sdtypes, rbuf, rcounts, rdisps, rdtypes, comm, StateIn(c, comm), [&] {
    return p.alltoallw(sbuf, scounts, sdisps, sdtypes, rbuf, rcounts, rdisps, rdtypes, comm, p.alltoallw_module);
  });
}

int ohio_coll_ialltoall(ohio_coll_comm* c, const void* sbuf, int scount, MPI_Datatype sdtype, void* rbuf, int rcount,
                        MPI_Datatype rdtype, MPI_Comm comm, MPI_Request* request) {
  const ohio_coll_previous& p = c->previous;
  if (AlltoallGoesToLibraryAtOnce(static_cast<CommState*>(c->state), kIndexIalltoall,
                                  ohio::SelectedFunction::kIalltoall, sbuf == MPI_IN_PLACE, scount, sdtype, rcount,
                                  rdtype)) {
    return p.ialltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request, p.ialltoall_module);
  }
  return StartNonblockingAlltoall(
      sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, "MPI_Ialltoall", StateIn(c, comm),
      [&] { return p.ialltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request, p.ialltoall_module); },
      StartIn(comm, request));
}

int ohio_coll_ialltoallv(ohio_coll_comm* c, const void* sbuf, const int* scounts, const int* sdisps,
                         MPI_Datatype sdtype, void* rbuf, const int* rcounts, const int* rdisps, MPI_Datatype rdtype,
                         MPI_Comm comm, MPI_Request* request) {
  const ohio_coll_previous& p = c->previous;
  if (NoGroupHandsBackAtOnce(c, kIndexIalltoallv)) {
    return p.ialltoallv(sbuf, scounts, sdisps, sdtype, rbuf, rcounts, rdisps, rdtype, comm, request,
                        p.ialltoallv_module);
  }
  return ServeIalltoallv(
      sbuf, scounts, sdisps, sdtype, rbuf, rcounts, rdisps, rdtype, comm, StateIn(c, comm),
      [&] {
        return p.ialltoallv(sbuf, scounts, sdisps, sdtype, rbuf, rcounts, rdisps, rdtype, comm, request,
                            p.ialltoallv_module);
      },
      StartIn(comm, request));
}

int ohio_coll_start_alltoall(ohio_coll_comm* c, const void* sbuf, int scount, MPI_Datatype sdtype, void* rbuf,
                             int rcount, MPI_Datatype rdtype, MPI_Comm comm, MPI_Request library,
                             MPI_Request* started) {
  return StartNonblockingAlltoall(
      sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, "MPI_Alltoall_init", StateIn(c, comm),
      [&] {
        *started = library;
        return PMPI_Start(started);
      },
      StartIn(comm, started));
}

void ohio_coll_release(ohio_coll_comm* c) {
  if (c->state != nullptr) Release(static_cast<CommState*>(c->state));
  c->state = nullptr;
}

void ohio_coll_opened(void) {
  MarkComponentServes();
  P().call_errhandler = false;
  P().binding = "Open MPI's collective component coll/ohio";
}

bool ohio_coll_daemon_socket_here(void) {
  const char* env = std::getenv("OHIO_SOCKET");
  struct stat st;
  return stat(env != nullptr && *env != '\0' ? env : OHIO_DEFAULT_SOCKET, &st) == 0 && S_ISSOCK(st.st_mode);
}

bool ohio_coll_creating_internal_communicator(void) { return InternalCommunicator::Creating(); }

bool ohio_coll_nonblocking_finish(void* call, int* error) {
  auto* r = static_cast<OhioRequest*>(call);
  if (!Finish(r, 0)) return false;
  *error = r->error;
  return true;
}

void ohio_coll_nonblocking_release(void* call) { delete static_cast<OhioRequest*>(call); }

}  // extern "C"
