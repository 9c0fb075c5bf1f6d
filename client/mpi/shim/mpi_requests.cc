#include "client/mpi/shim/mpi_requests.h"

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace ohio::shim {
namespace {

// Requests of ohio's that the MPI library has not freed yet, by handle, from every thread:
// the map under its lock (held for a lookup or an update only), its size also as an atomic, so
// that a Wait with none of ohio's outstanding takes no lock.
struct RequestTable {
  std::mutex mu;
  std::map<MPI_Request, OhioRequest*> requests;
  std::atomic<size_t> outstanding{0};
};
RequestTable& Requests() {
  static RequestTable table;
  return table;
}

// MPI_Alltoall_init's persistent requests, likewise.
struct PersistentTable {
  std::mutex mu;
  std::map<MPI_Request, PersistentAlltoall> persistents;
  std::atomic<size_t> count{0};
};
PersistentTable& Persistents() {
  static PersistentTable table;
  return table;
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
  RequestTable& t = Requests();
  {
    const std::lock_guard<std::mutex> lock(t.mu);
    t.requests.erase(r->handle);
    t.outstanding.store(t.requests.size(), std::memory_order_release);
  }
  delete r;
  return MPI_SUCCESS;
}

// MPI_Cancel of a request of ohio's is refused before it reaches the library (mpi_request_free.cc).
int Cancel(void*, int) { return MPI_SUCCESS; }

}  // namespace

void RememberPersistent(MPI_Request request, const PersistentAlltoall& call) {
  PersistentTable& t = Persistents();
  const std::lock_guard<std::mutex> lock(t.mu);
  t.persistents[request] = call;
  t.count.store(t.persistents.size(), std::memory_order_release);
}

std::optional<PersistentAlltoall> FindPersistent(MPI_Request request) {
  PersistentTable& t = Persistents();
  if (t.count.load(std::memory_order_acquire) == 0) return std::nullopt;
  const std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.persistents.find(request);
  if (it == t.persistents.end()) return std::nullopt;
  return it->second;
}

void ForgetPersistent(MPI_Request request) {
  PersistentTable& t = Persistents();
  if (t.count.load(std::memory_order_acquire) == 0) return;
  const std::lock_guard<std::mutex> lock(t.mu);
  t.persistents.erase(request);
  t.count.store(t.persistents.size(), std::memory_order_release);
}

int StartRequest(std::unique_ptr<OhioRequest> r, MPI_Request* request) {
  const int rc = PMPI_Grequest_start(Query, Free, Cancel, r.get(), request);
  if (rc != MPI_SUCCESS) return rc;
  r->handle = *request;
  RequestTable& t = Requests();
  const std::lock_guard<std::mutex> lock(t.mu);
  t.requests[*request] = r.release();
  t.outstanding.store(t.requests.size(), std::memory_order_release);
  return MPI_SUCCESS;
}

OhioRequest* Find(MPI_Request request) {
  if (request == MPI_REQUEST_NULL || !AnyOutstanding()) return nullptr;
  RequestTable& t = Requests();
  const std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.requests.find(request);
  return it == t.requests.end() ? nullptr : it->second;
}

bool AnyOutstanding() { return Requests().outstanding.load(std::memory_order_acquire) != 0; }

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
