// libohio_mpi: MPI_Alltoall and MPI_Alltoallv through ohiod for unmodified MPI programs
// (LD_PRELOAD). Built once per MPI (the ABIs differ); everything it cannot serve goes to the MPI
// library's PMPI_ function.
//
// Consistency is the whole difficulty: the ranks of a communicator must all take ohio or all
// take PMPI in a given call, or they wait for each other forever.
//  - Setting up a communicator is collective (it happens inside its first MPI_Alltoall): the
//    ranks agree with PMPI_Allreduce that every one of them can use ohio, exchange node names
//    with PMPI_Allgather and the group key with PMPI_Bcast.
//  - A reason to fall through that only one rank sees (a derived datatype) is resolved through
//    ohio itself: that rank opts out of the call (ohio_alltoall_skip), every rank of every node
//    gets OHIO_ERR_SKIPPED, and all of them call PMPI_Alltoall together.
//  - A group already closed when a call starts (its daemon or a peer's died) is seen closed by
//    every rank in that call: all fall through, with correct data, and so do all later calls.
//  - A failure in the middle of a call may leave some ranks with their data and others
//    without; no rank can tell which without talking to the others, and talking could block
//    against the application's next collective. The call then returns MPI_ERR_OTHER through the
//    communicator's error handler (by default: the job aborts, with ohio's reason printed).
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "client/mpi_type_layout.h"
#include "client/ohio.h"
#include "shm/buffer_sizing.h"

namespace {

struct CommState {
  ohio_group* group = nullptr;  // null: this communicator falls through, for `why`
  std::string why;
  uint32_t nodes = 0;  // the group's
  // MPI_Alltoallv's counts and displacements in bytes, for ohio.
  std::vector<size_t> send_bytes, send_at, recv_bytes, recv_at;
  // Where calls with non-contiguous datatypes are packed for ohio and unpacked from it.
  std::vector<uint8_t> send_packed, recv_packed;
};

struct Process {
  bool initialised = false;
  bool disabled = false;
  bool quiet = false;
  bool stats = false;
  bool warned = false;
  ohio_client* client = nullptr;
  std::string no_client;  // why there is no connection to ohiod
  int keyval = MPI_KEYVAL_INVALID;
  std::set<CommState*> states;
  // Per function, for OHIO_STATS.
  struct Tally {
    long served = 0;
    long fell_through = 0;
    std::map<std::string, long> reasons;
  };
  std::map<std::string, Tally> tallies;
};

// The functions the shim serves, in the order OHIO_STATS reports them.
const char* const kFunctions[] = {"MPI_Alltoall", "MPI_Alltoallv"};

Process& P() {
  static Process p;
  return p;
}

bool EnvFlag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

void Served(const char* function) { ++P().tallies[function].served; }

void FellThrough(const char* function, const std::string& why) {
  Process& p = P();
  Process::Tally& t = p.tallies[function];
  ++t.fell_through;
  ++t.reasons[why];
  if (!p.quiet && !p.warned) {
    p.warned = true;
    std::fprintf(stderr, "ohio: %s falls through to the MPI library: %s (OHIO_QUIET=1 silences this)\n", function,
                 why.c_str());
  }
}

int DeleteState(MPI_Comm, int, void* attribute, void*) {
  auto* st = static_cast<CommState*>(attribute);
  if (st->group != nullptr) ohio_leave(st->group);
  P().states.erase(st);
  delete st;
  return MPI_SUCCESS;
}

void Initialise() {
  Process& p = P();
  if (p.initialised) return;
  p.initialised = true;
  p.disabled = EnvFlag("OHIO_DISABLE");
  p.quiet = EnvFlag("OHIO_QUIET");
  p.stats = EnvFlag("OHIO_STATS");
  // Dups and splits get a group of their own on first use, not a copy of the parent's.
  PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, DeleteState, &p.keyval, nullptr);
  if (p.disabled) return;
  if (ohio_connect(nullptr, &p.client) != OHIO_OK) {
    p.no_client = std::string("no ohiod reachable (") + ohio_last_error() + ")";
    p.client = nullptr;
  }
}

