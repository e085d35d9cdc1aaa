// heartbeat_circuits_test.cc -- what a worker's list of resident circuits
// (Hello, heartbeats) can make the coordinator and Redis hold: only ids of
// registered circuits are taken, at most kMaxLoadedCircuits of a list, and
// every key they lead to expires. A real coordinator and redis-server, a
// ScriptedPeer over real ZeroMQ sending heartbeats of 100,000 junk ids.
#include <random>
#include <sstream>

#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "tests/cluster/farm_fixture.h"
#include "tests/cluster/scripted_peer.h"

namespace zkfarm::testing {
namespace {

using namespace std::chrono_literals;

long long used_memory(RedisClient& redis) {
  std::istringstream info(redis.command({"INFO", "memory"}).str);
  for (std::string line; std::getline(info, line);)
    if (line.rfind("used_memory:", 0) == 0) return std::stoll(line.substr(12));
  return -1;
}

std::string random_circuit_id(std::mt19937_64& rng) {
  static const char* hex = "0123456789abcdef";
  std::string id(64, '0');
  for (auto& c : id) c = hex[rng() % 16];
  return id;
}

class HeartbeatCircuitsTest : public FarmTest {};

TEST_F(HeartbeatCircuitsTest, JunkCircuitIdsAreBoundedAndRegisteredOnesStillPlace) {
  start_coordinator();
  RedisClient redis(options_.redis_url);
  const KeyLayout keys;
  const long long keys_before = redis.command({"DBSIZE"}).as_integer();
  const long long memory_before = used_memory(redis);

  // 100,000 ids: well-formed ones of no circuit, and garbage, with the
  // registered fixture circuit among the first kMaxLoadedCircuits (64).
  std::mt19937_64 rng(7);
  ScriptedPeer junk(coordinator_port_);
  for (int i = 0; i < 100000; ++i)
    junk.heartbeat_circuits.push_back(i % 3 == 0 ? "not a circuit \x01 " + std::to_string(i) : random_circuit_id(rng));
  junk.heartbeat_circuits[10] = bn254_.id;
  ASSERT_TRUE(junk.hello(ScriptedPeer::Hello{"junk", 1})) << logs();
  // Its heartbeats (one per 100 ms, each the whole list) for a few seconds,
  // the list changing each second (so each is looked up again).
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 64; ++i)
      if (i != 10) junk.heartbeat_circuits[static_cast<std::size_t>(i)] = random_circuit_id(rng);
    junk.pump(1s, [] { return false; });
  }
  // The registered id reached the worker's record and its pce set; no junk did.
  ASSERT_TRUE(junk.pump(20s, [&] {
    return redis.command({"SISMEMBER", keys.pce(bn254_.id), "junk"}).as_integer() == 1;
  })) << logs();
  EXPECT_EQ(redis.command({"HGET", keys.worker("junk"), WorkerRecord::kLoaded}).str, bn254_.id) << logs();
  EXPECT_NE(coordinator_->log().find("listed 100000 resident circuits; only the first 64 are read"), std::string::npos)
      << logs();

  // Redis stays bounded: a handful of keys more (the worker's record, the
  // pce set), not 100,000; every one of them expires.
  const long long keys_after = redis.command({"DBSIZE"}).as_integer();
  EXPECT_LT(keys_after - keys_before, 10) << keys_before << " -> " << keys_after;
  EXPECT_LT(used_memory(redis) - memory_before, 2 << 20) << "Redis memory grew by more than 2 MiB";
  long long pce_keys = 0;
  const RedisReply pce_sets = redis.command({"KEYS", keys.pce("*")});
  for (const auto& key : pce_sets.as_array()) {
    ++pce_keys;
    EXPECT_GT(redis.command({"TTL", key.as_string()}).as_integer(), 0) << key.as_string() << " has no expiry";
  }
  EXPECT_EQ(pce_keys, 1);
  EXPECT_GT(redis.command({"TTL", keys.worker("junk")}).as_integer(), 0);

  // The coordinator stays responsive: a second peer is welcomed at once.
  ScriptedPeer plain(coordinator_port_);
  ASSERT_TRUE(plain.hello(ScriptedPeer::Hello{"plain", 1}, 10s)) << logs();

  // And the registered id still counts for placement: of two peers with a
  // credit each, the one that holds the circuit resident gets the task.
  farm::submit(options_, job_json("placed", bn254_.id, {"file://" + witness_file("bn128_mul.wtns")}));
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (junk.tasks().empty() && plain.tasks().empty() && std::chrono::steady_clock::now() < deadline) {
    junk.pump(100ms, [&] { return !junk.tasks().empty(); });
    plain.pump(100ms, [&] { return !plain.tasks().empty(); });
  }
  EXPECT_EQ(junk.tasks().size(), 1u) << logs();
  EXPECT_TRUE(plain.tasks().empty()) << logs();
}

}  // namespace
}  // namespace zkfarm::testing
