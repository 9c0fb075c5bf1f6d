// A thin C++ layer over ohio.h: owning handles that leave and disconnect on destruction.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "client/libohio/ohio.h"

namespace ohio {

// The outcome of a libohio call: the OHIO_ERR_* code and what ohio_last_error() said.
struct CallResult {
  int code = OHIO_OK;
  std::string message;
  bool ok() const { return code == OHIO_OK; }
  static CallResult From(int code) { return {code, code == OHIO_OK ? "" : ohio_last_error()}; }
};

class Group {
 public:
  Group() = default;
  explicit Group(ohio_group* g) : g_(g) {}
  Group(Group&& o) noexcept : g_(std::exchange(o.g_, nullptr)) {}
  Group& operator=(Group&& o) noexcept {
    std::swap(g_, o.g_);
    return *this;
  }
  ~Group() { Leave(); }

  CallResult Alltoall(const void* send, void* recv, size_t bytes_per_rank) {
    return CallResult::From(ohio_alltoall(g_, send, recv, bytes_per_rank));
  }
  CallResult Alltoallv(const void* send, const size_t* sendcounts, const size_t* sdispls, void* recv,
                       const size_t* recvcounts, const size_t* rdispls) {
    return CallResult::From(ohio_alltoallv(g_, send, sendcounts, sdispls, recv, recvcounts, rdispls));
  }
  CallResult OptOut() { return CallResult::From(ohio_alltoall_opt_out(g_)); }
  CallResult Ialltoall(const void* send, void* recv, size_t bytes_per_rank, ohio_request* request) {
    return CallResult::From(ohio_ialltoall(g_, send, recv, bytes_per_rank, request));
  }
  CallResult Ialltoallv(const void* send, const size_t* sendcounts, const size_t* sdispls, void* recv,
                        const size_t* recvcounts, const size_t* rdispls, ohio_request* request) {
    return CallResult::From(ohio_ialltoallv(g_, send, sendcounts, sdispls, recv, recvcounts, rdispls, request));
  }
  // The group's selection table (its text) and the daemons' transport: ohio_group_selection.
  CallResult Selection(std::string* table, std::string* transport) {
    const char* t = nullptr;
    const char* tr = nullptr;
    CallResult r = CallResult::From(ohio_group_selection(g_, &t, &tr));
    if (r.ok()) {
      *table = t;
      *transport = tr;
    }
    return r;
  }
  CallResult Test(ohio_request request, int* done) { return CallResult::From(ohio_test(g_, request, done)); }
  CallResult Wait(ohio_request request) { return CallResult::From(ohio_wait(g_, request)); }
  CallResult Leave() {
    if (g_ == nullptr) return {};
    return CallResult::From(ohio_leave(std::exchange(g_, nullptr)));
  }
  explicit operator bool() const { return g_ != nullptr; }
  // The C handle, for what this layer does not wrap; still owned here.
  ohio_group* get() const { return g_; }

 private:
  ohio_group* g_ = nullptr;
};

class Client {
 public:
  // Connects to ohiod ("" means $OHIO_SOCKET, else the default socket).
  static CallResult Connect(const std::string& socket, Client* out) {
    ohio_client* c = nullptr;
    CallResult r = CallResult::From(ohio_connect(socket.empty() ? nullptr : socket.c_str(), &c));
    if (r.ok()) out->c_.reset(c);
    return r;
  }

  std::string node_name() const { return ohio_node_name(c_.get()); }

  // The selection table groups created now get, its transport, digest and generation, before
  // any group is joined: ohio_client_selection.
  CallResult Selection(std::string* table, std::string* transport, std::string* digest, uint64_t* generation) {
    const char* t = nullptr;
    const char* tr = nullptr;
    const char* d = nullptr;
    CallResult r = CallResult::From(ohio_client_selection(c_.get(), &t, &tr, &d, generation));
    if (r.ok()) {
      *table = t;
      *transport = tr;
      *digest = d;
    }
    return r;
  }

  // Joins rank `rank` of a group whose ranks sit on `nodes` as `rank_node` says; see
  // ohio_group_spec for the hint.
  CallResult Join(const unsigned char (&key)[OHIO_KEY_BYTES], uint32_t rank,
                  const std::vector<std::string>& nodes, const std::vector<uint32_t>& rank_node,
                  const std::string& algorithm, Group* out, uint64_t bytes_per_rank_hint = 0) {
    std::vector<const char*> names;
    for (const auto& n : nodes) names.push_back(n.c_str());
    ohio_group_spec spec = {};
    std::copy(std::begin(key), std::end(key), spec.key);
    spec.size = static_cast<uint32_t>(rank_node.size());
    spec.rank = rank;
    spec.num_nodes = static_cast<uint32_t>(names.size());
    spec.node_names = names.data();
    spec.rank_node = rank_node.data();
    spec.algorithm = algorithm.empty() ? nullptr : algorithm.c_str();
    spec.bytes_per_rank_hint = bytes_per_rank_hint;
    ohio_group* g = nullptr;
    CallResult r = CallResult::From(ohio_join(c_.get(), &spec, &g));
    if (r.ok()) *out = Group(g);
    return r;
  }

 private:
  struct Disconnect {
    void operator()(ohio_client* c) const { ohio_disconnect(c); }
  };
  std::unique_ptr<ohio_client, Disconnect> c_;
};

}  // namespace ohio