std::string RandomKey() {
  std::string key(OHIO_KEY_BYTES, '\0');
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  urandom.read(&key[0], OHIO_KEY_BYTES);
  return key;
}

// Collective over comm: joins a group for it, or records why every rank falls through.
// `first_bytes`: the bytes per rank of the call that sets it up, which sizes the group's
// buffers (they grow with later calls: ohio.h).
CommState* SetUp(MPI_Comm comm, uint64_t first_bytes) {
  Process& p = P();
  auto* st = new CommState();
  p.states.insert(st);
  PMPI_Comm_set_attr(comm, p.keyval, st);
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) {  // the same answer on every rank: no agreement needed
    st->why = "intercommunicators are not served";
    return st;
  }
  std::string mine;
  if (p.disabled) {
    mine = "disabled by OHIO_DISABLE";
  } else if (p.client == nullptr) {
    mine = p.no_client;
  }
  int can = mine.empty() ? 1 : 0, all = 0;
  PMPI_Allreduce(&can, &all, 1, MPI_INT, MPI_MIN, comm);
  if (!all) {
    st->why = can ? "another rank of the communicator cannot use ohio" : mine;
    return st;
  }
  int size = 0, rank = 0;
  PMPI_Comm_size(comm, &size);
  PMPI_Comm_rank(comm, &rank);
  constexpr int kName = 256;
  char name[kName] = {};
  std::strncpy(name, ohio_node_name(p.client), kName - 1);
  std::vector<char> names(static_cast<size_t>(kName) * size);
  PMPI_Allgather(name, kName, MPI_CHAR, names.data(), kName, MPI_CHAR, comm);
  std::vector<std::string> nodes;
  std::vector<uint32_t> rank_node(size);
  std::map<std::string, uint32_t> index;
  for (int r = 0; r < size; ++r) {
    std::string n(&names[static_cast<size_t>(r) * kName]);
    auto it = index.find(n);
    if (it == index.end()) {
      it = index.emplace(n, static_cast<uint32_t>(nodes.size())).first;
      nodes.push_back(n);
    }
    rank_node[r] = it->second;
  }
  std::string key = rank == 0 ? RandomKey() : std::string(OHIO_KEY_BYTES, '\0');
  PMPI_Bcast(&key[0], OHIO_KEY_BYTES, MPI_BYTE, 0, comm);
  std::vector<const char*> node_ptrs;
  for (const auto& n : nodes) node_ptrs.push_back(n.c_str());
  ohio_group_spec spec = {};
  std::memcpy(spec.key, key.data(), OHIO_KEY_BYTES);
  spec.size = static_cast<uint32_t>(size);
  spec.rank = static_cast<uint32_t>(rank);
  spec.num_nodes = static_cast<uint32_t>(nodes.size());
  spec.node_names = node_ptrs.data();
  spec.rank_node = rank_node.data();
  spec.bytes_per_rank_hint = ohio::HintClassFor(first_bytes);
  ohio_group* group = nullptr;
  const int rc = ohio_join(p.client, &spec, &group);
  const std::string refusal = rc == OHIO_OK ? "" : std::string("ohiod refused the group (") + ohio_last_error() + ")";
  int joined = rc == OHIO_OK ? 1 : 0, all_joined = 0;
  PMPI_Allreduce(&joined, &all_joined, 1, MPI_INT, MPI_MIN, comm);
  if (!all_joined) {
    if (group != nullptr) ohio_leave(group);
    st->why = joined ? "ohiod refused another rank of the communicator" : refusal;
    return st;
  }
  st->group = group;
  st->nodes = static_cast<uint32_t>(nodes.size());
  return st;
}

