"""Compiles .proto files with the system protoc and grpc_cpp_plugin (no download)."""

def system_cc_proto(name, srcs, grpc = False, deps = []):
    """Generates C++ (and gRPC stubs when grpc=True) for srcs and wraps them in a cc_library.

    Args:
      name: the cc_library's name.
      srcs: .proto files in this package, importing each other as "proto/<file>".
      grpc: whether the files declare services that need gRPC stubs.
      deps: other system_cc_proto libraries whose protos these import.
    """
    bases = [s[:-len(".proto")] for s in srcs]
    outs = []
    for b in bases:
        outs += [b + ".pb.h", b + ".pb.cc"]
        if grpc:
            outs += [b + ".grpc.pb.h", b + ".grpc.pb.cc"]
    grpc_flags = ""
    tools = ["@system//:bin/protoc"]
    if grpc:
        grpc_flags = "--grpc_out=$(GENDIR) --plugin=protoc-gen-grpc=$(location @system//:bin/grpc_cpp_plugin) "
        tools.append("@system//:bin/grpc_cpp_plugin")
    native.genrule(
        name = name + "_gen",
        srcs = srcs + [d + "_srcs" for d in deps],
        outs = outs,
        tools = tools,
        cmd = "$(location @system//:bin/protoc) --proto_path=. --cpp_out=$(GENDIR) " + grpc_flags +
              " ".join(["$(location %s)" % s for s in srcs]),
    )
    native.filegroup(
        name = name + "_srcs",
        srcs = srcs,
    )
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        deps = deps + (["@system//:grpc"] if grpc else ["@system//:protobuf"]),
    )
