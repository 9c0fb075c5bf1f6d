"""ohiod_test: a gtest that starts real ohiod processes and rank processes (tests/harness).

    load("//tests/integration:ohiod_test.bzl", "ohiod_test")

    ohiod_test(
        name = "user_limits_test",  # srcs: user_limits_test.cc
        data = ["//client:ohioctl"],
        deps = ["//proto:admin_proto"],
    )

ohiod, the verifying rank (tests/tools:alltoall_rank), tests/harness with its cluster of daemons
(tests/harness:cluster) and gtest_main come along by themselves: alltoall_ranks = False leaves
the rank out, cluster = False the cluster. `data` and `deps` add to them; size is medium unless
told; other cc_test attributes (local, tags, shard_count, args) pass through.
"""

def ohiod_test(
        name,
        data = [],
        deps = [],
        size = "medium",
        srcs = None,
        alltoall_ranks = True,
        cluster = True,
        **kwargs):
    native.cc_test(
        name = name,
        size = size,
        srcs = srcs or [name + ".cc"],
        data = ["//daemon:ohiod"] +
               (["//tests/tools:alltoall_rank"] if alltoall_ranks else []) +
               data,
        deps = deps +
               ["//tests/harness"] +
               (["//tests/harness:cluster"] if cluster else []) +
               ["@system//:gtest_main"],
        **kwargs
    )
