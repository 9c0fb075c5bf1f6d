"""netns_test: a shell test over two network namespaces with one ohiod in each (netns_two_nodes.sh).

    load(":netns_test.bzl", "netns_test")

    netns_test(
        name = "netns_stopped_daemon_test",  # srcs: netns_stopped_daemon_test.sh
        data = ["//tests/mpi/daemon:stopped_daemon_check_openmpi", "//client:libohio_mpi_openmpi.so"],
    )

netns_two_nodes.sh, the deploy/lib scripts it sources and ohiod come along by themselves.
"""

def netns_test(name, data):
    native.sh_test(
        name = name,
        size = "medium",
        srcs = [name + ".sh"],
        data = data + [
            "netns_two_nodes.sh",
            "//:deploy/lib/netns-cluster.sh",
            "//:deploy/lib/netns-ssh.sh",
            "//:deploy/lib/processes.sh",
            "//daemon:ohiod",
        ],
        # Namespaces, veths and mpirun need the host as it is (root, no sandbox).
        local = True,
        # The MPI programs are not instrumented: an ASan shim cannot be preloaded into them.
        tags = ["no-asan"],
    )
