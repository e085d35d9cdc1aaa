// job_intake_test.cc -- what a hostile or careless client can push at the
// farm's intake, against real processes (redis-server, zkfarm-coordinator,
// zkfarm-worker, the `zkfarm` CLI): JSON nested deeper than any parser
// stack, ids that name other jobs' Redis keys. Each case fails the bad
// submission with a clear error and leaves every other job and the
// coordinator untouched.
#include <nlohmann/json.hpp>

#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "tests/cluster/farm_fixture.h"

namespace zkfarm::testing {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

class JobIntakeTest : public FarmTest {
 protected:
  // Runs the real `zkfarm` binary against this farm.
  CommandResult zkfarm(std::vector<std::string> args) {
    args.insert(args.begin(), runfile("cli/zkfarm"));
    CommandResult r = run_command(args, dir_->path(),
                                  {{"ZKFARM_REDIS", options_.redis_url}, {"ZKFARM_ARTIFACTS", options_.artifacts}});
    last_ = "exit " + std::to_string(r.exit_code) + "\nstdout: " + r.out + "\nstderr: " + r.err;
    return r;
  }
  // The <p>rejected entries, parsed.
  std::vector<json> rejected(RedisClient& redis) {
    std::vector<json> out;
    const RedisReply entries = redis.command({"LRANGE", "zkfarm:rejected", "0", "-1"});
    for (const auto& e : entries.as_array()) out.push_back(json::parse(e.as_string()));
    return out;
  }
  std::string last_;
  const std::string queue_ = KeyLayout().queue(Priority::kNormal);
};

// Job JSON whose metadata is `levels` nested arrays (2 bytes a level).
std::string with_nested_metadata(const std::string& job, std::size_t levels) {
  std::string text = job;
  text.pop_back();  // the closing brace
  return text + ",\"metadata\":" + std::string(levels, '[') + std::string(levels, ']') + "}";
}

TEST_F(JobIntakeTest, DeeplyNestedJobFailsInvalidJobAndNothingCrashes) {
  start_coordinator();
  start_worker("w1");
  RedisClient redis(options_.redis_url);
  const std::string good = "file://" + witness_file("bn128_mul.wtns");
  // 100,000 nested arrays, a 200 KB job: serializing it recursed once per
  // level and overflowed the coordinator's stack (and the CLI's).
  const std::string deep = with_nested_metadata(job_json("deep", bn254_.id, {good}), 100000);
  ASSERT_GT(deep.size(), 200000u);
  redis.command({"LPUSH", queue_, deep});
  const std::string path = dir_->file("deep.json");
  write_file(path, with_nested_metadata(job_json("deep-cli", bn254_.id, {good}), 100000));
  CommandResult r = zkfarm({"submit", path});
  EXPECT_EQ(r.exit_code, 2) << last_;
  EXPECT_NE(r.err.find("invalid job: metadata: arrays/objects nested more than 32 levels deep"), std::string::npos)
      << last_;
  EXPECT_FALSE(farm::status(options_, "deep-cli"));

  farm::JobStatus s = wait_job("deep", 30s);
  EXPECT_EQ(s.state, "failed");
  EXPECT_EQ(s.error_code, "invalidJob") << s.error;
  EXPECT_NE(s.error.find("nested more than 32 levels deep"), std::string::npos) << s.error;
  EXPECT_EQ(redis.command({"LLEN", "zkfarm:processing:c1"}).as_integer(), 0);
  farm::submit(options_, job_json("after", bn254_.id, {good}));
  EXPECT_EQ(wait_job("after", 30s).state, "done");
  expect_result_verifies("after", 1);
  EXPECT_TRUE(coordinator_->running());
}

TEST_F(JobIntakeTest, JobIdsCannotNameAnotherJobsKeys) {
  start_coordinator();
  start_worker("w1");
  RedisClient redis(options_.redis_url);
  const std::string good = "file://" + witness_file("bn128_mul.wtns");
  // Each raw push goes in ahead of the job whose keys it names: job:coll:events
  // would become a hash (coll's event list then fails with WRONGTYPE) and
  // job:r1:result would be r1:result's record, overwritten by r1's result.
  redis.command({"LPUSH", queue_, job_json("coll:events", bn254_.id, {good})});
  redis.command({"LPUSH", queue_, job_json("r1:result", bn254_.id, {good})});
  farm::submit(options_, job_json("coll", bn254_.id, {good}));
  farm::submit(options_, job_json("r1", bn254_.id, {good, good}));
  CommandResult r = zkfarm({"submit", bn254_.id, witness_file("bn128_mul.wtns"), "--id", "coll:proofs"});
  EXPECT_EQ(r.exit_code, 2) << last_;
  EXPECT_NE(r.err.find("'coll:proofs' is not a valid job id (1..128 characters of A-Z a-z 0-9 . _ -)"),
            std::string::npos)
      << last_;
  r = zkfarm({"status", "r1:result"});
  EXPECT_EQ(r.exit_code, 2) << last_;
  EXPECT_NE(r.err.find("'r1:result' is not a valid job id"), std::string::npos) << last_;

  EXPECT_EQ(wait_job("coll", 30s).state, "done");
  EXPECT_EQ(wait_job("r1", 30s).state, "done");
  expect_result_verifies("coll", 1);
  expect_result_verifies("r1", 2);
  EXPECT_EQ(json::parse(*farm::result(options_, "r1"))["id"], "r1");
  // coll's events are a list of coll's events only.
  EXPECT_EQ(redis.command({"TYPE", "zkfarm:job:coll:events"}).str, "list");
  const RedisReply events = redis.command({"LRANGE", "zkfarm:job:coll:events", "0", "-1"});
  for (const auto& e : events.as_array())
    EXPECT_EQ(json::parse(e.as_string())["job"], "coll") << e.as_string();
  // The bad ids were rejected without a record of their own.
  std::vector<json> entries = rejected(redis);
  ASSERT_EQ(entries.size(), 2u);
  for (const auto& e : entries) {
    EXPECT_EQ(e["error_code"], "invalidJob") << e.dump();
    EXPECT_NE(e["error"].get<std::string>().find("is not a valid job id"), std::string::npos) << e.dump();
  }
  EXPECT_EQ(redis.command({"LLEN", "zkfarm:processing:c1"}).as_integer(), 0);
  EXPECT_TRUE(coordinator_->running());
}

}  // namespace
}  // namespace zkfarm::testing
