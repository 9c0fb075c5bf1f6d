/* libohio: a rank's side of ohio, the node-level alltoall service.
 *
 * A process connects to the ohiod of its node, joins a group (the ranks of one
 * communicator, named by a 16-byte key they agree on), then calls ohio_alltoall as often as
 * it likes. Every function returns OHIO_OK or an OHIO_ERR_* code; ohio_last_error() then
 * describes the failure for a person. Functions may be called from several threads, but a
 * group must not be used by two threads at once. */
#ifndef OHIO_H_
#define OHIO_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OHIO_KEY_BYTES 16
#define OHIO_DEFAULT_SOCKET "/run/ohio/ohiod.sock"

enum {
  OHIO_OK = 0,
  OHIO_ERR_INVALID_ARGUMENT = 1,
  OHIO_ERR_NO_DAEMON = 2,     /* nothing answers on the socket */
  OHIO_ERR_PROTOCOL = 3,      /* ohiod and libohio do not understand each other */
  OHIO_ERR_REFUSED = 4,       /* join refused: another user's group, or a different view of it */
  OHIO_ERR_NO_MEMORY = 5,     /* the group does not fit in the daemon's configured memory */
  OHIO_ERR_SIZE_MISMATCH = 6, /* ranks passed different bytes_per_rank; the group stays usable */
  OHIO_ERR_GROUP_FAILED = 7,  /* a rank died or left; the group is closed: leave it */
  OHIO_ERR_TIMEOUT = 8,       /* the group did not complete in time; the group is closed */
  OHIO_ERR_DAEMON_LOST = 9,   /* the connection to ohiod broke; the group is closed */
  OHIO_ERR_SYSTEM = 10,
  OHIO_ERR_NOT_SUPPORTED = 11,
  OHIO_ERR_OPTED_OUT = 12,    /* a rank opted out of this call (ohio_alltoall_opt_out); nothing moved */
  OHIO_ERR_SKIPPED = OHIO_ERR_OPTED_OUT /* the old name, kept for programs built with it */
};

typedef struct ohio_client ohio_client;
typedef struct ohio_group ohio_group;

typedef struct ohio_group_spec {
  unsigned char key[OHIO_KEY_BYTES];
  uint32_t size;                 /* ranks in the group */
  uint32_t rank;                 /* this process's rank */
  uint32_t num_nodes;
  const char* const* node_names; /* num_nodes distinct node names, as the daemons call themselves */
  const uint32_t* rank_node;     /* size entries: node index of every rank */
  const char* algorithm;         /* the node-level design, "v1", "v2" or "v3"; NULL: $OHIO_DESIGN (or its former
                                    name $OHIO_ALGORITHM), else the daemon's default */
  /* 0: the group's shared buffers are the daemon's configured sizes, the most any call can use.
   * Else the largest bytes_per_rank the first calls are expected to pass: the buffers are sized
   * to hold one such call (a 2-rank group exchanging 64 bytes then maps kilobytes, not
   * megabytes), and the group grows by itself after a call that outgrew them: every rank joins
   * it again, under a key derived from `key`, with buffers for calls of up to 64 KiB per rank,
   * then with the configured sizes. Every rank passes the same value. */
  uint64_t bytes_per_rank_hint;
} ohio_group_spec;

/* Connects to ohiod at socket_path; NULL means $OHIO_SOCKET, else OHIO_DEFAULT_SOCKET. Waits for
 * ohiod's answer at most $OHIO_TIMEOUT_MS milliseconds (default 60000), as every ohio_join does
 * (OHIO_ERR_TIMEOUT: "ohiod did not answer hello within N ms"). A call to ohiod that is not
 * answered in time gives it up: every later call through this client fails at once with
 * OHIO_ERR_DAEMON_LOST. */
int ohio_connect(const char* socket_path, ohio_client** out);
/* The daemon's node name: what this process passes in node_names for its own node. */
const char* ohio_node_name(const ohio_client* client);
/* Closes the connection; groups still joined through it are left first. */
void ohio_disconnect(ohio_client* client);
/* 1 once the ohiod of this connection has closed it: it exited or was restarted (an upgrade),
 * every group joined through the client is closed, and only a new ohio_connect reaches the
 * daemon that listens on the socket now. 0 while the connection is open, and when libohio gave
 * up on a daemon that did not answer in time (a stopped daemon answers no new connection
 * either). */
int ohio_daemon_gone(const ohio_client* client);

int ohio_join(ohio_client* client, const ohio_group_spec* spec, ohio_group** out);
/* Every rank sends bytes_per_rank bytes to every rank: send holds size blocks in rank
 * order, recv receives them in rank order. send == recv is allowed (in place). A rank that
 * passes a NULL buffer (or NULL counts to ohio_alltoallv) gets OHIO_ERR_INVALID_ARGUMENT and
 * still takes part without data, so the call returns OHIO_ERR_OPTED_OUT on every other rank at
 * once; nothing moved and the group stays usable. */
