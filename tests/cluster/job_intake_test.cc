// job_intake_test.cc -- what a hostile or careless client can push at the
// farm's intake, against real processes (redis-server, zkfarm-coordinator,
// zkfarm-worker, the `zkfarm` CLI): JSON nested deeper than any parser
// stack, ids that name other jobs' Redis keys, a second job under a taken
// id, an entry that crashes the coordinator, recovery racing the end of a
// job, and more held jobs than the memory budget. Each case fails or
// defers the bad submission with a clear error and leaves every other job
// and the coordinator untouched.
#include <nlohmann/json.hpp>

#include <atomic>
#include <thread>

#include "cluster/job_store.h"
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

TEST_F(JobIntakeTest, ADuplicateIdNeverTouchesTheExistingJob) {
  RedisClient redis(options_.redis_url);
  const std::string good = "file://" + witness_file("bn128_mul.wtns");
  const std::string bls = "file://" + witness_file("bls12381_mul.wtns");
  farm::submit(options_, job_json("dup", bn254_.id, {good}, "low"));
  CommandResult r = zkfarm({"submit", bn254_.id, witness_file("bn128_mul.wtns"), "--id", "dup"});
  EXPECT_EQ(r.exit_code, 2) << last_;
  EXPECT_NE(r.err.find("a job with id dup already exists (queued); nothing was submitted"), std::string::npos)
      << last_;
  // Raw pushes naming the queued job, ahead of it: another job, then
  // malformed JSON. They used to replace it, then fail it.
  const std::string critical = KeyLayout().queue(Priority::kCritical);
  redis.command({"LPUSH", critical, job_json("dup", bls12381_.id, {bls, bls}, "critical")});
  redis.command({"LPUSH", critical, R"({"id":"dup","circuit":"zz","partitions":[]})"});
  start_coordinator();
  start_worker("w1");
  farm::JobStatus s = wait_job("dup", 30s);
  EXPECT_EQ(s.state, "done") << s.error;
  EXPECT_EQ(s.priority, "low");
  EXPECT_EQ(s.circuit, bn254_.id);
  EXPECT_EQ(s.partitions, 1u);
  expect_result_verifies("dup", 1);
  EXPECT_TRUE(eventually([&] { return rejected(redis).size() == 2; }, 10s));
  for (const auto& e : rejected(redis)) {
    EXPECT_EQ(e["error_code"], "duplicateId") << e.dump();
    EXPECT_NE(e["error"].get<std::string>().find("job id dup, which belongs to another submission"),
              std::string::npos) << e.dump();
  }
  const RedisReply events = redis.command({"LRANGE", "zkfarm:job:dup:events", "0", "-1"});
  int started = 0;
  for (const auto& e : events.as_array()) started += json::parse(e.as_string())["type"] == "started";
  EXPECT_EQ(started, 1);
  EXPECT_EQ(redis.command({"LLEN", "zkfarm:processing:c1"}).as_integer(), 0);
}

TEST_F(JobIntakeTest, AnEntryThatCrashedIntakeTwiceIsSetAside) {
  RedisClient redis(options_.redis_url);
  const std::string good = "file://" + witness_file("bn128_mul.wtns");
  farm::submit(options_, job_json("poison", bn254_.id, {good}));
  farm::submit(options_, job_json("behind", bn254_.id, {good}));
  // Taking "poison" in kills the coordinator (a stand-in for any crash an
  // entry can cause). Restarted like a supervisor would, it must not crash
  // forever on the same entry.
  start_coordinator({"--inject-fault", "abort-in-intake=poison"});
  int crashes = 0;
  for (;;) {
    ASSERT_TRUE(eventually(
        [&] {
          auto st = farm::status(options_, "poison");
          return !coordinator_->running() || (st && st->terminal());
        },
        30s));
    if (coordinator_->running()) break;
    ASSERT_LT(++crashes, 3) << "the coordinator crashes on the same entry at every start";
    start_coordinator();
  }
  EXPECT_EQ(crashes, 2);
  farm::JobStatus s = *farm::status(options_, "poison");
  EXPECT_EQ(s.state, "failed");
  EXPECT_EQ(s.error_code, "setAside");
  EXPECT_NE(s.error.find("died 2 times"), std::string::npos) << s.error;
  EXPECT_NE(s.error.find("zkfarm:setaside"), std::string::npos) << s.error;
  const RedisReply aside = redis.command({"LRANGE", "zkfarm:setaside", "0", "-1"});
  ASSERT_EQ(aside.as_array().size(), 1u);
  json entry = json::parse(aside.as_array()[0].as_string());
  EXPECT_EQ(entry["id"], "poison");
  EXPECT_EQ(entry["crashes"], 2);
  EXPECT_EQ(json::parse(entry["job"].get<std::string>())["id"], "poison");
  // The farm goes on with the next job.
  start_worker("w1");
  EXPECT_EQ(wait_job("behind", 30s).state, "done");
  expect_result_verifies("behind", 1);
  EXPECT_EQ(redis.command({"HLEN", "zkfarm:intake:c1"}).as_integer(), 0);
  EXPECT_EQ(redis.command({"LLEN", "zkfarm:processing:c1"}).as_integer(), 0);
  EXPECT_TRUE(coordinator_->running());
}

