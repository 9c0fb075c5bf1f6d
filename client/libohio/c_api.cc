// The C API of libohio (ohio.h) over the C++ internals.
#include <cstdlib>
#include <memory>
#include <string>

#include "client/libohio/control_connection.h"
#include "client/libohio/growing_group.h"
#include "client/libohio/ohio.h"

struct ohio_client {
  std::unique_ptr<ohio::ControlConnection> connection;
  int groups = 0;
};

struct ohio_group {
  ohio_client* client = nullptr;
  std::unique_ptr<ohio::GrowingGroup> handle;
};

namespace {

thread_local std::string last_error;

int Fail(const ohio::Status& s) {
  last_error = s.message();
  return static_cast<int>(s.code());
}

int Fail(ohio::Code code, const std::string& message) { return Fail(ohio::Status(code, message)); }

ohio::VectorCall VectorCallOf(const void* send, const size_t* sendcounts, const size_t* sdispls, void* recv,
                              const size_t* recvcounts, const size_t* rdispls) {
  ohio::VectorCall call;
  call.send = static_cast<const uint8_t*>(send);
  call.send_counts = sendcounts;
  call.send_displs = sdispls;
  call.recv = static_cast<uint8_t*>(recv);
  call.recv_counts = recvcounts;
  call.recv_displs = rdispls;
  return call;
}

}  // namespace