int ohio_alltoall(ohio_group* group, const void* send, void* recv, size_t bytes_per_rank);
/* Every rank sends sendcounts[j] bytes at send + sdispls[j] to rank j, and receives recvcounts[i]
 * bytes from rank i at recv + rdispls[i] (bytes, not elements). By MPI's rule sendcounts[j] on
 * rank i equals recvcounts[i] on rank j; a pair that differs fails the call on every rank with
 * OHIO_ERR_SIZE_MISMATCH naming it, and the group stays usable. Send and receive ranges must
 * not overlap. Served for groups on one node (a row that fits its share of half the SSB and
 * whose mean block is below OHIO_SINGLE_COPY_BYTES, 32 KiB, is staged there and the ranks meet
 * once; a larger one is read in place, which needs ranks that may read each other's memory),
 * and for groups spanning nodes in as many rounds of the group's shared buffers as the call
 * needs (one when every rank's row fits its share of half the SSB and every node's block for
 * another node fits that node's slot of half its SRB); otherwise (on one node a row that can be
 * neither staged nor read; across nodes a call of more than 2^24 rounds) every rank gets
 * OHIO_ERR_NOT_SUPPORTED and nothing moved. */
int ohio_alltoallv(ohio_group* group, const void* send, const size_t* sendcounts, const size_t* sdispls,
                   void* recv, const size_t* recvcounts, const size_t* rdispls);
/* A nonblocking alltoall, as ohio_alltoall: starts the call and returns at once; ohiod moves the
 * data from send to every rank's recv itself, while the ranks compute, once every rank of the
 * group has started it. send and recv must stay as they are until the call is complete
 * (ohio_test or ohio_wait). Calls are matched across ranks by their order. Up to 8 may be
 * outstanding per group; starting a ninth first waits until the first has been moved (which
 * needs every rank to have started it). ohiod needs CAP_SYS_PTRACE, as root has, to read and
 * write the ranks' memory. On one node a buffer that is not mapped fails the call with
 * OHIO_ERR_INVALID_ARGUMENT on every rank and the group stays usable. Across nodes ohiod plays
 * the ranks' part of the group's ordinary rounds (copy-in, exchange with the other nodes'
 * daemons, copy-out), so the call is checked as a blocking one is (ranks that pass different
 * sizes get OHIO_ERR_SIZE_MISMATCH on every rank of every node); a rank's next blocking call on
 * the group first waits until its started calls are complete, keeping the order it made them
 * in; and a buffer that is not mapped, or a rank gone, fails the group on every node. */
typedef uint64_t ohio_request;
int ohio_ialltoall(ohio_group* group, const void* send, void* recv, size_t bytes_per_rank, ohio_request* request);
/* A nonblocking alltoallv: ohio_alltoallv's counts and displacements (bytes), started and
 * completed like ohio_ialltoall and numbered with its calls (every rank starts the same calls in
 * the same order). The four tables are copied when the call is started; send and recv must stay
 * until it is complete. On one node send may be recv (ohiod reads every piece before it writes
 * any); across nodes, where a call may go in several rounds, the ranges must not overlap.
 * ohiod checks every pair
 * (sendcounts[j] on rank i equals recvcounts[i] on rank j) before it moves anything: a pair that
 * differs fails the call on every rank with OHIO_ERR_SIZE_MISMATCH (on one node naming the first
 * such pair), and the group stays usable. A zero count moves nothing and its displacement is not
 * looked at. Across nodes ohiod plays the ranks' part of the rounds ohio_alltoallv takes (and
 * checks, and refuses with OHIO_ERR_NOT_SUPPORTED, as it does), as for ohio_ialltoall. */
int ohio_ialltoallv(ohio_group* group, const void* send, const size_t* sendcounts, const size_t* sdispls,
                    void* recv, const size_t* recvcounts, const size_t* rdispls, ohio_request* request);
/* Never waits. *done = 0 and OHIO_OK while the call is under way; once it is complete, *done = 1,
 * the call's outcome is returned, and the request is forgotten. A call that can no longer
 * complete is complete with the reason: the group failed, ohiod's connection closed
 * (OHIO_ERR_DAEMON_LOST), or ohiod did not complete it within the group's timeout from its start
 * or from the last progress ohiod made on this rank's calls (OHIO_ERR_TIMEOUT, saying so and that
 * ohiod is stopped if it is; a daemon that runs is given 10 s more to fail the group itself).
 * Testing again and again does not move that deadline. */
int ohio_test(ohio_group* group, ohio_request request, int* done);
/* ohio_test, waiting up to timeout_us for the call to complete (spinning briefly, then sleeping
 * on the group's futex): for a caller that must do something else from time to time while it
 * waits (an MPI library's progress). */
int ohio_test_within(ohio_group* group, ohio_request request, unsigned timeout_us, int* done);
/* Waits until the call is complete, by ohio_test's deadline; returns its outcome and forgets the
 * request. */
