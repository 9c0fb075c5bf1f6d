# shellcheck shell=bash
# Shell functions shared by deploy/local-cluster.sh, deploy/mpi-compare.sh and the tests that run
# MPI jobs across namespaces: one machine as a cluster of network namespaces. Source it (bash); set NETNS_PROG (the prefix of messages) first.
#
# Node I is the namespace ohio-nodeI with a veth pair: veth0 (10.77.0.(I+1)/24) inside, ohio-vI
# on the bridge ohio-br0 (10.77.0.254/24) in the root namespace. Only these scripts make
# namespaces, links or processes with these names, so whatever is found is theirs.

NETNS_LIB=${BASH_SOURCE[0]}
BRIDGE=ohio-br0
ns_name() { echo "ohio-node$1"; }
veth_name() { echo "ohio-v$1"; }   # root side; the namespace side is called veth0
node_ip() { echo "10.77.0.$(( $1 + 1 ))"; }
node_mac() { printf '02:77:00:00:%02x:%02x\n' $(( ($1 + 1) / 256 )) $(( ($1 + 1) % 256 )); }

# Two runs at once (of either script) would fight over the namespace names and each other's
# timings. The lock is on this file, held on fd 9 until the script exits, so no lock file is
# left behind. $1: seconds to wait for it.
netns_lock() {
  exec 9<"$NETNS_LIB"
  flock -w "${1:-30}" 9 || {
    echo "$NETNS_PROG: another run of deploy/local-cluster.sh or deploy/mpi-compare.sh holds the lock on $NETNS_LIB" >&2
    exit 1
  }
}

# wait_gone, stop_pid
. "$(dirname "$NETNS_LIB")/processes.sh"

# Removes every namespace, veth and the bridge these scripts make, and waits until the kernel
# has really let go of them (namespace teardown is asynchronous).
teardown_network() {
  local i ns pids deadline
  for ns in $(ip netns list 2>/dev/null | awk '$1 ~ /^ohio-node[0-9]+$/ {print $1}'); do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    if [ -n "$pids" ]; then
      # Only these scripts start processes in ohio-node namespaces: these are from a run that
      # was killed before it could clean up.
      echo "$NETNS_PROG: stopping leftover processes in $ns: $pids" >&2
      for p in $pids; do stop_pid "$p"; done
    fi
    ip netns del "$ns" 2>/dev/null || true
  done
  for i in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E '^ohio-v[0-9]+$' || true); do
    ip link del "$i" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
  deadline=$(( SECONDS + 15 ))
  while ip -o link show 2>/dev/null | grep -qE ': (ohio-v[0-9]+|ohio-br0)[@:]' ||
        ip netns list 2>/dev/null | grep -qE '^ohio-node[0-9]+'; do
    if [ $SECONDS -ge $deadline ]; then
      echo "$NETNS_PROG: links or namespaces still present after 15 s:" >&2
      ip -o link show | grep -E 'ohio-' >&2 || true
      ip netns list | grep -E '^ohio-' >&2 || true
      return 1
    fi
    sleep 0.2
  done
}

# True if nothing of ours is left (after teardown_network).
network_gone() {
  ! ip netns list | grep -qE '^ohio-' && ! ip -o link show | grep -qE ': ohio-'
}

# Makes the bridge and $1 nodes (after removing whatever an earlier run left).
setup_network() {
  local i ns v
  teardown_network
  ip link add "$BRIDGE" type bridge
  ip addr add 10.77.0.254/24 dev "$BRIDGE"
  ip link set "$BRIDGE" up
  for ((i = 0; i < $1; i++)); do
    ns=$(ns_name $i); v=$(veth_name $i)
    ip netns add "$ns"
    ip link add "$v" type veth peer name veth0 netns "$ns" address "$(node_mac $i)"
    ip link set "$v" master "$BRIDGE" up
    ip -n "$ns" addr add "$(node_ip $i)/24" dev veth0
    ip -n "$ns" link set veth0 up
    ip -n "$ns" link set lo up
  done
  static_neighbours "$1"
}

# static_neighbours K: every node and the root namespace know every other's MAC address from
# the start (permanent neighbour entries). The kernel keeps one ARP table for all namespaces,
# bounded by the root namespace's net.ipv4.neigh.default.gc_thresh3 (1024 by default): at 32
# nodes the nodes' 32 x 31 learned entries and the bridge's overflowed it ("neighbour table
# overflow" in dmesg), and a SYN to a peer whose entry could not be made waited in its namespace
# for TCP's retries, so that groups took many times longer to open than with these entries
# (docs/investigations/group-setup-at-32-namespaces.md has the figures). Permanent entries do
# not count towards that bound, and a real cluster's hosts do not share one table.
static_neighbours() {
  local i j bridge_mac
  bridge_mac=$(cat "/sys/class/net/$BRIDGE/address")
  for ((i = 0; i < $1; i++)); do
    {
      echo "neigh replace 10.77.0.254 lladdr $bridge_mac dev veth0 nud permanent"
      for ((j = 0; j < $1; j++)); do
        [ "$j" = "$i" ] || echo "neigh replace $(node_ip $j) lladdr $(node_mac $j) dev veth0 nud permanent"
      done
    } | ip -n "$(ns_name $i)" -batch -
  done
  for ((j = 0; j < $1; j++)); do
    echo "neigh replace $(node_ip $j) lladdr $(node_mac $j) dev $BRIDGE nud permanent"
  done | ip -batch -
}

