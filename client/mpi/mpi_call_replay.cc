#include "client/mpi/mpi_call_replay.h"

#include <climits>
#include <cstring>

#include "client/mpi/mpi_shim_state.h"

namespace ohio::shim {

namespace {

bool FitsAnInt(const size_t* values, int size) {
  for (int j = 0; j < size; ++j) {
    if (values[j] > static_cast<size_t>(INT_MAX)) return false;
  }
  return true;
}

// Whether this rank can take part in running call `call` again: its send side kept, and, if it
// lags, somewhere to receive; PMPI_Alltoallv takes int counts and displacements.
bool CanTakePart(const RetainedSend* kept, bool lagging, const Delivery* delivery, int size) {
  if (kept == nullptr || kept->count.size() != static_cast<size_t>(size)) return false;
  if (!FitsAnInt(kept->count.data(), size) || !FitsAnInt(kept->at.data(), size)) return false;
  if (!lagging) return true;
  return delivery != nullptr && FitsAnInt(delivery->count, size) && FitsAnInt(delivery->at, size);
}

// Where the current call's send side is kept, or null where no replay can need it (a group on
// one node, or errors that end the job): nothing is kept then, earlier calls forgotten.
RetainedSend* SlotOfThisCall(CommState* st, MPI_Comm comm) {
  if (st->nodes < 2 || !ErrorsReturn(comm)) {
    st->retained[0].call = st->retained[1].call = 0;
    return nullptr;
  }
  return &st->retained[st->calls % 2];
}

}  // namespace

bool ErrorsReturn(MPI_Comm comm) {
  MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
  if (PMPI_Comm_get_errhandler(comm, &handler) != MPI_SUCCESS) return false;
  bool fatal = handler == MPI_ERRORS_ARE_FATAL;
#ifdef MPI_ERRORS_ABORT
  fatal = fatal || handler == MPI_ERRORS_ABORT;
#endif
  // The handle is a new reference (MPI's rule for MPI_Comm_get_errhandler), predefined or not.
  PMPI_Errhandler_free(&handler);
  return !fatal;
}

void Retain(CommState* st, MPI_Comm comm, int size, const void* send, const size_t* count, const size_t* at) {
  RetainedSend* kept = SlotOfThisCall(st, comm);
  if (kept == nullptr) return;
  RetainedSend& slot = *kept;
  slot.count.assign(count, count + size);
  slot.at.resize(size);
  size_t total = 0;
  for (int j = 0; j < size; ++j) {
    slot.at[j] = total;
    total += count[j];
  }
  slot.bytes.resize(total);
  for (int j = 0; j < size; ++j) {
    if (count[j] != 0) std::memcpy(slot.bytes.data() + slot.at[j], static_cast<const uint8_t*>(send) + at[j], count[j]);
  }
  slot.call = st->calls;
}

void RetainUniform(CommState* st, MPI_Comm comm, int size, const void* send, size_t bytes) {
  RetainedSend* kept = SlotOfThisCall(st, comm);
  if (kept == nullptr) return;
  RetainedSend& slot = *kept;
  slot.count.assign(size, bytes);
  slot.at.resize(size);
  for (int j = 0; j < size; ++j) slot.at[j] = static_cast<size_t>(j) * bytes;
  slot.bytes.resize(static_cast<size_t>(size) * bytes);
  if (!slot.bytes.empty()) std::memcpy(slot.bytes.data(), send, slot.bytes.size());
  slot.call = st->calls;
}

const RetainedSend* Kept(const CommState* st, uint64_t call) {
  if (call == 0) return nullptr;
  const RetainedSend& slot = st->retained[call % 2];
  return slot.call == call ? &slot : nullptr;
}

void PutBack(const RetainedSend& kept, void* base, const size_t* at) {
  for (size_t j = 0; j < kept.count.size(); ++j) {
    if (kept.count[j] != 0) std::memcpy(static_cast<uint8_t*>(base) + at[j], kept.bytes.data() + kept.at[j], kept.count[j]);
  }
}

bool ReplayForLaggingRanks(CommState* st, uint64_t call, bool lagging, const Delivery* delivery) {
  int size = 0;
  PMPI_Comm_size(st->agreement, &size);
  const RetainedSend* kept = Kept(st, call);
  // One exchange tells every rank who lags and whether all can take part.
  int mine[2] = {lagging ? 1 : 0, CanTakePart(kept, lagging, delivery, size) ? 1 : 0};
  std::vector<int> all(2 * static_cast<size_t>(size));
  if (PMPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, st->agreement) != MPI_SUCCESS) return false;
  for (int j = 0; j < size; ++j) {
    if (all[2 * j + 1] == 0) return false;
  }
  // Only the lagging ranks receive: the others hold the call's result already.
  std::vector<int> send_count(size), send_at(size), recv_count(size, 0), recv_at(size, 0);
  for (int j = 0; j < size; ++j) {
    send_count[j] = all[2 * j] != 0 ? static_cast<int>(kept->count[j]) : 0;
    send_at[j] = static_cast<int>(kept->at[j]);
    if (lagging) {
      recv_count[j] = static_cast<int>(delivery->count[j]);
      recv_at[j] = static_cast<int>(delivery->at[j]);
    }
  }
  static uint8_t nothing;  // where a rank that receives nothing points the library
  void* recv = lagging ? delivery->recv : &nothing;
  const void* send = kept->bytes.empty() ? &nothing : static_cast<const void*>(kept->bytes.data());
  if (PMPI_Alltoallv(send, send_count.data(), send_at.data(), MPI_BYTE, recv, recv_count.data(), recv_at.data(),
                     MPI_BYTE, st->agreement) != MPI_SUCCESS) {
    return false;
  }
  if (lagging && delivery->finish) delivery->finish();
  return true;
}

}  // namespace ohio::shim
