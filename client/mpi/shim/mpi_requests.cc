#include "client/mpi/shim/mpi_requests.h"

#include <map>
#include <string>

namespace ohio::shim {
namespace {

// Requests of ohio's that the MPI library has not freed yet, by handle.
std::map<MPI_Request, OhioRequest*>& Requests() {
  static std::map<MPI_Request, OhioRequest*> requests;
  return requests;
}

int Query(void* extra_state, MPI_Status* status) {
  auto* r = static_cast<OhioRequest*>(extra_state);
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  status->MPI_ERROR = r->error;
  return r->error;
}

int Free(void* extra_state) {
  auto* r = static_cast<OhioRequest*>(extra_state);
  Requests().erase(r->handle);
  delete r;
  return MPI_SUCCESS;
}

// MPI_Cancel of a request of ohio's is refused before it reaches the library (mpi_cancel.cc).
int Cancel(void*, int) { return MPI_SUCCESS; }

}  // namespace

std::map<MPI_Request, PersistentAlltoall>& Persistents() {
  static std::map<MPI_Request, PersistentAlltoall> persistents;
  return persistents;
}

int StartRequest(std::unique_ptr<OhioRequest> r, MPI_Request* request) {
  const int rc = PMPI_Grequest_start(Query, Free, Cancel, r.get(), request);
  if (rc != MPI_SUCCESS) return rc;
  r->handle = *request;
  Requests()[*request] = r.release();
  return MPI_SUCCESS;
}

OhioRequest* Find(MPI_Request request) {
  if (request == MPI_REQUEST_NULL) return nullptr;
  auto it = Requests().find(request);
  return it == Requests().end() ? nullptr : it->second;
}

bool AnyOutstanding() { return !Requests().empty(); }

bool TryComplete(OhioRequest* r, unsigned within_us) {
  if (r->complete) return true;
  if (!Finish(r, within_us)) return false;
  if (r->errhandler_due) MPI_Comm_call_errhandler(r->comm, r->error);
  PMPI_Grequest_complete(r->handle);
  return true;
}

int TryCompleteAll(int count, const MPI_Request* requests, unsigned within_us) {
  int incomplete = 0;
  if (!AnyOutstanding()) return 0;
  for (int i = 0; i < count; ++i) {
    OhioRequest* r = Find(requests[i]);
    if (r != nullptr && !TryComplete(r, incomplete == 0 ? within_us : 0)) ++incomplete;
  }
  return incomplete;
}

PersistentSlots::PersistentSlots(int count, const MPI_Request* requests) {
  if (!AnyOutstanding()) return;
  for (int i = 0; i < count; ++i) {
    const OhioRequest* r = Find(requests[i]);
    if (r != nullptr && r->persistent != MPI_REQUEST_NULL) slots_.emplace_back(i, r->persistent);
  }
}

void PersistentSlots::Restore(MPI_Request* requests) const {
  for (const auto& [i, persistent] : slots_) {
    if (requests[i] == MPI_REQUEST_NULL) requests[i] = persistent;
  }
}

void LetTheLibraryProgress() {
  int flag = 0;
  PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}

}  // namespace ohio::shim