# start_munged DIR: this run's own munged (a fresh key DIR/munge.key, socket DIR/munge.sock,
# log DIR/munged.log) in the root namespace; the nodes' daemons share it, as a real cluster's
# share one key, and authenticate each other with it (auth = munge; a unix socket is reached
# from every network namespace). Sets MUNGED_PID and MUNGE_SOCKET; exits if it does not answer
# within 30 s.
start_munged() {
  local dir=$1 force=() deadline=$(( SECONDS + 30 ))
  [ "$(id -u)" = 0 ] && force=(--force)  # munged refuses to run as root unless forced
  /usr/sbin/mungekey --create --keyfile="$dir/munge.key"
  /usr/sbin/munged --foreground "${force[@]}" --socket="$dir/munge.sock" --key-file="$dir/munge.key" \
    --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" >/dev/null 2>&1 &
  MUNGED_PID=$!
  MUNGE_SOCKET=$dir/munge.sock
  until munge --no-input --socket="$MUNGE_SOCKET" >/dev/null 2>&1; do
    if ! kill -0 "$MUNGED_PID" 2>/dev/null || [ $SECONDS -ge $deadline ]; then
      echo "$NETNS_PROG: munged did not come up:" >&2
      cat "$dir/munged.log" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "  munged pid $MUNGED_PID at $MUNGE_SOCKET (a key of this run's own)"
}

# node_cpus K: the CPUs each of K emulated nodes counts as its own (its share of this host's):
# beyond 8 processes per CPU neither daemons nor ranks spin (docs/OPERATIONS.md, "Spinning").
node_cpus() {
  awk -v c="$(nproc)" -v k="$1" 'BEGIN { printf "%.4g", c / k }'
}

# start_ohiod I DIR HOST PEER_PORT DATA_PORT NETNS|"" [--peer ...]: starts node I's ohiod (name
# nodeI, sockets DIR/nodeI.sock and DIR/nodeI.admin.sock, log DIR/nodeI.log, peers
# authenticated by the munged of start_munged, which must run), inside namespace NETNS unless
# it is empty; appends its pid to DAEMON_PIDS and prints one line about it.
start_ohiod() {
  local i=$1 dir=$2 host=$3 peer_port=$4 data_port=$5 ns=$6 where=""
  shift 6
  : "${MUNGE_SOCKET:?start_munged first}"
  local cmd=("$dir/ohiod" --node-name "node$i" --socket "$dir/node$i.sock" --admin-socket "$dir/node$i.admin.sock"
             --listen "$host" --advertise "$host" --peer-port "$peer_port"
             --data-port "$data_port" --timeout-ms 30000 --auth munge --munge-socket "$MUNGE_SOCKET" "$@")
  if [ -n "$ns" ]; then
    ip netns exec "$ns" "${cmd[@]}" 2> "$dir/node$i.log" &
    where=" in namespace $ns"
  else
    "${cmd[@]}" 2> "$dir/node$i.log" &
  fi
  DAEMON_PIDS+=($!)
  echo "  node$i: ohiod pid $! at $host, peer port $peer_port, data port $data_port$where"
}

# wait_ohiod_up I DIR PID: waits up to 30 s until node I's socket accepts; exits if it does not.
wait_ohiod_up() {
  local i=$1 dir=$2 pid=$3
  if ! wait_socket_accepts "$dir/node$i.sock" "$pid" 30; then
    echo "$NETNS_PROG: ohiod node$i did not come up:" >&2
    cat "$dir/node$i.log" >&2
    exit 1
  fi
}

# start_netns_cluster K DIR [ohiod flag...]: the whole emulated cluster: K nodes (setup_network),
# this run's munged (start_munged) and, in every node's namespace, an ohiod (start_ohiod:
# DIR/ohiod, peer port 7470, data port 7471, every node a peer of every other, the flags added);
# returns once every daemon accepts. stop_netns_cluster undoes it.
start_netns_cluster() {
  local k=$1 dir=$2 i peers=()
  shift 2
  setup_network "$k"
  for ((i = 0; i < k; i++)); do peers+=(--peer "node$i=$(node_ip $i):7470"); done
  start_munged "$dir"
  for ((i = 0; i < k; i++)); do
    start_ohiod $i "$dir" "$(node_ip $i)" 7470 7471 "$(ns_name $i)" "${peers[@]}" "$@"
  done
  for ((i = 0; i < k; i++)); do wait_ohiod_up $i "$dir" "${DAEMON_PIDS[$i]}"; done
}

# stop_netns_cluster: stops the daemons and munged, removes the network; false if a namespace
# or link was left behind.
stop_netns_cluster() {
  local pid
  for pid in "${DAEMON_PIDS[@]}"; do stop_pid "$pid"; done
  [ -n "${MUNGED_PID:-}" ] && stop_pid "$MUNGED_PID"
  teardown_network
}