// The number of "recovering" lines in a coordinator log.
std::size_t recoveries(const std::string& log) {
  std::size_t n = 0;
  for (std::size_t at = log.find("recovering "); at != std::string::npos; at = log.find("recovering ", at + 1)) ++n;
  return n;
}

TEST_F(JobIntakeTest, RecoveryNeverRestartsAJobThatEndedMeanwhile) {
  // A cut Redis connection makes the intake recover its processing list:
  // it claims each job again and reads its witnesses, while the scheduler
  // may end the same job. A job that ended in between was started again
  // (and proved partitions twice). Here the end is a cancel, sent while the
  // intake reads the 4096 witnesses of the job; the cancel's timing varies
  // over the trials so that some land inside that window.
  start_coordinator();
  // Every client's connection is cut below: a fresh one for each question.
  auto redis = [&](const std::vector<std::string>& command) { return RedisClient(options_.redis_url).command(command); };
  const std::string good = "file://" + witness_file("bn128_mul.wtns");
  const std::vector<std::string> partitions(4096, good);
  for (int trial = 0; trial < 6; ++trial) {
    const std::string id = "cut" + std::to_string(trial);
    farm::submit(options_, job_json(id, bn254_.id, partitions));
    ASSERT_TRUE(eventually([&] { return redis({"LLEN", "zkfarm:job:" + id + ":events"}).as_integer() > 0; },
                           30s));
    const std::size_t before = recoveries(coordinator_->log());
    {
      RedisClient admin(options_.redis_url);
      admin.command({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
    }
    ASSERT_TRUE(eventually([&] { return recoveries(coordinator_->log()) > before; }, 20s));
    std::this_thread::sleep_for(std::chrono::milliseconds(20 * trial));
    RedisClient client(options_.redis_url);
    JobStore(client, KeyLayout()).cancel(id, 0);
    farm::JobStatus s = wait_job(id, 30s);
    EXPECT_EQ(s.state, "cancelled");
    // Give a stale prepared job time to reach the scheduler: the job must
    // still have been started only once.
    std::this_thread::sleep_for(1500ms);
    const RedisReply events = redis({"LRANGE", "zkfarm:job:" + id + ":events", "0", "-1"});
    int started = 0;
    for (const auto& e : events.as_array()) started += json::parse(e.as_string())["type"] == "started";
    EXPECT_EQ(started, 1) << id;
  }
  EXPECT_EQ(redis({"LLEN", "zkfarm:processing:c1"}).as_integer(), 0);
  EXPECT_TRUE(coordinator_->running());
}

TEST_F(JobIntakeTest, AdmissionStopsAtTheMemoryBudget) {
  // 1 MiB: one job of 2000 partitions (about 2.3 MB estimated) fills it.
  start_coordinator({"--memory-budget-mib", "1"});
  RedisClient redis(options_.redis_url);
  const std::string good = "file://" + witness_file("bn128_mul.wtns");
  const std::vector<std::string> partitions(2000, good);
  farm::submit(options_, job_json("big1", bn254_.id, partitions));
  farm::submit(options_, job_json("big2", bn254_.id, partitions));
  farm::submit(options_, job_json("small", bn254_.id, {good}));
  auto state = [&](const std::string& id) { return farm::status(options_, id)->state; };
  ASSERT_TRUE(eventually([&] { return state("big1") == "running"; }, 30s));
  EXPECT_TRUE(eventually([&] { return coordinator_->log().find("memory budget reached") != std::string::npos; }, 10s));
  // While big1 is held nothing else is admitted, however long we look.
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(state("big2"), "queued");
    EXPECT_EQ(state("small"), "queued");
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(farm::cancel(options_, "big1"), "requested");
  ASSERT_TRUE(eventually([&] { return state("big2") == "running"; }, 30s));
  EXPECT_EQ(state("small"), "queued");
  EXPECT_EQ(farm::cancel(options_, "big2"), "requested");
  ASSERT_TRUE(eventually([&] { return state("small") == "running"; }, 30s));
  start_worker("w1");
  EXPECT_EQ(wait_job("small", 30s).state, "done");
  expect_result_verifies("small", 1);
}

// A witness server (range_http_server.py --trickle) that sends a witness at
// 2 KiB/s: above curl's stall limit (1 KiB/s), so nothing but a deadline
// ends the read; intake's first 64 KiB take 32 s. The probe's critical job
// waited ~80 s behind such a witness, read one by one in the intake loop.
class SlowWitnessTest : public JobIntakeTest {
 protected:
  void SetUp() override {
    JobIntakeTest::SetUp();
    std::filesystem::create_directories(dir_->file("www"));
    write_file(dir_->file("www/slow.wtns"), std::string(1 << 20, '\0'));
    http_ = std::make_unique<HttpServer>(dir_->file("www"), dir_->file("http-server.txt"),
                                         runfile("tests/cluster/range_http_server.py"),
                                         std::vector<std::string>{"--trickle", "/slow.wtns:2048"});
  }
  void TearDown() override {
    http_.reset();
    JobIntakeTest::TearDown();
  }
  // The slow witness by a signed URL (its query string must never show).
  std::string slow_url() const { return http_->url() + "slow.wtns?X-Amz-Signature=topsecret0123"; }
  bool slow_read_started() const { return http_->log().find("trickling /slow.wtns") != std::string::npos; }
  std::unique_ptr<HttpServer> http_;
};

TEST_F(SlowWitnessTest, ACriticalJobIsTakenInWhileASlowWitnessIsRead) {
  start_coordinator({"--intake-deadline-ms", "10000"});
  start_worker("w1");
  const std::string good = "file://" + witness_file("bn128_mul.wtns");
  farm::submit(options_, job_json("slow", bn254_.id, {good, slow_url(), good}));
  ASSERT_TRUE(eventually([&] { return slow_read_started(); }, 30s)) << http_->log() << logs();
  farm::submit(options_, job_json("urgent", bn254_.id, {good}, "critical"));
  const farm::JobStatus urgent = wait_job("urgent", 60s);
  ASSERT_EQ(urgent.state, "done") << urgent.error << logs();
  expect_result_verifies("urgent", 1);
  const farm::JobStatus slow = wait_job("slow", 60s);
  EXPECT_EQ(slow.state, "failed");
  EXPECT_EQ(slow.error_code, "witnessUnavailable") << slow.error;
  EXPECT_NE(slow.error.find("partition 1: witness " + http_->url() +
                            "slow.wtns?<redacted> not read within the intake deadline of 10000 ms"),
            std::string::npos)
      << slow.error;
  EXPECT_EQ(logs().find("topsecret"), std::string::npos) << "a URL's query string reached a log:\n" << logs();
  // Taken in (claimed: started_at) while the slow job was still being read,
  // which ended at the deadline, not before.
  EXPECT_LT(urgent.started_at, slow.finished_at);
  EXPECT_GE(slow.finished_at - slow.started_at, 9.9);
  const double taken_in = urgent.started_at - urgent.submitted_at;
  std::cout << "critical job taken in " << taken_in << " s after its submission, behind a witness read of "
            << slow.finished_at - slow.started_at << " s\n";
  EXPECT_LT(taken_in, 5.0) << "within a second on an idle machine; 5 s on a loaded one";
  // Intake goes on.
  farm::submit(options_, job_json("after", bn254_.id, {good}));
  EXPECT_EQ(wait_job("after", 30s).state, "done");
  EXPECT_TRUE(coordinator_->running());
}

TEST_F(SlowWitnessTest, TheLeaseIsRenewedWhileIntakeReadsASlowWitness) {
  // A 3 s lease renewed every second: the slow read (32 s, cut at the 8 s
  // deadline) made the intake loop, which renewed it, miss it many times.
  start_coordinator({"--takeover-after-ms", "3000", "--intake-deadline-ms", "8000"});
  RedisClient redis(options_.redis_url);
  const std::string lease = KeyLayout().coordinator_lease("c1");
  ASSERT_TRUE(eventually([&] { return redis.command({"EXISTS", lease}).as_integer() == 1; }, 20s)) << logs();
  farm::submit(options_, job_json("slow", bn254_.id, {slow_url()}));
  ASSERT_TRUE(eventually([&] { return slow_read_started(); }, 30s)) << http_->log() << logs();
  // Sampled every 20 ms until the slow job ends: the lease never lapses.
  bool lapsed = false;
  ASSERT_TRUE(eventually(
      [&] {
        lapsed |= redis.command({"EXISTS", lease}).as_integer() == 0;
        auto s = farm::status(options_, "slow");
        return s && s->terminal();
      },
      60s))
      << logs();
  EXPECT_FALSE(lapsed) << logs();
  EXPECT_EQ(farm::status(options_, "slow")->error_code, "witnessUnavailable");
  EXPECT_EQ(coordinator_->log().find("lease lost"), std::string::npos) << logs();
  EXPECT_TRUE(coordinator_->running());
  start_worker("w1");
  farm::submit(options_, job_json("after", bn254_.id, {"file://" + witness_file("bn128_mul.wtns")}));
  EXPECT_EQ(wait_job("after", 30s).state, "done");
}

}  // namespace
}  // namespace zkfarm::testing
