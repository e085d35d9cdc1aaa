// end_to_end_test.cc -- the happy path with real parts: redis-server,
// zkfarm-coordinator and two zkfarm-worker processes over ZeroMQ (one
// without witness prefetch, one with); jobs go in through the client API
// and every partition proof comes back verified.
#include <nlohmann/json.hpp>

#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "tests/cluster/farm_fixture.h"

namespace zkfarm::testing {
namespace {

using json = nlohmann::json;

TEST_F(FarmTest, MultiPartitionJobsCompleteAndVerify) {
  start_coordinator();
  // One worker reads each witness just before proving it, the other keeps
  // three prepared ahead of its prover (--prefetch, default 1).
  start_worker("w1", {"--prefetch", "0"});
  start_worker("w2", {"--prefetch", "3"});
  const std::string bn_witness = "file://" + witness_file("bn128_mul.wtns");
  const std::string bls_witness = "file://" + witness_file("bls12381_mul.wtns");
  const std::string bn_id =
      farm::submit(options_, job_json("bn-4", bn254_.id, {bn_witness, bn_witness, bn_witness, bn_witness}));
  const std::string bls_id = farm::submit(options_, job_json("bls-3", bls12381_.id, {bls_witness, bls_witness, bls_witness}, "high"));
  EXPECT_EQ(bn_id, "bn-4");
  farm::JobStatus bn = wait_job(bn_id);
  EXPECT_EQ(bn.state, "done") << bn.error;
  EXPECT_EQ(bn.proved, 4u);
  EXPECT_EQ(bn.attempts, 0u);
  expect_result_verifies(bn_id, 4);
  farm::JobStatus bls = wait_job(bls_id);
  EXPECT_EQ(bls.state, "done") << bls.error;
  expect_result_verifies(bls_id, 3);
  // Filecoin encoding: 192 bytes per partition, in partition order.
  json bls_result = json::parse(*farm::result(options_, bls_id));
  EXPECT_EQ(bls_result["proofs_hex"].get<std::string>().size(), 2u * 192 * 3);
  // Events, done marker and TTL.
  RedisClient redis(options_.redis_url);
  KeyLayout keys;
  EXPECT_GT(redis.command({"TTL", keys.job(bn_id)}).as_integer(), 0);
  EXPECT_GE(redis.command({"LLEN", keys.job_events(bn_id)}).as_integer(), 6);  // started, 4 proved, finished
  EXPECT_EQ(redis.command({"LLEN", keys.processing("c1")}).as_integer(), 0);
  // Both workers are visible (the second may still be joining: tiny jobs
  // can finish on the first before it says hello).
  EXPECT_TRUE(eventually([&] { return farm::workers(options_).size() == 2; }, std::chrono::seconds(30)))
      << farm::workers(options_).size() << " workers visible\n" << logs();
  // Inline and redis:// witnesses work too.
  const std::string wtns = read_file(witness_file("bn128_mul.wtns"));
  redis.command({"SET", "zkfarm:wtns:p1", wtns});
  json j = {{"id", "mixed"}, {"circuit", bn254_.id},
            {"partitions", {{{"witness", "redis://zkfarm:wtns:p1"}},
                            {{"witness_base64", base64_encode(std::vector<std::uint8_t>(wtns.begin(), wtns.end()))}}}}};
  farm::submit(options_, j.dump());
  farm::JobStatus mixed = wait_job("mixed");
  EXPECT_EQ(mixed.state, "done") << mixed.error;
  expect_result_verifies("mixed", 2);
}

TEST_F(FarmTest, CancelQueuedAndSubmitValidation) {
  // No coordinator yet: the job stays queued and cancel ends it at once.
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  farm::submit(options_, job_json("c-1", bn254_.id, {w}));
  EXPECT_EQ(farm::cancel(options_, "c-1"), "cancelled");
  EXPECT_EQ(farm::status(options_, "c-1")->state, "cancelled");
  EXPECT_THROW(farm::submit(options_, job_json("c-1", bn254_.id, {w})), farm::FarmError);  // duplicate id
  EXPECT_THROW(farm::submit(options_, job_json("c-2", std::string(64, 'e'), {w})), farm::FarmError);
  EXPECT_THROW(farm::submit(options_, "{\"circuit\": 3}"), JobError);
  // The cancelled job is dropped by intake without running.
  start_coordinator();
  start_worker("w1");
  const std::string id = farm::submit(options_, job_json("after", bn254_.id, {w}));
  EXPECT_EQ(wait_job(id).state, "done");
  EXPECT_EQ(farm::status(options_, "c-1")->state, "cancelled");
}

TEST_F(FarmTest, CriticalJobsJumpTheQueue) {
  start_coordinator();
  const std::size_t w = start_worker("slow", {"--prove-delay-ms", "300"});
  const std::string wtns = "file://" + witness_file("bn128_mul.wtns");
  farm::submit(options_, job_json("bulk", bn254_.id, {wtns, wtns, wtns, wtns}, "low"));
  ASSERT_TRUE(eventually([&] { return workers_[w]->log().find("task 1 received") != std::string::npos; },
                         std::chrono::seconds(10)));
  farm::submit(options_, job_json("winning-post", bn254_.id, {wtns}, "critical"));
  farm::JobStatus critical = wait_job("winning-post");
  farm::JobStatus bulk = wait_job("bulk");
  ASSERT_EQ(critical.state, "done");
  ASSERT_EQ(bulk.state, "done");
  // The critical job overtook the three low partitions still pending.
  EXPECT_LT(critical.finished_at, bulk.finished_at);
}

}  // namespace
}  // namespace zkfarm::testing