CommState* StateOf(MPI_Comm comm, int count, MPI_Datatype type) {
  Process& p = P();
  void* attribute = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, p.keyval, &attribute, &found);
  if (found) return static_cast<CommState*>(attribute);
  int type_size = 0;
  PMPI_Type_size(type, &type_size);
  return SetUp(comm, count > 0 && type_size > 0 ? static_cast<uint64_t>(count) * static_cast<uint64_t>(type_size) : 0);
}


void Close(CommState* st, const std::string& why) {
  if (st->group != nullptr) ohio_leave(st->group);
  st->group = nullptr;
  st->why = why;
}

// The layouts of a call's two datatypes (in place: the receive type's for both), or why one
// has none (`why` set, a layout null).
struct CallLayouts {
  const ohio::TypeLayout* send = nullptr;
  const ohio::TypeLayout* recv = nullptr;
  const char* why = nullptr;
};
CallLayouts LayoutsOf(bool in_place, MPI_Datatype sendtype, MPI_Datatype recvtype) {
  CallLayouts l;
  // Any datatype whose elements flatten to runs of bytes (client/mpi_type_layout.h).
  l.recv = ohio::LayoutOf(recvtype, &l.why);
  l.send = in_place ? l.recv : ohio::LayoutOf(sendtype, &l.why);
  return l;
}

// Whether the group closed before this call (every rank sees it now, none has contributed):
// then it is closed here too and *why says so.
bool ClosedBefore(CommState* st, std::string* why) {
  if (ohio_group_check(st->group) == OHIO_OK) return false;
  *why = std::string("the ohio group closed (") + ohio_last_error() + ")";
  Close(st, *why);
  return true;
}

// A call that failed in ohio after some ranks may have moved data: the group is closed and the
// communicator's error handler called (by default the job aborts, with the reason printed).
int FailedMidCall(CommState* st, MPI_Comm comm, const char* function) {
  const std::string message = ohio_last_error();
  std::fprintf(stderr, "ohio: %s failed: %s\n", function, message.c_str());
  Close(st, "the ohio group failed (" + message + ")");
  MPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
  return MPI_ERR_OTHER;
}

// A failure every rank reached alike and that is the program's (counts that disagree, a range
// that is not mapped): the group stays usable.
int ProgramError(MPI_Comm comm, const char* function, int mpi_error) {
  std::fprintf(stderr, "ohio: %s failed: %s\n", function, ohio_last_error());
  MPI_Comm_call_errhandler(comm, mpi_error);
  return mpi_error;
}

// Element counts and displacements of an alltoallv side as ohio's bytes. A contiguous type is
// used where it lies (`packed` stays empty); another is packed run by run, block after block, into
// `packed` (or, for the receive side, laid out there to be unpacked after the call).
void VectorBytes(const ohio::TypeLayout& layout, int size, const int counts[], const int displs[],
                 std::vector<size_t>* bytes, std::vector<size_t>* at, bool pack_side, const void* typed,
                 std::vector<uint8_t>* packed) {
  bytes->resize(size);
  at->resize(size);
  size_t next = 0;
  for (int j = 0; j < size; ++j) {
    (*bytes)[j] = static_cast<size_t>(counts[j]) * static_cast<size_t>(layout.size);
    if (packed == nullptr) {
      (*at)[j] = static_cast<size_t>(static_cast<MPI_Aint>(displs[j]) * layout.extent);
    } else {
      (*at)[j] = next;
      next += (*bytes)[j];
    }
  }
  if (packed == nullptr) return;
  packed->resize(next);
  if (!pack_side) return;
  for (int j = 0; j < size; ++j) {
    const auto* from = static_cast<const uint8_t*>(typed) + static_cast<MPI_Aint>(displs[j]) * layout.extent;
    ohio::PackRuns(layout, from, counts[j], packed->data() + (*at)[j]);
  }
}

}  // namespace

