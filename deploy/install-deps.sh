#!/bin/bash
# Installs, from Debian 12's archive, what ohio needs.
#
#   deploy/install-deps.sh              everything: build all targets, run every test (tests/run.sh,
#                                       .ci/run), the benchmarks, Slurm, the QEMU guest
#   deploy/install-deps.sh --main-job   only what deploy/local-cluster.sh needs: build ohiod,
#                                       ohioctl and alltoall_bench, and run them on emulated nodes
#
# Idempotent: packages already present are left alone, and apt is not even asked then.
set -euo pipefail

MAIN_JOB=(
  # build ohiod, ohioctl and alltoall_bench
  bazel-bootstrap g++ protobuf-compiler protobuf-compiler-grpc libprotobuf-dev libgrpc++-dev
  libspdlog-dev libfmt-dev libhwloc-dev libibverbs-dev libsystemd-dev libcli11-dev
  nlohmann-json3-dev
  # peer authentication: libmunge to build; munged for ohiod to run with auth = munge (tests and
  # deploy/local-cluster.sh start their own, with a key of their own)
  libmunge-dev munge
  # deploy/local-cluster.sh: ip and ss, ps, flock, timeout
  iproute2 procps util-linux coreutils
  # deploy/local-cluster.sh and deploy/mpi-compare.sh plot latency against message size
  gnuplot-nox
)

EVERYTHING_ELSE=(
  # the RDMA connection manager (third_party/system.BUILD offers it as @system//:rdmacm)
  librdmacm-dev
  # Abseil (headers only: absl::FunctionRef in the MPI core); libgrpc++-dev pulls it in too
  libabsl-dev
  # the MPI interposition library is built for both MPIs; their launchers run its tests
  openmpi-bin libopenmpi-dev mpich libmpich-dev
  # tests/mpi/fortran_check.F90 is built with mpifort.openmpi and mpifort.mpich, which run gfortran
  gfortran
  # a real application through the shim (tests/mpi/apps/hpcc_test.cc, tests/bench/hpcc_compare.sh;
  # Debian's hpcc is linked to Open MPI); GNU time counts the benchmark's CPU time and switches
  hpcc time
  # real Fortran and Python programs through ohio: Quantum ESPRESSO's pw.x (linked to Open MPI;
  # tests/mpi/apps/qe_test.cc), mpi4py and mpi4py-fft (tests/mpi/apps/mpi4py_test.cc)
  quantum-espresso python3-mpi4py python3-mpi4py-fft
  # a real Slurm for deploy/slurm-cluster.sh and tests/slurm: controller, node daemon, clients,
  # and slurmdbd on a MariaDB server (sacct in Slurm 22.05 reads only slurmdbd); each run starts
  # its own, on a datadir of its own
  slurmctld slurmd slurm-client slurmdbd mariadb-server
  # tests
  libgtest-dev libgmock-dev python3
  # tests/fuzz: libFuzzer targets built with clang (libFuzzer, ASan and UBSan runtimes), linked by lld
  clang-14 libclang-rt-14-dev lld-14
  # tests/trixie: a Debian 13 root with its Open MPI 5.0 and MPICH 4.2 (tests/trixie/make-root.sh)
  debootstrap
  # tests/bench/verbs_vs_tcp.sh reads ohioctl's JSON with jq (python3 starts slowly in the guest)
  jq
  # ohio-sim (sim/): SimGrid's S4U library to build it, smpicc and smpirun for the MPI side of
  # sim/compare.sh
  libsimgrid-dev
  # deploy/ohiod.service is checked with systemd-analyze verify
  systemd
  # deploy/build-debs.sh builds the Debian packages with dpkg-buildpackage and debhelper;
  # tests/packaging checks them with lintian (dpkg-dev and fakeroot come with debhelper)
  debhelper lintian
  # tests/vm: a QEMU guest with Debian's kernel and Soft-RoCE (rdma_rxe) runs the verbs tests.
  # busybox and cpio make its initramfs, kmod loads the modules; the guest runs on this host's
  # root, so the user-space rxe driver (ibverbs-providers, only recommended by libibverbs1) and
  # the tools to look at the devices are installed here (`rdma` itself is iproute2's)
  qemu-system-x86 linux-image-amd64 busybox-static cpio kmod
  ibverbs-providers rdma-core ibverbs-utils rdmacm-utils perftest
)

case "${1:-}" in
  '') PACKAGES=("${MAIN_JOB[@]}" "${EVERYTHING_ELSE[@]}") ;;
  --main-job) PACKAGES=("${MAIN_JOB[@]}") ;;
  -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "install-deps.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "install-deps.sh: one argument at most (see --help)" >&2; exit 2; }

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
