// Where one rank of a test tool's job is and how it joins: the flags every rank tool takes
// (--socket, --key, --size, --rank, --nodes, --rank-node) and the connect-and-join they lead to.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "client/libohio/ohio.hpp"
#include "tests/tools/key_hex.h"

struct RankPlacement {
  std::string socket, key_hex;
  uint32_t size = 1, rank = 0;
  std::vector<std::string> nodes;
  std::vector<uint32_t> rank_node;

  void AddOptions(CLI::App* app) {
    app->add_option("--socket", socket)->required();
    app->add_option("--key", key_hex, "32 hex digits")->required();
    app->add_option("--size", size)->required();
    app->add_option("--rank", rank)->required();
    app->add_option("--nodes", nodes, "node names (default: the daemon's own)");
    app->add_option("--rank-node", rank_node, "node index per rank (default: all on node 0)");
  }

  // Connects and joins; says why on stdout and returns false if it could not.
  bool Join(ohio::Client* client, ohio::Group* group) {
    unsigned char key[OHIO_KEY_BYTES];
    if (!ParseKey(key_hex, key)) {
      std::printf("rank %u: --key is not 32 hex digits\n", rank);
      return false;
    }
    ohio::CallResult r = ohio::Client::Connect(socket, client);
    if (!r.ok()) {
      std::printf("rank %u: connect error %s\n", rank, r.message.c_str());
      return false;
    }
    if (nodes.empty()) nodes = {client->node_name()};
    if (rank_node.empty()) rank_node.assign(size, 0);
    r = client->Join(key, rank, nodes, rank_node, "", group);
    if (!r.ok()) {
      std::printf("rank %u: join error %s\n", rank, r.message.c_str());
      return false;
    }
    return true;
  }
};
