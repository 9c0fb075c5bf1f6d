"""rxe_vm_test: run a gtest binary inside a Soft-RoCE guest (tests/vm/rxe_guest.sh).

    load("//tests/vm:rxe_vm_test.bzl", "rxe_vm_test")

    cc_binary(
        name = "verbs_smoke",
        testonly = True,
        srcs = ["verbs_smoke_test.cc"],
        deps = ["@system//:ibverbs", "@system//:gtest_main"],
    )

    rxe_vm_test(
        name = "verbs_smoke_test",
        binary = ":verbs_smoke",
    )

`binary` should be a testonly cc_binary: a cc_test would also run on the host, where there are
no RDMA devices. Its data dependencies come along in the runfiles and are found as usual
(TEST_SRCDIR is passed into the guest). Each test boots one guest (about 10 s), so put a binary's
cases in one target rather than one target per case.
"""

# Why each tag:
#   local      QEMU and its 9p shares need the real filesystem (no sandbox); runfiles, the
#              output base and TEST_TMPDIR are then the same paths in the guest as here.
#   exclusive  the emulated guest needs both cores; anything running beside it slows it down.
#   no-asan    the guest runs what was built; tests/run.sh's ASan pass skips these targets.
#   rxe-vm     select or exclude these tests: --test_tag_filters=-rxe-vm
_TAGS = ["local", "exclusive", "no-asan", "rxe-vm"]

def rxe_vm_test(
        name,
        binary,
        args = [],
        env = {},
        data = [],
        size = "medium",
        timeout = None,
        tags = [],
        **kwargs):
    """A test that runs the gtest `binary` as root in a guest with rxe0 and rxe1.

    Args:
      name: the test's name.
      binary: label of the gtest program (a testonly cc_binary).
      args: arguments for the program (after them come any --test_arg).
      env: extra environment for the program (e.g. {"GTEST_FILTER": "Suite.*"}); the guest
        gets the test's whole environment.
      data: more runfiles for the program.
      size: Bazel test size; the guest's own timeout is Bazel's less a minute for the boot.
      timeout: Bazel test timeout, if not the size's.
      tags: more tags; "local", "exclusive", "no-asan" and "rxe-vm" are always added.
      **kwargs: passed to the sh_test (e.g. visibility, flaky).
    """
    native.sh_test(
        name = name,
        srcs = ["//tests/vm:run_gtest_in_guest.sh"],
        args = [
            "$(rootpath %s)" % "//tests/vm:rxe_guest.sh",
            "$(rootpath %s)" % binary,
        ] + args,
        data = ["//tests/vm:rxe_guest.sh", binary] + data,
        env = env,
        size = size,
        timeout = timeout,
        tags = tags + [t for t in _TAGS if t not in tags],
        **kwargs
    )
