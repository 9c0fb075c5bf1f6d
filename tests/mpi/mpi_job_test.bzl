"""mpi_job_test: a gtest of real mpirun jobs (tests/mpi/mpi_job.h) with libohio_mpi preloaded.

    load("//tests/mpi:mpi_job_test.bzl", "mpi_job_test")

    mpi_job_test(
        name = "alltoallw_test",  # srcs: alltoallw_test.cc
        data = ["//tests/mpi:alltoallw_check_openmpi", "//client:libohio_mpi_openmpi.so"],
    )

tests/mpi/on_node.sh (which points each rank at its node's daemon) comes along by itself, and
so do the job and cluster harnesses; `deps` adds to them.
"""

def mpi_job_test(name, data, size = "medium", shard_count = None, deps = []):
    native.cc_test(
        name = name,
        size = size,
        shard_count = shard_count,
        srcs = [name + ".cc"],
        data = ["//tests/mpi:on_node.sh"] + data,
        # mpirun needs the host's process launching and /tmp as they are.
        local = True,
        # The MPI programs are not instrumented: an ASan shim cannot be preloaded into them.
        tags = ["no-asan"],
        deps = deps + [
            "//tests/mpi:mpi_job",
            "//tests/harness",
            "//tests/harness:cluster",
            "@system//:gtest_main",
        ],
    )