extern "C" {

int ohio_connect(const char* socket_path, ohio_client** out) {
  if (out == nullptr) return Fail(ohio::Code::kInvalidArgument, "ohio_connect: out is NULL");
  std::string path = socket_path != nullptr ? socket_path : "";
  if (path.empty()) {
    const char* env = std::getenv("OHIO_SOCKET");
    path = env != nullptr && *env != '\0' ? env : OHIO_DEFAULT_SOCKET;
  }
  auto connection = ohio::ControlConnection::Connect(path);
  if (!connection.ok()) return Fail(connection.status());
  *out = new ohio_client{std::move(connection).value()};
  return OHIO_OK;
}

const char* ohio_node_name(const ohio_client* client) {
  return client != nullptr ? client->connection->node_name().c_str() : "";
}

void ohio_disconnect(ohio_client* client) { delete client; }

int ohio_daemon_gone(const ohio_client* client) {
  return client != nullptr && client->connection->ClosedByDaemon() ? 1 : 0;
}

int ohio_join(ohio_client* client, const ohio_group_spec* spec, ohio_group** out) {
  if (client == nullptr || spec == nullptr || out == nullptr) {
    return Fail(ohio::Code::kInvalidArgument, "ohio_join: client, spec and out must not be NULL");
  }
  if (spec->num_nodes == 0 || spec->node_names == nullptr || spec->rank_node == nullptr) {
    return Fail(ohio::Code::kInvalidArgument, "ohio_join: the spec must name the nodes and place every rank");
  }
  ohio::control::JoinGroup join;
  join.set_key(std::string(reinterpret_cast<const char*>(spec->key), OHIO_KEY_BYTES));
  join.set_size(spec->size);
  join.set_rank(spec->rank);
  for (uint32_t i = 0; i < spec->num_nodes; ++i) {
    if (spec->node_names[i] == nullptr) return Fail(ohio::Code::kInvalidArgument, "ohio_join: a node name is NULL");
    join.add_node_names(spec->node_names[i]);
  }
  for (uint32_t g = 0; g < spec->size; ++g) join.add_rank_node(spec->rank_node[g]);
  // The program's choice, else the user's (OHIO_DESIGN, or its former name OHIO_ALGORITHM), else
  // the daemon's default.
  const char* design = std::getenv("OHIO_DESIGN");
  if (design == nullptr || *design == '\0') design = std::getenv("OHIO_ALGORITHM");
  const char* algorithm = spec->algorithm != nullptr ? spec->algorithm : design;
  if (algorithm != nullptr && *algorithm != '\0') join.set_algorithm(algorithm);
  // The job's inter-node algorithm among nodes (docs/PLANNER.md), else the daemons' table. Sent by
  // every rank, so every node of the group is told the same and their tables then agree.
  // OHIO_LEADER is the variable's former name, still read for jobs scripted with it.
  const char* internode = std::getenv("OHIO_INTERNODE_ALGORITHM");
  if (internode == nullptr || *internode == '\0') internode = std::getenv("OHIO_LEADER");
  if (internode != nullptr && *internode != '\0') join.set_internode(internode);
  join.set_bytes_per_rank_hint(spec->bytes_per_rank_hint);
  auto handle = ohio::GrowingGroup::Join(client->connection.get(), join);
  if (!handle.ok()) return Fail(handle.status());
  *out = new ohio_group{client, std::move(handle).value()};
  return OHIO_OK;
}

int ohio_alltoall(ohio_group* group, const void* send, void* recv, size_t bytes_per_rank) {
  if (group == nullptr) return Fail(ohio::Code::kInvalidArgument, "ohio_alltoall: group is NULL");
  ohio::Status s = group->handle->Alltoall(send, recv, bytes_per_rank);
  return s.ok() ? OHIO_OK : Fail(s);
}

int ohio_alltoallv(ohio_group* group, const void* send, const size_t* sendcounts, const size_t* sdispls,
                   void* recv, const size_t* recvcounts, const size_t* rdispls) {
  if (group == nullptr) return Fail(ohio::Code::kInvalidArgument, "ohio_alltoallv: group is NULL");
  ohio::Status s = group->handle->Alltoallv(VectorCallOf(send, sendcounts, sdispls, recv, recvcounts, rdispls));
  return s.ok() ? OHIO_OK : Fail(s);
}

int ohio_ialltoall(ohio_group* group, const void* send, void* recv, size_t bytes_per_rank, ohio_request* request) {
  if (group == nullptr || request == nullptr) {
    return Fail(ohio::Code::kInvalidArgument, "ohio_ialltoall: group and request must not be NULL");
  }
  ohio::Status s = group->handle->Ialltoall(send, recv, bytes_per_rank, request);
  return s.ok() ? OHIO_OK : Fail(s);
}

int ohio_ialltoallv(ohio_group* group, const void* send, const size_t* sendcounts, const size_t* sdispls,
                    void* recv, const size_t* recvcounts, const size_t* rdispls, ohio_request* request) {
  if (group == nullptr || request == nullptr) {
    return Fail(ohio::Code::kInvalidArgument, "ohio_ialltoallv: group and request must not be NULL");
  }
  ohio::Status s =
      group->handle->Ialltoallv(VectorCallOf(send, sendcounts, sdispls, recv, recvcounts, rdispls), request);
  return s.ok() ? OHIO_OK : Fail(s);
}

int ohio_test(ohio_group* group, ohio_request request, int* done) { return ohio_test_within(group, request, 0, done); }

int ohio_test_within(ohio_group* group, ohio_request request, unsigned timeout_us, int* done) {
  if (group == nullptr || done == nullptr) return Fail(ohio::Code::kInvalidArgument, "ohio_test: group and done must not be NULL");
  bool complete = false;
  ohio::Status s = group->handle->Test(request, &complete, std::chrono::microseconds(timeout_us));
  *done = complete ? 1 : 0;
  return s.ok() ? OHIO_OK : Fail(s);
}

int ohio_wait(ohio_group* group, ohio_request request) {
  if (group == nullptr) return Fail(ohio::Code::kInvalidArgument, "ohio_wait: group is NULL");
  ohio::Status s = group->handle->Wait(request);
  return s.ok() ? OHIO_OK : Fail(s);
}

int ohio_alltoall_opt_out(ohio_group* group) {
  if (group == nullptr) return Fail(ohio::Code::kInvalidArgument, "ohio_alltoall_opt_out: group is NULL");
  return Fail(group->handle->OptOut());
}

int ohio_alltoall_skip(ohio_group* group) { return ohio_alltoall_opt_out(group); }

int ohio_group_selection(ohio_group* group, const char** table, const char** transport) {
  if (group == nullptr || table == nullptr || transport == nullptr) {
    return Fail(ohio::Code::kInvalidArgument, "ohio_group_selection: group, table or transport is NULL");
  }
  const std::string* t = nullptr;
  const std::string* tr = nullptr;
  ohio::Status s = group->handle->Selection(&t, &tr);
  if (!s.ok()) return Fail(s);
  *table = t->c_str();
  *transport = tr->c_str();
  return OHIO_OK;
}

static_assert(OHIO_FUNCTION_IALLTOALLV + 1 == ohio::kHandedBackFunctions, "ohio.h's functions are shm/handed_back.h's");
static_assert(OHIO_HANDED_BACK_NOT_SUPPORTED + 1 == ohio::kHandBackReasons, "ohio.h's reasons are shm/handed_back.h's");
static_assert(OHIO_HANDED_BACK_RANK_OPTED_OUT == static_cast<int>(ohio::HandBackReason::kRankOptedOut), "same order");

int ohio_client_selection(ohio_client* client, const char** table, const char** transport, const char** digest,
                          uint64_t* generation) {
  if (client == nullptr || table == nullptr || transport == nullptr || digest == nullptr || generation == nullptr) {
    return Fail(ohio::Code::kInvalidArgument,
                "ohio_client_selection: client, table, transport, digest or generation is NULL");
  }
  auto offered = client->connection->Selection();
  if (!offered.ok()) return Fail(offered.status());
  *table = offered.value()->table().c_str();
  *transport = offered.value()->transport().c_str();
  *digest = offered.value()->digest().c_str();
  *generation = offered.value()->generation();
  return OHIO_OK;
}

int ohio_client_count_handed_back_calls(ohio_client* client, int function, int reason, uint64_t calls) {
  if (client == nullptr) return Fail(ohio::Code::kInvalidArgument, "ohio_client_count_handed_back_calls: client is NULL");
  if (function < 0 || static_cast<size_t>(function) >= ohio::kHandedBackFunctions || reason < 0 ||
      static_cast<size_t>(reason) >= ohio::kHandBackReasons) {
    return Fail(ohio::Code::kInvalidArgument, "ohio_client_count_handed_back_calls: function " +
                                                  std::to_string(function) + " or reason " + std::to_string(reason) +
                                                  " is out of range");
  }
  ohio::Status s =
      client->connection->AddHandedBack(static_cast<size_t>(function), static_cast<size_t>(reason), calls);
  return s.ok() ? OHIO_OK : Fail(s);
}

int ohio_count_handed_back(ohio_group* group, int function, int reason) {
  return ohio_count_handed_back_calls(group, function, reason, 1);
}

int ohio_count_handed_back_calls(ohio_group* group, int function, int reason, uint64_t calls) {
  if (group == nullptr) return Fail(ohio::Code::kInvalidArgument, "ohio_count_handed_back: group is NULL");
  if (function < 0 || static_cast<size_t>(function) >= ohio::kHandedBackFunctions || reason < 0 ||
      static_cast<size_t>(reason) >= ohio::kHandBackReasons) {
    return Fail(ohio::Code::kInvalidArgument, "ohio_count_handed_back: function " + std::to_string(function) +
                                                  " or reason " + std::to_string(reason) + " is out of range");
  }
  group->handle->CountHandedBack(static_cast<size_t>(function), static_cast<ohio::HandBackReason>(reason), calls);
  return OHIO_OK;
}

int ohio_group_usable(ohio_group* group) { return group != nullptr && group->handle->Usable() ? 1 : 0; }

int ohio_group_check(ohio_group* group) {
  if (group == nullptr) return Fail(ohio::Code::kInvalidArgument, "ohio_group_check: group is NULL");
  ohio::Status s = group->handle->Check();
  return s.ok() ? OHIO_OK : Fail(s);
}

int ohio_leave(ohio_group* group) {
  if (group == nullptr) return Fail(ohio::Code::kInvalidArgument, "ohio_leave: group is NULL");
  ohio::Status s = group->handle->Leave();
  delete group;
  return s.ok() ? OHIO_OK : Fail(s);
}

const char* ohio_strerror(int code) { return ohio::CodeName(static_cast<ohio::Code>(code)); }

const char* ohio_last_error(void) { return last_error.c_str(); }

}  // extern "C"
