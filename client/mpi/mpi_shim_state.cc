#include "client/mpi/mpi_shim_state.h"

#include <sched.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>

#include "client/mpi/deferred_join.h"
#include "client/mpi/hand_back_at_once.h"
#include "shm/tables/selection_table_text.h"

namespace ohio::shim {

const char* const kFunctions[] = {"MPI_Alltoall", "MPI_Alltoallv", "MPI_Alltoallw", "MPI_Ialltoall", "MPI_Ialltoallv",
                                  "MPI_Alltoall_init"};
const int kFunctionCount = sizeof(kFunctions) / sizeof(kFunctions[0]);
static_assert(sizeof(kFunctions) / sizeof(kFunctions[0]) <= CommState::kMaxFunctions, "CommState counts each");

Process::Process() {
  for (int f = 0; f < kFunctionCount; ++f) tallies[kFunctions[f]];
}

Process& P() {
  static Process p;
  return p;
}

Process::Tally& TallyOf(const char* function) { return P().tallies.at(function); }

OptOutRun* OptOutRunOf(CommState* st, const char* function) {
  if (std::strcmp(function, "MPI_Alltoallv") == 0) return &st->opt_out_runs[0];
  if (std::strcmp(function, "MPI_Alltoallw") == 0) return &st->opt_out_runs[1];
  return nullptr;
}

int IndexOf(const char* function) {
  for (int f = 0; f < kFunctionCount; ++f) {
    if (std::strcmp(kFunctions[f], function) == 0) return f;
  }
  std::fprintf(stderr, "ohio: %s is not a function ohio serves\n", function);
  std::abort();
}

static bool EnvFlag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

bool ServeThreadMultiple() {
  const char* v = std::getenv("OHIO_SERVE_THREAD_MULTIPLE");
  return v == nullptr || std::strcmp(v, "0") != 0;
}

GroupInUse::GroupInUse(CommState* st) : st_(st) {
  // A test holds it for at most its own wait (a slice of a millisecond at most): yield to it.
  while (st->group_in_use.exchange(true, std::memory_order_acquire)) sched_yield();
}

void Served(const char* function) { TallyOf(function).served.fetch_add(1, std::memory_order_relaxed); }

void HandedBack(const char* function, const std::string& why) {
  Process& p = P();
  Process::Tally& t = TallyOf(function);
  t.handed_back.fetch_add(1, std::memory_order_relaxed);
  bool warn = false;
  {
    const std::lock_guard<std::mutex> lock(p.mu);
    ++t.reasons[why];
    warn = !p.quiet && !p.warned;
    p.warned = true;
  }
  if (warn) {
    std::fprintf(stderr, "ohio: %s is handed back to the MPI library: %s (OHIO_QUIET=1 silences this)\n", function,
                 why.c_str());
  }
}

void HandedBackByTable(const char* function, const std::string& why) {
  Process::Tally& t = TallyOf(function);
  t.handed_back.fetch_add(1, std::memory_order_relaxed);
  t.by_table.fetch_add(1, std::memory_order_relaxed);
  const std::lock_guard<std::mutex> lock(P().mu);
  ++t.table_reasons[why];
}

int OhioFunctionNumber(const char* function) {
  static const struct {
    const char* name;
    int number;
  } kNumbers[] = {{"MPI_Alltoall", OHIO_FUNCTION_ALLTOALL},   {"MPI_Alltoallv", OHIO_FUNCTION_ALLTOALLV},
                  {"MPI_Alltoallw", OHIO_FUNCTION_ALLTOALLW}, {"MPI_Ialltoall", OHIO_FUNCTION_IALLTOALL},
                  {"MPI_Alltoall_init", OHIO_FUNCTION_IALLTOALL}, {"MPI_Ialltoallv", OHIO_FUNCTION_IALLTOALLV}};
  for (const auto& n : kNumbers) {
    if (std::strcmp(n.name, function) == 0) return n.number;
  }
  return -1;
}

void CountHandedBack(CommState* st, const char* function, ohio::HandBackReason reason) {
  CountInDaemon(st, OhioFunctionNumber(function), reason, 1);
}

void Release(CommState* st) {
  { const GroupInUse in_use(st); }  // a test running from another thread ends first
  FlushHandBacks(st);
  if (st->group != nullptr) ohio_leave(st->group);
  if (st->agreement != MPI_COMM_NULL) PMPI_Comm_free(&st->agreement);
  {
    const std::lock_guard<std::mutex> lock(P().mu);
    P().states.erase(st);
  }
  delete st;
}

// Connects this process to its node's ohiod, or records why it cannot.
static void Connect(Process& p);

// Initialise's work, once per process whichever thread calls first (the others wait for it:
// it reads the environment and connects to the node's own daemon, which answers at once).
static void InitialiseOnce(Process& p);

void Initialise() {
  Process& p = P();
  if (p.initialised.load(std::memory_order_acquire)) return;
  std::call_once(p.initialise_once, [&p] {
    InitialiseOnce(p);
    p.initialised.store(true, std::memory_order_release);
  });
}

static void InitialiseOnce(Process& p) {
  p.disabled = EnvFlag("OHIO_DISABLE");
  p.quiet = EnvFlag("OHIO_QUIET");
  p.stats = EnvFlag("OHIO_STATS");
  if (const char* v = std::getenv("OHIO_IALLTOALL_MIN_BYTES"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (*end == '\0') {
      p.ialltoall_min_set = true;
      p.ialltoall_min_bytes = n;
    }
  }
  if (const char* v = std::getenv("OHIO_SELECTION"); v != nullptr && *v != '\0') {
    if (std::strcmp(v, "always") == 0) {
      p.selection_always = true;
    } else if (std::strcmp(v, "table") != 0) {
      // Once for the job (every rank reads the same environment): rank 0 of the world says it.
      int world_rank = 0;
      PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
      if (world_rank == 0) {
        std::fprintf(stderr,
                     "ohio: OHIO_SELECTION=%s is neither 'table' nor 'always': the selection table decides which "
                     "calls ohio serves\n",
                     v);
      }
    }
  }
  if (p.disabled) return;
  // A job at MPI_THREAD_MULTIPLE is served (threads on different communicators progress
  // independently: client/mpi/mpi_shim_state.h Process), unless the job's user leaves it to the
  // library with OHIO_SERVE_THREAD_MULTIPLE=0.
  int threads = MPI_THREAD_SINGLE;
  PMPI_Query_thread(&threads);
  if (threads == MPI_THREAD_MULTIPLE && !ServeThreadMultiple()) {
    p.no_client =
        "the job runs with MPI_THREAD_MULTIPLE and OHIO_SERVE_THREAD_MULTIPLE=0 leaves it to the MPI library (unset "
        "it, or set it to 1, to have ohio serve it)";
    return;
  }
  const std::lock_guard<std::mutex> lock(p.connection_mu);
  Connect(p);
}

// Both under p.connection_mu.
static void Connect(Process& p) {
  const int rc = ohio_connect(nullptr, &p.client);
  if (rc == OHIO_OK) {
    p.connect_again = false;
    return;
  }
  p.no_client = std::string("no ohiod reachable (") + ohio_last_error() + ")";
  p.client = nullptr;
  p.connect_again = rc == OHIO_ERR_NO_DAEMON;
}

// A daemon replaced under a running job (an upgrade: stopped, then started again) closed this
// process's connection; communicators set up from now on are served by the new one. Each rank
// finds out alone, and SetUp's agreement then decides for all of them.
static void ConnectToTheDaemonNowListening(Process& p) {
  if (p.client != nullptr) {
    if (!ohio_daemon_gone(p.client)) return;
    p.gone_clients.push_back(p.client);
    p.client = nullptr;
  } else if (!p.connect_again) {
    return;
  }
  Connect(p);
}

ohio_client* ClientToJoinThrough() {
  Process& p = P();
  const std::lock_guard<std::mutex> lock(p.connection_mu);
  ConnectToTheDaemonNowListening(p);
  return p.client;
}

// What each rank tells the others as a set-up begins.
struct Greeting {
  int32_t can;                          // whether this rank can use ohio (its node's daemon answers)
  // The selection table its daemon gives new groups (ohio_client_selection), by digest and
  // transport; all zero where it offers none.
  char table_digest[24];
  char transport[8];
  uint32_t table_bytes;
  // The settings every call must take alike: set on any rank, they count for all.
  int32_t selection_always;
  int32_t ialltoall_min_set;
  uint64_t ialltoall_min_bytes;
  char node[256];                       // its node's name, as its daemon calls it
  unsigned char key[OHIO_KEY_BYTES];    // rank 0's: the group's key
};

static void RandomKey(unsigned char* key) {
  // getrandom(2) blocks only until the kernel's pool is first seeded, long before any job.
  size_t got = 0;
  while (got < OHIO_KEY_BYTES) {
    const ssize_t n = getrandom(key + got, OHIO_KEY_BYTES - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n < 0 && errno != EINTR) {
      std::ifstream urandom("/dev/urandom", std::ios::binary);  // a kernel without getrandom
      urandom.read(reinterpret_cast<char*>(key), OHIO_KEY_BYTES);
      return;
    }
  }
}

std::string AdoptSelection(CommState* st, const char* text, const char* transport) {
  const std::optional<ohio::SelectedTransport> t = ohio::ParseSelectedTransport(transport);
  if (!t) return std::string("the group's transport '") + transport + "' is not one the selection table names";
  Process& p = P();
  bool parsed_before = false;
  {
    const std::lock_guard<std::mutex> lock(p.mu);
    parsed_before = !p.parsed_table_text.empty() && p.parsed_table_text == text;
    if (parsed_before) st->table = p.parsed_table;
  }
  if (!parsed_before) {
    auto table = ohio::ParseSelectionTable(text, "the group's selection table");
    if (!table.ok()) return table.status().message();
    st->table = std::move(table).value();
    const std::lock_guard<std::mutex> lock(p.mu);
    p.parsed_table_text = text;
    p.parsed_table = st->table;
  }
  st->shape = ohio::SelectionShape{st->nodes, st->pending.ppn, *t};
  return "";
}

// The table this rank's daemon gives new groups, by digest into the greeting (nothing where it
// offers none); *text and *transport are its text and transport, or null.
static void OfferedSelection(ohio_client* client, Greeting* greeting, const char** text, const char** transport) {
  const char* digest = nullptr;
  uint64_t generation = 0;
  if (ohio_client_selection(client, text, transport, &digest, &generation) != OHIO_OK) {
    *text = *transport = nullptr;
    return;
  }
  std::strncpy(greeting->table_digest, digest, sizeof(greeting->table_digest) - 1);
  std::strncpy(greeting->transport, *transport, sizeof(greeting->transport) - 1);
  greeting->table_bytes = static_cast<uint32_t>(std::strlen(*text));
}

CommState* SetUp(MPI_Comm comm, uint64_t first_bytes, const std::function<void(CommState*)>& keep) {
  Process& p = P();
  auto* st = new CommState();
  {
    const std::lock_guard<std::mutex> lock(p.mu);
    p.states.insert(st);
  }
  keep(st);
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) {  // the same answer on every rank: no agreement needed
    st->why = "intercommunicators are not served";
    return st;
  }
  // The connection this set-up learns the table through: a thread that finds the daemon gone
  // replaces p.client while another may still use the old one, which stays valid (gone_clients)
  // until finalize.
  std::string mine;
  ohio_client* client = nullptr;
  Greeting greeting = {};
  const char* offered_text = nullptr;
  const char* offered_transport = nullptr;
  if (p.disabled) {
    mine = "disabled by OHIO_DISABLE";
  } else {
    const std::lock_guard<std::mutex> lock(p.connection_mu);
    ConnectToTheDaemonNowListening(p);
    client = p.client;
    if (client == nullptr) mine = p.no_client;
    if (client != nullptr) OfferedSelection(client, &greeting, &offered_text, &offered_transport);
  }
  // One collective tells every rank whether all can use ohio, each rank's node, the group's key
  // (rank 0's), the tables and the settings: a communicator's first call pays for each collective
  // of its set-up.
  int size = 0, rank = 0;
  PMPI_Comm_size(comm, &size);
  PMPI_Comm_rank(comm, &rank);
  greeting.can = mine.empty() ? 1 : 0;
  greeting.selection_always = p.selection_always ? 1 : 0;
  greeting.ialltoall_min_set = p.ialltoall_min_set ? 1 : 0;
  greeting.ialltoall_min_bytes = p.ialltoall_min_set ? p.ialltoall_min_bytes : 0;
  if (greeting.can) std::strncpy(greeting.node, ohio_node_name(client), sizeof(greeting.node) - 1);
  if (rank == 0) RandomKey(greeting.key);
  std::vector<Greeting> greetings(static_cast<size_t>(size));
  PMPI_Allgather(&greeting, sizeof(Greeting), MPI_BYTE, greetings.data(), sizeof(Greeting), MPI_BYTE, comm);
  bool all = true, same_table = greeting.table_bytes != 0;
  for (const Greeting& g : greetings) {
    all = all && g.can != 0;
    same_table = same_table && g.table_bytes == greeting.table_bytes &&
                 std::memcmp(g.table_digest, greeting.table_digest, sizeof(g.table_digest)) == 0 &&
                 std::memcmp(g.transport, greeting.transport, sizeof(g.transport)) == 0;
    st->selection_always = st->selection_always || g.selection_always != 0;
    if (g.ialltoall_min_set != 0) {
      st->ialltoall_min_bytes = st->ialltoall_min_set ? std::max(st->ialltoall_min_bytes, g.ialltoall_min_bytes)
                                                      : g.ialltoall_min_bytes;
      st->ialltoall_min_set = true;
    }
  }
  if (!all) {
    st->why = greeting.can ? "another rank of the communicator cannot use ohio" : mine;
    return st;
  }
  CommState::PendingJoin& join = st->pending;
  std::map<std::string, uint32_t> index;
  join.rank_node.resize(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    std::string n(greetings[static_cast<size_t>(r)].node);
    auto it = index.find(n);
    if (it == index.end()) {
      it = index.emplace(n, static_cast<uint32_t>(join.nodes.size())).first;
      join.nodes.push_back(n);
    }
    join.rank_node[static_cast<size_t>(r)] = it->second;
  }
  std::memcpy(join.key, greetings[0].key, OHIO_KEY_BYTES);
  join.size = static_cast<uint32_t>(size);
  join.rank = static_cast<uint32_t>(rank);
  std::vector<uint32_t> node_ranks(join.nodes.size());
  for (uint32_t n : join.rank_node) ++node_ranks[n];
  join.ppn = *std::max_element(node_ranks.begin(), node_ranks.end());
  st->nodes = static_cast<uint32_t>(join.nodes.size());
  const uint32_t my_node = join.rank_node[static_cast<size_t>(rank)];
  st->counts_for_node =
      std::find(join.rank_node.begin(), join.rank_node.end(), my_node) - join.rank_node.begin() == rank;
  // Every rank holds the same table: each decides by it alike, and the join waits for a call it
  // serves. The same text parses alike everywhere, so a failure to parse is every rank's too.
  if (same_table && AdoptSelection(st, offered_text, offered_transport).empty()) {
    st->join_deferred = true;
    st->client = client;
    return st;
  }
  JoinNow(st, comm, client, first_bytes);
  return st;
}

uint64_t FirstCallBytes(int count, MPI_Datatype type) {
  int type_size = 0;
  PMPI_Type_size(type, &type_size);
  return count > 0 && type_size > 0 ? static_cast<uint64_t>(count) * static_cast<uint64_t>(type_size) : 0;
}

thread_local bool InternalCommunicator::creating_ = false;


void Close(CommState* st, const std::string& why) {
  FlushHandBacks(st);  // into the group's counters while it is there, and under the reason before
  if (st->group != nullptr) ohio_leave(st->group);
  st->group = nullptr;
  st->join_deferred = false;
  st->why = why;
  for (std::atomic<long>*& reason : st->no_group_reason) reason = nullptr;
}

CallLayouts LayoutsOf(bool in_place, MPI_Datatype sendtype, MPI_Datatype recvtype) {
  CallLayouts l;
  // Any datatype whose elements flatten to runs of bytes (client/mpi/mpi_type_layout.h).
  l.recv = ohio::LayoutOf(recvtype, &l.why);
  l.send = in_place ? l.recv : ohio::LayoutOf(sendtype, &l.why);
  return l;
}

CallLayouts ServableLayouts(bool in_place, int sendcount, MPI_Datatype sendtype, int recvcount, MPI_Datatype recvtype) {
  CallLayouts layouts = LayoutsOf(in_place, sendtype, recvtype);
  if (layouts.recv == nullptr || layouts.send == nullptr) return layouts;
  if (recvcount < 0 || (!in_place && static_cast<long>(sendcount) * layouts.send->size !=
                                         static_cast<long>(recvcount) * layouts.recv->size)) {
    layouts.why = "send and receive sizes differ";
  }
  return layouts;
}

bool CountCall(CommState* st, MPI_Comm comm, const char* function, int* rc) {
  if (++st->calls != st->failing_call) return false;
  *rc = FailCall(comm, function, st->failing_why);
  return true;
}

bool ClosedBefore(CommState* st, std::string* why) {
  if (ohio_group_check(st->group) == OHIO_OK) return false;
  *why = std::string("the ohio group closed (") + ohio_last_error() + ")";
  return true;
}

void EnsureAgreement(CommState* st, MPI_Comm comm) {
  if (st->agreement != MPI_COMM_NULL) return;
  const InternalCommunicator internal;
  PMPI_Comm_dup(comm, &st->agreement);
}

Agreed AgreeAfterFailure(CommState* st, const std::string& why, bool replayable, const Delivery* delivery) {
  // Every rank reaches this in the same call or, where its failure came one call earlier, in
  // that one. One reduction gives the latest call (the one the others are in), the earliest,
  // and the latest that a rank cannot run in the library.
  const long long mine = static_cast<long long>(st->calls);
  long long in[3] = {mine, -mine, replayable ? 0 : mine}, out[3] = {mine, -mine, 0};
  PMPI_Allreduce(in, out, 3, MPI_LONG_LONG, MPI_MAX, st->agreement);
  const uint64_t latest = static_cast<uint64_t>(out[0]), earliest = static_cast<uint64_t>(-out[1]);
  const bool latest_runs = static_cast<uint64_t>(out[2]) < latest;
  // Ranks completed call `earliest` through ohio, and the others failed in it: the first send
  // it again to the others (client/mpi/mpi_call_replay.h), whose result it then is.
  const bool lagging = st->calls < latest;
  const bool ran_again = earliest < latest && ReplayForLaggingRanks(st, earliest, lagging, delivery);
  Close(st, why);
  if (lagging) {
    if (!latest_runs) {
      st->failing_call = latest;
      st->failing_why = why + "; a rank could not run this call in the MPI library";
    }
    return ran_again ? Agreed::kRunAgain : Agreed::kFail;
  }
  return latest_runs ? Agreed::kRunInLibrary : Agreed::kFail;
}

int Reported(const char* function, const std::string& why, int mpi_error) {
  std::fprintf(stderr, "ohio: %s failed: %s\n", function, why.c_str());
  return mpi_error;
}

int FailCall(MPI_Comm comm, const char* function, const std::string& why) {
  Reported(function, why, MPI_ERR_OTHER);
  if (P().call_errhandler) MPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
  return MPI_ERR_OTHER;
}

int ProgramError(MPI_Comm comm, const char* function, int mpi_error) {
  Reported(function, ohio_last_error(), mpi_error);
  if (P().call_errhandler) MPI_Comm_call_errhandler(comm, mpi_error);
  return mpi_error;
}

// OHIO_STATS's report, on rank 0: `total` holds the ranks' sums, three per function (served,
// handed back, handed back of those by the table); the reasons are rank 0's. Under p.mu.
static void PrintStats(const Process& p, const std::vector<long>& total) {
  std::fprintf(stderr, "ohio: served through %s\n", p.binding);
  for (int f = 0; f < kFunctionCount; ++f) {
    std::fprintf(stderr, "ohio: %ld %s calls served by ohiod, %ld handed back to the MPI library (all ranks)\n",
                 total[3 * f], kFunctions[f], total[3 * f + 1]);
    if (total[3 * f + 2] != 0) {
      std::fprintf(stderr, "ohio:   of those, %ld %s calls handed to the MPI library by the selection table (all ranks)\n",
                   total[3 * f + 2], kFunctions[f]);
    }
    for (const auto& [why, n] : TallyOf(kFunctions[f]).table_reasons) {
      std::fprintf(stderr, "ohio:   rank 0: %s: %ld handed to the MPI library by the selection table: %s\n",
                   kFunctions[f], n.load(), why.c_str());
    }
    for (const auto& [why, n] : TallyOf(kFunctions[f]).reasons) {
      std::fprintf(stderr, "ohio:   rank 0: %s: %ld handed back: %s\n", kFunctions[f], n.load(), why.c_str());
    }
  }
}

void ReportAndLeave() {
  Process& p = P();
  if (!p.initialised) return;
  // MPI_Finalize is called by one thread once the program's others are done with MPI: the lock
  // only keeps the rule that what it guards is read under it, and is not held across MPI calls.
  std::set<CommState*> states;
  {
    const std::lock_guard<std::mutex> lock(p.mu);
    states = p.states;
  }
  for (CommState* st : states) FlushHandBacks(st);  // before the connections close
  const int kCount = kFunctionCount;
  std::vector<long> local(3 * kCount), total(3 * kCount);
  for (int f = 0; f < kCount; ++f) {
    const Process::Tally& t = TallyOf(kFunctions[f]);
    local[3 * f] = t.served.load();
    local[3 * f + 1] = t.handed_back.load();
    local[3 * f + 2] = t.by_table.load();
  }
  PMPI_Reduce(local.data(), total.data(), 3 * kCount, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::vector<ohio_client*> clients;
  {
    const std::lock_guard<std::mutex> lock(p.mu);
    if (p.stats && rank == 0) PrintStats(p, total);
  }
  {
    const std::lock_guard<std::mutex> lock(p.connection_mu);
    clients = std::move(p.gone_clients);
    p.gone_clients.clear();
    if (p.client != nullptr) clients.push_back(p.client);
    p.client = nullptr;
  }
  // Attributes of MPI_COMM_WORLD are not deleted by every MPI at finalize: leave explicitly.
  for (CommState* st : states) {
    if (st->group != nullptr) ohio_leave(st->group);
    st->group = nullptr;
    if (st->agreement != MPI_COMM_NULL) PMPI_Comm_free(&st->agreement);
  }
  for (ohio_client* c : clients) ohio_disconnect(c);
}

}  // namespace ohio::shim
