"""unit_test: a gtest of one pure part, with no daemon, no MPI job and no namespace.

    load("//tests/unit:unit_test.bzl", "unit_test")

    unit_test(
        name = "staging_test",  # srcs: staging_test.cc
        deps = ["//shm/plan"],
    )

gtest_main comes along by itself; size is small unless told; other cc_test attributes (data,
visibility) pass through.
"""

def unit_test(name, deps, size = "small", **kwargs):
    native.cc_test(
        name = name,
        size = size,
        srcs = [name + ".cc"],
        deps = deps + ["@system//:gtest_main"],
        **kwargs
    )
