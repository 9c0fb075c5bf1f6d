"""One fuzz target, built two ways from the same source.

With --config=fuzz (clang, tests/fuzz/fuzz.sh only) the binary is a libFuzzer fuzzer. In every
other build (gcc, the default and ASan passes of tests/run.sh) it is a test that runs the
target once on every input of its checked-in corpus, so seeds and regression inputs are
replayed on each CI run.
"""

def ohio_fuzz_test(name, srcs, deps, size = "small"):
    corpus = "corpus/" + name
    native.cc_test(
        name = name + "_fuzzer",
        size = size,
        srcs = srcs + ["fuzz_check.h"],
        deps = deps + select({
            ":libfuzzer": [],
            "//conditions:default": [":replay_main"],
        }),
        linkopts = select({
            ":libfuzzer": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        args = [native.package_name() + "/" + corpus],
        data = [corpus],
        tags = ["fuzz"],
    )