extern "C" {

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm) {
  int ready = 0;
  PMPI_Initialized(&ready);
  if (!ready || comm == MPI_COMM_NULL) {
    return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  }
  Initialise();
  CommState* st = StateOf(comm, recvcount, recvtype);
  auto fall_through = [&](const std::string& why) {
    FellThrough("MPI_Alltoall", why);
    return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  };
  if (st->group == nullptr) return fall_through(st->why);

  std::string why;
  if (ClosedBefore(st, &why)) return fall_through(why);

  const bool in_place = sendbuf == MPI_IN_PLACE;
  const CallLayouts layouts = LayoutsOf(in_place, sendtype, recvtype);
  const ohio::TypeLayout* recv_layout = layouts.recv;
  const ohio::TypeLayout* send_layout = layouts.send;
  if (recv_layout == nullptr || send_layout == nullptr) {
    why = layouts.why;
  } else if (recvcount < 0 || (!in_place && static_cast<long>(sendcount) * send_layout->size !=
                                                static_cast<long>(recvcount) * recv_layout->size)) {
    why = "send and receive sizes differ";
  }
  if (!why.empty()) {
    if (ohio_alltoall_skip(st->group) == OHIO_ERR_SKIPPED) return fall_through(why);
    return FailedMidCall(st, comm, "MPI_Alltoall");
  }

  const size_t bytes = static_cast<size_t>(recvcount) * static_cast<size_t>(recv_layout->size);
  // Non-contiguous data goes through a packed copy, run by run; contiguous data as it is.
  int size = 0;
  if (!send_layout->contiguous() || !recv_layout->contiguous()) PMPI_Comm_size(comm, &size);
  const void* send = in_place ? recvbuf : sendbuf;
  const MPI_Aint send_elements = static_cast<MPI_Aint>(in_place ? recvcount : sendcount) * size;
  if (!send_layout->contiguous()) {
    st->send_packed.resize(bytes * size);
    ohio::PackRuns(*send_layout, send, send_elements, st->send_packed.data());
    send = st->send_packed.data();
  }
  void* recv = recvbuf;
  if (!recv_layout->contiguous()) {
    // In place stays in place: the packed copy is both.
    if (!in_place) st->recv_packed.resize(bytes * size);
    recv = in_place ? st->send_packed.data() : st->recv_packed.data();
  }
  const int rc = ohio_alltoall(st->group, send, recv, bytes);
  if (rc == OHIO_OK) {
    if (recv != recvbuf) ohio::UnpackRuns(*recv_layout, recv, static_cast<MPI_Aint>(recvcount) * size, recvbuf);
    Served("MPI_Alltoall");
    return MPI_SUCCESS;
  }
  if (rc == OHIO_ERR_SKIPPED) return fall_through("another rank could not use ohio for this call");
  if (rc == OHIO_ERR_SIZE_MISMATCH) return ProgramError(comm, "MPI_Alltoall", MPI_ERR_COUNT);
  return FailedMidCall(st, comm, "MPI_Alltoall");
}