int ohio_wait(ohio_group* group, ohio_request request);
/* Takes part in the group's next call without data: that call then returns OHIO_ERR_OPTED_OUT on
 * every rank of the group, on every node, and nothing moves. A rank that cannot take part in
 * a call (an MPI datatype libohio does not serve, say) uses this so that all ranks can do the
 * call some other way together instead of waiting for each other. */
int ohio_alltoall_opt_out(ohio_group* group);
/* The old name of ohio_alltoall_opt_out, kept for programs built with it (and for libohio_mpi
 * libraries of an older release, which call it). */
int ohio_alltoall_skip(ohio_group* group);
/* Which calls the group serves: *table is the selection table's text (one row a line:
 * "function nodes ppn transport bytes path", the first matching row wins, a call no row matches
 * goes to the MPI library), *transport the daemons' transport among nodes ("tcp" or "verbs").
 * Waits, the first time, until every node's daemon has met the others (at most the group's
 * timeout): they compare their tables then, and a group whose nodes hold different tables fails
 * with OHIO_ERR_GROUP_FAILED naming both. The strings live as long as the group. */
int ohio_group_selection(ohio_group* group, const char** table, const char** transport);
/* Counts, in ohiod's counters, a call of `function` (OHIO_FUNCTION_*) that every rank of the
 * group handed to the MPI library for `reason` (OHIO_HANDED_BACK_*): ohioctl counters and the
 * metrics show them by function and reason. Every rank of the group calls it alike; the count
 * is taken once per node (by its first rank), so ohiod counts the group's calls, not its ranks'.
 * Never waits; OHIO_ERR_INVALID_ARGUMENT for a number out of range. */
enum {
  OHIO_FUNCTION_ALLTOALL = 0,
  OHIO_FUNCTION_ALLTOALLV = 1,
  OHIO_FUNCTION_ALLTOALLW = 2,
  OHIO_FUNCTION_IALLTOALL = 3,
  OHIO_FUNCTION_IALLTOALLV = 4
};
enum {
  OHIO_HANDED_BACK_SELECTION_TABLE = 0,     /* the selection table's verdict, alike on every rank */
  OHIO_HANDED_BACK_RANK_OPTED_OUT = 1,      /* a rank opted out (ohio_alltoall_opt_out) */
  OHIO_HANDED_BACK_IALLTOALL_MIN_BYTES = 2, /* below the program's OHIO_IALLTOALL_MIN_BYTES */
  OHIO_HANDED_BACK_NOT_SUPPORTED = 3        /* ohio cannot serve the call (OHIO_ERR_NOT_SUPPORTED) */
};
int ohio_count_handed_back(ohio_group* group, int function, int reason);
/* Which calls a group created now would serve, before any is joined: the selection table ohiod
 * gives new groups (as ohio_group_selection's), its transport, its digest (as the daemons of a
 * group compare them: ranks whose digests match hold the same table), and its generation, which
 * a SIGHUP that changes the table moves on. Without a system call while the table is the one
 * this client last saw (a page ohiod shares tells), else asked of ohiod. The strings live as
 * long as the client. OHIO_ERR_NOT_SUPPORTED from an ohiod that offers none (an older one):
 * join a group to learn its table. */
int ohio_client_selection(ohio_client* client, const char** table, const char** transport, const char** digest,
                          uint64_t* generation);
/* Adds `calls` to ohiod's count of calls of `function` handed to the MPI library for `reason`
 * (as ohio_count_handed_back_calls) for a communicator that has no group: its ranks decided
 * them by ohio_client_selection's table. Written to a page this connection shares with ohiod:
 * no system call, no message, never waits; one rank per node counts, as for a group.
 * OHIO_ERR_NOT_SUPPORTED from an ohiod that offers no table before a join. */
int ohio_client_count_handed_back_calls(ohio_client* client, int function, int reason, uint64_t calls);
/* The same for `calls` such calls at once: a binding that counts its hand-backs itself (so that
 * a handed-back call costs no call into libohio) adds them up now and then. */
int ohio_count_handed_back_calls(ohio_group* group, int function, int reason, uint64_t calls);
/* OHIO_OK while the group can still serve calls, else the error that closed it; never waits. */
int ohio_group_check(ohio_group* group);
/* 1 where ohio_group_check would return OHIO_OK, else 0 (then it says why): the same test without
 * recording an error, for a binding's every call. */
int ohio_group_usable(ohio_group* group);
/* Leaves the group and frees it, whatever state it is in. Waits for ohiod's answer at most the
 * group's timeout (its timeout-ms); a collective that found ohiod stopped at that timeout has
 * given it up already, and leaving then returns OHIO_ERR_DAEMON_LOST at once. */
int ohio_leave(ohio_group* group);

const char* ohio_strerror(int code);
/* What went wrong in this thread's last failed call, for a person. */
const char* ohio_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* OHIO_H_ */
