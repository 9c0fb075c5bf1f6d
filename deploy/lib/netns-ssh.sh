#!/bin/sh
# An ssh stand-in for MPI launchers (Open MPI's plm_rsh_agent, MPICH hydra's -launcher-exec) on
# the namespace cluster of deploy/lib/netns-cluster.sh: `netns-ssh.sh [ssh options] HOST CMD...`
# runs CMD (words joined by spaces and parsed by /bin/sh, as ssh does) as "host" HOST: inside
# its network namespace, in a UTS namespace of its own whose host name is the namespace's (so
# MPI_Get_processor_name tells the hosts apart) and an IPC namespace of its own (so UCX does
# not take two "hosts" for one and use /dev/shm between them).
#
# HOST: 10.77.0.(I+1), ohio-nodeI or nodeI -> namespace ohio-nodeI. If OHIO_NETNS_SOCKET_DIR is
# set, CMD (the launcher's daemon, and through it every rank it starts) gets
# OHIO_SOCKET=$OHIO_NETNS_SOCKET_DIR/nodeI.sock: the ohiod of that node.
set -eu

# Drop ssh options; those that take a value drop it too.
while [ $# -gt 0 ]; do
  case "$1" in
    -[BbcDEeFIiJLlmOopQRSWw]) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || { echo "netns-ssh.sh: usage: netns-ssh.sh [ssh options] HOST COMMAND..." >&2; exit 255; }
host=$1
shift

case "$host" in
  10.77.0.*) i=$(( ${host#10.77.0.} - 1 )) ;;
  ohio-node*) i=${host#ohio-node} ;;
  node*) i=${host#node} ;;
  *) echo "netns-ssh.sh: unknown host $host" >&2; exit 255 ;;
esac
case "$i" in ''|*[!0-9]*) echo "netns-ssh.sh: unknown host $host" >&2; exit 255 ;; esac
ns=ohio-node$i
[ -e "/var/run/netns/$ns" ] || { echo "netns-ssh.sh: no namespace $ns for host $host" >&2; exit 255; }

setup="hostname $ns"
if [ -n "${OHIO_NETNS_SOCKET_DIR:-}" ]; then
  setup="$setup; OHIO_SOCKET='$OHIO_NETNS_SOCKET_DIR/node$i.sock'; export OHIO_SOCKET"
fi
exec ip netns exec "$ns" unshare --uts --ipc /bin/sh -c "$setup; $*"
