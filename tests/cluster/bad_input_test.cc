// bad_input_test.cc -- bad jobs fail with a clear error and the farm keeps
// serving: malformed JSON, unknown circuit, wrong witness length, wrong
// curve, missing witness file, garbage without an id.
#include <nlohmann/json.hpp>

#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "formats/wtns.h"
#include "tests/cluster/farm_fixture.h"

namespace zkfarm::testing {
namespace {

using json = nlohmann::json;

TEST_F(FarmTest, BadJobsFailClearlyAndTheFarmKeepsServing) {
  start_coordinator();
  start_worker("w1");
  RedisClient redis(options_.redis_url);
  const std::string queue = KeyLayout().queue(Priority::kNormal);
  const std::string good = "file://" + witness_file("bn128_mul.wtns");
  // A witness one value short.
  auto values = read_wtns<Bn254Fr>(witness_file("bn128_mul.wtns"));
  values.pop_back();
  const std::string short_path = dir_->file("short.wtns");
  write_wtns<Bn254Fr>(short_path, std::span<const Bn254Fr>(values));

  // Raw LPUSHes, as any client could do.
  redis.command({"LPUSH", queue, R"({"id":"malformed","circuit":"abc","partitions":[]})"});
  redis.command({"LPUSH", queue, "this is not json at all"});
  redis.command({"LPUSH", queue, job_json("unknown-circuit", std::string(64, 'f'), {good})});
  redis.command({"LPUSH", queue, job_json("short", bn254_.id, {good, "file://" + short_path})});
  redis.command({"LPUSH", queue, job_json("wrong-curve", bn254_.id, {"file://" + witness_file("bls12381_mul.wtns")})});
  redis.command({"LPUSH", queue, job_json("missing", bn254_.id, {"file:///nonexistent/p.wtns"})});
  farm::submit(options_, job_json("good", bn254_.id, {good, good}));

  auto expect_failed = [&](const std::string& id, const std::string& code, const std::string& fragment) {
    farm::JobStatus s = wait_job(id);
    EXPECT_EQ(s.state, "failed") << id;
    EXPECT_EQ(s.error_code, code) << id << ": " << s.error;
    EXPECT_NE(s.error.find(fragment), std::string::npos) << id << ": " << s.error;
  };
  expect_failed("malformed", "invalidJob", "64 lowercase hex");
  expect_failed("unknown-circuit", "unknownCircuit", "unknown circuit ffff");
  expect_failed("short", "witnessLength", "partition 1");
  expect_failed("short", "witnessLength", "has 6 values but the circuit has 7 signals");
  expect_failed("wrong-curve", "wrongCurve", "BLS12-381");
  expect_failed("missing", "witnessUnavailable", "/nonexistent/p.wtns");
  EXPECT_EQ(wait_job("good").state, "done");
  expect_result_verifies("good", 2);
  // The id-less garbage is recorded, not lost, and nothing stays in processing.
  RedisReply rejected = redis.command({"LRANGE", "zkfarm:rejected", "0", "-1"});
  ASSERT_EQ(rejected.as_array().size(), 1u);
  EXPECT_NE(rejected.as_array()[0].as_string().find("not valid JSON"), std::string::npos);
  EXPECT_EQ(redis.command({"LLEN", "zkfarm:processing:c1"}).as_integer(), 0);
  EXPECT_TRUE(coordinator_->running());
}

TEST_F(FarmTest, UnsatisfiedWitnessFailsWithoutBlamingWorkers) {
  // Registered with its .r1cs, the circuit's PCE has C: the worker checks
  // every constraint and names the first that fails.
  farm::circuit_add(options_, runfile("formats/testdata/bn128_mul.zkey"),
                    runfile("formats/testdata/bn128_mul.r1cs"));
  start_coordinator();
  start_worker("w1");
  start_worker("w2");
  auto values = read_wtns<Bn254Fr>(witness_file("bn128_mul.wtns"));
  values.back() += Bn254Fr::one();
  const std::string bad_path = dir_->file("unsatisfied.wtns");
  write_wtns<Bn254Fr>(bad_path, std::span<const Bn254Fr>(values));
  const std::string good = "file://" + witness_file("bn128_mul.wtns");
  farm::submit(options_, job_json("unsat", bn254_.id, {good, "file://" + bad_path}));
  farm::JobStatus s = wait_job("unsat");
  EXPECT_EQ(s.state, "failed");
  EXPECT_EQ(s.error_code, "unsatisfied") << s.error;
  EXPECT_NE(s.error.find("partition 1"), std::string::npos) << s.error;
  EXPECT_NE(s.error.find("constraint"), std::string::npos) << s.error;
  // Nobody was blamed, and the farm still proves.
  RedisClient redis(options_.redis_url);
  EXPECT_EQ(redis.command({"SCARD", "zkfarm:quarantine"}).as_integer(), 0);
  farm::submit(options_, job_json("still-fine", bn254_.id, {good}));
  EXPECT_EQ(wait_job("still-fine").state, "done");
  expect_result_verifies("still-fine", 1);
}

}  // namespace
}  // namespace zkfarm::testing
