#include "client/libohio/growing_group.h"

#include "shm/plan/buffer_sizing.h"

namespace ohio {

std::string GenerationKey(const std::string& key, uint32_t generation) {
  std::string k = key;
  const uint64_t mix = uint64_t{generation} * 0x9e3779b97f4a7c15ull;  // 2^64 / golden ratio
  for (size_t i = 0; i < 8 && i < k.size(); ++i) k[k.size() - 1 - i] ^= static_cast<char>(mix >> (8 * i));
  return k;
}

Result<std::unique_ptr<GrowingGroup>> GrowingGroup::Join(ControlConnection* connection,
                                                         const control::JoinGroup& join) {
  auto handle = GroupHandle::Join(connection, join);
  if (!handle.ok()) return handle.status();
  std::unique_ptr<GrowingGroup> g(new GrowingGroup());
  g->connection_ = connection;
  g->first_join_ = join;
  g->current_ = std::move(handle).value();
  g->current_hint_ = join.bytes_per_rank_hint();
  return g;
}

Status GrowingGroup::Alltoall(const void* send, void* recv, uint64_t bytes_per_rank) {
  if (!broken_.ok()) return broken_;
  Status s = current_->Alltoall(send, recv, bytes_per_rank);
  AfterCall(s, bytes_per_rank);
  return s;
}

Status GrowingGroup::Alltoallv(const VectorCall& call) {
  if (!broken_.ok()) return broken_;
  Status s = current_->Alltoallv(call);
  if (s.code() == Code::kNotSupported && current_hint_ != 0) {
    // It did not fit the buffers sized for the hint (across nodes it would take too many rounds;
    // on one node a row its rank may not read in place), and every rank knows it alike; nobody
    // knows by how much: grow to the configured sizes and try once more.
    AfterCall(Status::Ok(), ~uint64_t{0});
    if (!broken_.ok()) return broken_;
    s = current_->Alltoallv(call);
  }
  // A call that took several rounds of buffers sized for the hint (every rank learnt how many
  // from the same verdict): the calls after it get the configured sizes, as an alltoall that
  // outgrew them would. On one node a row too large for its share is read in place.
  const bool outgrown = s.ok() && current_->spans_nodes() && current_hint_ != 0 && current_->last_vector_rounds() > 1;
  AfterCall(s, outgrown ? ~uint64_t{0} : 0);
  return s;
}

Status GrowingGroup::OptOut() {
  if (!broken_.ok()) return broken_;
  Status s = current_->OptOut();
  AfterCall(s, 0);
  return s;
}

namespace {

uint64_t RequestOf(uint32_t generation, uint32_t call) { return uint64_t{generation} << 32 | call; }

}  // namespace

Status GrowingGroup::Ialltoall(const void* send, void* recv, uint64_t bytes_per_rank, uint64_t* request) {
  if (!broken_.ok()) return broken_;
  uint32_t call = 0;
  Status s = current_->Ialltoall(send, recv, bytes_per_rank, &call);
  if (s.ok()) *request = RequestOf(generation_, call);
  // The daemon moves it from the ranks' own buffers: it needs none of the group's, and so
  // never makes the group grow.
  return s;
}

Status GrowingGroup::Ialltoallv(const VectorCall& vector, uint64_t* request) {
  if (!broken_.ok()) return broken_;
  uint32_t call = 0;
  Status s = current_->Ialltoallv(vector, &call);
  if (s.ok()) *request = RequestOf(generation_, call);
  return s;  // moved from the ranks' own buffers, as Ialltoall: no growth
}

Status GrowingGroup::Test(uint64_t request, bool* done, std::chrono::microseconds within) {
  *done = false;
  const auto generation = static_cast<uint32_t>(request >> 32);
  const auto call = static_cast<uint32_t>(request);
  if (generation == generation_) return current_->IalltoallTest(call, done, within);
  if (outgrown_ && generation == outgrown_generation_) return outgrown_->IalltoallTest(call, done, within);
  auto settled = settled_.find(request);
  if (settled == settled_.end()) {
    return Status(Code::kInvalidArgument, "no nonblocking alltoall " + std::to_string(request) + " is outstanding");
  }
  *done = true;
  Status s = settled->second;
  settled_.erase(settled);
  return s;
}

Status GrowingGroup::Wait(uint64_t request) {
  const auto generation = static_cast<uint32_t>(request >> 32);
  const auto call = static_cast<uint32_t>(request);
  if (generation == generation_) return current_->IalltoallWait(call);
  if (outgrown_ && generation == outgrown_generation_) return outgrown_->IalltoallWait(call);
  bool done = false;
  return Test(request, &done, std::chrono::microseconds(0));
}

void GrowingGroup::AfterCall(const Status& result, uint64_t agreed_bytes_per_rank) {
  if (outgrown_) {
    // Every rank has started the old group's nonblocking calls (it arrived at this call after
    // them): the daemon moves them whatever the ranks do, so settling them waits for no rank.
    for (auto& [call, outcome] : outgrown_->SettleIalltoalls()) settled_.emplace(RequestOf(outgrown_generation_, call), outcome);
    outgrown_->Leave();  // its last call is over on every rank (see the header)
    outgrown_.reset();
  }
  if (!result.ok() || !OutgrownBy(current_hint_, agreed_bytes_per_rank)) return;
  control::JoinGroup next = first_join_;
  // The outgrown generation is held until the first call on the next: the daemon leaves it
  // out of this uid's limits, so growth does not fail at user-max-groups.
  next.set_replaces_key(generation_ == 0 ? first_join_.key() : GenerationKey(first_join_.key(), generation_));
  next.set_key(GenerationKey(first_join_.key(), ++generation_));
  next.set_bytes_per_rank_hint(HintClassFor(agreed_bytes_per_rank));
  auto joined = GroupHandle::Join(connection_, next);
  if (!joined.ok()) {
    // The other ranks have joined the larger group and will find this rank missing there.
    broken_ = Status(joined.status().code(), "joining the group again with buffers for " +
                                                 std::to_string(agreed_bytes_per_rank) +
                                                 " bytes per rank failed: " + joined.status().message());
    return;
  }
  outgrown_ = std::move(current_);
  outgrown_generation_ = generation_ - 1;
  current_ = std::move(joined).value();
  current_hint_ = next.bytes_per_rank_hint();
}

Status GrowingGroup::Check() const { return broken_.ok() ? current_->Check() : broken_; }

Status GrowingGroup::Selection(const std::string** table, const std::string** transport) {
  return broken_.ok() ? current_->Selection(table, transport) : broken_;
}

Status GrowingGroup::Leave() {
  if (outgrown_) outgrown_->Leave();
  return current_->Leave();
}

}  // namespace ohio
