#include "client/growing_group.h"

#include "shm/buffer_sizing.h"

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
  if (s.code() == Code::kNotSupported && current_->spans_nodes() && current_hint_ != 0) {
    // It did not fit one round of the buffers sized for the hint, and every rank of every node
    // knows it alike; nobody knows by how much: grow to the configured sizes and try once more.
    AfterCall(Status::Ok(), ~uint64_t{0});
    if (!broken_.ok()) return broken_;
    s = current_->Alltoallv(call);
  }
  AfterCall(s, 0);  // on one node it reads in place: no buffer to grow
  return s;
}

Status GrowingGroup::Skip() {
  if (!broken_.ok()) return broken_;
  Status s = current_->Skip();
  AfterCall(s, 0);
  return s;
}

void GrowingGroup::AfterCall(const Status& result, uint64_t agreed_bytes_per_rank) {
  if (outgrown_) {
    outgrown_->Leave();  // its last call is over on every rank (see the header)
    outgrown_.reset();
  }
  if (!result.ok() || !OutgrownBy(current_hint_, agreed_bytes_per_rank)) return;
  control::JoinGroup next = first_join_;
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
  current_ = std::move(joined).value();
  current_hint_ = next.bytes_per_rank_hint();
}

Status GrowingGroup::Check() const { return broken_.ok() ? current_->Check() : broken_; }

Status GrowingGroup::Leave() {
  if (outgrown_) outgrown_->Leave();
  return current_->Leave();
}

}  // namespace ohio
