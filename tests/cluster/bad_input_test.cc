// bad_input_test.cc -- bad jobs fail with a clear error and the farm keeps
// serving: malformed JSON, unknown circuit, wrong witness length, wrong
// curve, missing witness file, garbage without an id; witness checksums,
// checked by the workers; witnesses larger than their circuit's, refused by
// intake and by the workers before they are read.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "base/digest.h"
#include "base/files.h"
#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "cluster/witness_access.h"
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


TEST_F(FarmTest, WitnessChecksumsAreCheckedByTheWorkersAsBadInput) {
  // Intake reads a witness only as far as its public inputs, so a sha256
  // that does not match the bytes is found by the worker that reads them
  // all; the job fails witnessChecksum (a bad-input claim: a second worker
  // fetches it again and agrees), nobody is blamed. A size that differs
  // from the file's is still refused at intake, where it costs a stat.
  start_coordinator();
  start_worker("w1");
  start_worker("w2");
  RedisClient redis(options_.redis_url);
  const std::string path = witness_file("bn128_mul.wtns");
  const std::string bytes = read_file(path);
  redis.command({"SET", "zkfarm:w:bad-digest", bytes});
  const std::string digest = sha256_file_hex(path), wrong(64, '0');
  const auto job_with = [&](const std::string& id, const std::string& url, const std::string& sha256,
                            std::uint64_t size) {
    json partition = {{"witness", url}, {"sha256", sha256}};
    if (size) partition["size"] = size;
    return json{{"id", id}, {"circuit", bn254_.id}, {"partitions", json::array({json{{"witness", "file://" + path}}, partition})}}
        .dump();
  };
  farm::submit(options_, job_with("file-digest", "file://" + path, wrong, bytes.size()));
  farm::submit(options_, job_with("redis-digest", "redis://zkfarm:w:bad-digest", wrong, bytes.size()));
  // One byte short (a size above the circuit's witness is refused before
  // any read: WitnessesLargerThanTheCircuits... below).
  farm::submit(options_, job_with("file-size", "file://" + path, digest, bytes.size() - 1));
  for (const char* id : {"file-digest", "redis-digest"}) {
    const farm::JobStatus s = wait_job(id);
    EXPECT_EQ(s.state, "failed") << id;
    EXPECT_EQ(s.error_code, "witnessChecksum") << id << ": " << s.error;
    EXPECT_NE(s.error.find("partition 1"), std::string::npos) << s.error;
    EXPECT_NE(s.error.find("sha256 is " + digest + ", the job says " + wrong), std::string::npos)
        << s.error;
    // Taken in, then failed by the workers' reports.
    EXPECT_EQ(coordinator_->log().find(std::string("job ") + id + " failed at intake"), std::string::npos) << logs();
    EXPECT_NE(coordinator_->log().find(std::string("job ") + id + " started"), std::string::npos) << logs();
  }
  const farm::JobStatus s = wait_job("file-size");
  EXPECT_EQ(s.state, "failed");
  EXPECT_EQ(s.error_code, "witnessChecksum") << s.error;
  EXPECT_NE(s.error.find(std::to_string(bytes.size()) + " bytes, the job says " + std::to_string(bytes.size() - 1)),
            std::string::npos)
      << s.error;
  EXPECT_NE(coordinator_->log().find("job file-size failed at intake"), std::string::npos) << logs();
  // Bad input blames no worker, and the farm still proves.
  EXPECT_EQ(redis.command({"SCARD", "zkfarm:quarantine"}).as_integer(), 0);
  farm::submit(options_, job_json("still-fine", bn254_.id, {"file://" + path}));
  EXPECT_EQ(wait_job("still-fine").state, "done");
  expect_result_verifies("still-fine", 1);
}

TEST_F(FarmTest, WitnessesLargerThanTheCircuitsAreRefusedBeforeTheyAreRead) {
  // A witness is at most a .wtns of the circuit's values: a file or a Redis
  // value longer than that fails witnessLength, at intake (stat, STRLEN),
  // or on the worker when it grew after intake; nothing of it is read.
  start_coordinator();
  RedisClient redis(options_.redis_url);
  const std::string path = witness_file("bn128_mul.wtns");
  const std::string bytes = read_file(path);
  const std::uint64_t max_bytes = witness_max_bytes(bn254_.num_vars);
  ASSERT_EQ(bytes.size(), max_bytes);
  const std::string padded = bytes + std::string(128u << 20, '\0');
  const std::string big_path = dir_->file("big.wtns");
  write_file(big_path, padded);
  redis.command({"SET", "zkfarm:w:big", padded});
  const std::string too_large =
      std::to_string(padded.size()) + " bytes, more than the " + std::to_string(max_bytes) + " bytes of this circuit's witness";
  farm::submit(options_, job_json("big-file", bn254_.id, {"file://" + big_path}));
  farm::submit(options_, job_json("big-redis", bn254_.id, {"redis://zkfarm:w:big"}));
  for (const char* id : {"big-file", "big-redis"}) {
    const farm::JobStatus s = wait_job(id);
    EXPECT_EQ(s.state, "failed") << id;
    EXPECT_EQ(s.error_code, "witnessLength") << id << ": " << s.error;
    EXPECT_NE(s.error.find(too_large), std::string::npos) << id << ": " << s.error;
    EXPECT_NE(coordinator_->log().find(std::string("job ") + id + " failed at intake"), std::string::npos) << logs();
  }
  // Honest at intake, grown before the worker reads them.
  const std::string grows_path = dir_->file("grows.wtns");
  write_file(grows_path, bytes);
  redis.command({"SET", "zkfarm:w:grows", bytes});
  farm::submit(options_, job_json("grows-file", bn254_.id, {"file://" + grows_path}));
  farm::submit(options_, job_json("grows-redis", bn254_.id, {"redis://zkfarm:w:grows"}));
  for (const char* id : {"grows-file", "grows-redis"})
    ASSERT_TRUE(eventually([&] { return coordinator_->log().find(std::string("job ") + id + " started") != std::string::npos; },
                           std::chrono::seconds(30)))
        << logs();
  write_file(grows_path, padded);
  redis.command({"SET", "zkfarm:w:grows", padded});
  start_worker("w1");
  ASSERT_TRUE(eventually([&] { return workers_[0]->running() && workers_[0]->pid() > 0; }, std::chrono::seconds(5)));
  for (const char* id : {"grows-file", "grows-redis"}) {
    const farm::JobStatus s = wait_job(id);
    EXPECT_EQ(s.state, "failed") << id;
    EXPECT_EQ(s.error_code, "witnessLength") << id << ": " << s.error;
    EXPECT_NE(s.error.find(too_large), std::string::npos) << id << ": " << s.error;
  }
  // The worker never held the 128 MiB (a GET of them held several copies).
  std::ifstream status("/proc/" + std::to_string(workers_[0]->pid()) + "/status");
  std::uint64_t peak = 0;
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) peak = std::stoull(line.substr(6)) << 10;
  std::cerr << "worker peak RSS after refusing 128 MiB witnesses: " << (peak >> 20) << " MiB\n";
  EXPECT_GT(peak, 0u);
  EXPECT_LT(peak, 320ull << 20) << "peak RSS " << (peak >> 20) << " MiB";
  farm::submit(options_, job_json("still-fine", bn254_.id, {"file://" + path}));
  EXPECT_EQ(wait_job("still-fine").state, "done");
}

}  // namespace
}  // namespace zkfarm::testing