int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                  void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  int ready = 0;
  PMPI_Initialized(&ready);
  if (!ready || comm == MPI_COMM_NULL) {
    return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
  }
  Initialise();
  // Counts differ between ranks: a communicator set up here is sized alike on every rank.
  CommState* st = StateOf(comm, 0, MPI_BYTE);
  auto fall_through = [&](const std::string& why) {
    FellThrough("MPI_Alltoallv", why);
    return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
  };
  if (st->group == nullptr) return fall_through(st->why);
  if (st->nodes > 1) {  // the same on every rank: no agreement needed
    return fall_through("MPI_Alltoallv is served on one node; this communicator spans " + std::to_string(st->nodes) +
                        " nodes");
  }
  std::string why;
  if (ClosedBefore(st, &why)) return fall_through(why);

  const bool in_place = sendbuf == MPI_IN_PLACE;
  const CallLayouts layouts = LayoutsOf(in_place, sendtype, recvtype);
  const ohio::TypeLayout* recv_layout = layouts.recv;
  const ohio::TypeLayout* send_layout = layouts.send;
  int size = 0;
  PMPI_Comm_size(comm, &size);
  if (recv_layout == nullptr || send_layout == nullptr) {
    why = layouts.why;
  } else {
    for (int j = 0; j < size && why.empty(); ++j) {
      if (recvcounts[j] < 0 || (!in_place && sendcounts[j] < 0)) why = "a negative count";
    }
  }
  if (!why.empty()) {
    if (ohio_alltoall_skip(st->group) == OHIO_ERR_SKIPPED) return fall_through(why);
    return FailedMidCall(st, comm, "MPI_Alltoallv");
  }
  // In place, the others read this rank's data while it receives into the same buffer: send
  // from a packed copy instead.
  const bool pack_send = in_place || !send_layout->contiguous();
  const bool pack_recv = !recv_layout->contiguous();
  VectorBytes(*send_layout, size, in_place ? recvcounts : sendcounts, in_place ? rdispls : sdispls, &st->send_bytes,
              &st->send_at, true, in_place ? recvbuf : sendbuf, pack_send ? &st->send_packed : nullptr);
  VectorBytes(*recv_layout, size, recvcounts, rdispls, &st->recv_bytes, &st->recv_at, false, nullptr,
              pack_recv ? &st->recv_packed : nullptr);
  const void* send = pack_send ? st->send_packed.data() : sendbuf;
  void* recv = pack_recv ? st->recv_packed.data() : recvbuf;
  const int rc = ohio_alltoallv(st->group, send, st->send_bytes.data(), st->send_at.data(), recv,
                                st->recv_bytes.data(), st->recv_at.data());
  if (rc == OHIO_OK) {
    if (pack_recv) {
      for (int i = 0; i < size; ++i) {
        ohio::UnpackRuns(*recv_layout, st->recv_packed.data() + st->recv_at[i], recvcounts[i],
                         static_cast<uint8_t*>(recvbuf) + static_cast<MPI_Aint>(rdispls[i]) * recv_layout->extent);
      }
    }
    Served("MPI_Alltoallv");
    return MPI_SUCCESS;
  }
  if (rc == OHIO_ERR_SKIPPED) return fall_through("another rank could not use ohio for this call");
  // Every rank reached it alike: ranks may not read each other's memory.
  if (rc == OHIO_ERR_NOT_SUPPORTED) return fall_through(ohio_last_error());
  if (rc == OHIO_ERR_SIZE_MISMATCH) return ProgramError(comm, "MPI_Alltoallv", MPI_ERR_COUNT);
  if (rc == OHIO_ERR_INVALID_ARGUMENT) return ProgramError(comm, "MPI_Alltoallv", MPI_ERR_ARG);
  return FailedMidCall(st, comm, "MPI_Alltoallv");
}

int MPI_Finalize(void) {
  Process& p = P();
  if (p.initialised) {
    constexpr int kCount = sizeof(kFunctions) / sizeof(kFunctions[0]);
    long local[2 * kCount] = {}, total[2 * kCount] = {};
    for (int f = 0; f < kCount; ++f) {
      local[2 * f] = p.tallies[kFunctions[f]].served;
      local[2 * f + 1] = p.tallies[kFunctions[f]].fell_through;
    }
    PMPI_Reduce(local, total, 2 * kCount, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (p.stats && rank == 0) {
      for (int f = 0; f < kCount; ++f) {
        std::fprintf(stderr, "ohio: %ld %s calls served by ohiod, %ld fell through to the MPI library (all ranks)\n",
                     total[2 * f], kFunctions[f], total[2 * f + 1]);
        for (const auto& [why, n] : p.tallies[kFunctions[f]].reasons) {
          std::fprintf(stderr, "ohio:   rank 0: %s: %ld fell through: %s\n", kFunctions[f], n, why.c_str());
        }
      }
    }
    // Attributes of MPI_COMM_WORLD are not deleted by every MPI at finalize: leave explicitly.
    for (CommState* st : p.states) {
      if (st->group != nullptr) ohio_leave(st->group);
      st->group = nullptr;
    }
    if (p.client != nullptr) ohio_disconnect(p.client);
    p.client = nullptr;
  }
  return PMPI_Finalize();
}

}  // extern "C"
