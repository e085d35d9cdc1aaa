// farm_fixture.cc -- see farm_fixture.h.
#include "tests/cluster/farm_fixture.h"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "formats/snarkjs_json.h"
#include "kernels/groth16_verifier.h"

namespace zkfarm::testing {

using json = nlohmann::json;

void FarmTest::SetUp() {
  dir_ = std::make_unique<TempDir>();
  redis_ = std::make_unique<RedisServer>(dir_->path(), RedisServer::Options{.appendonly = true, .password = ""});
  options_.redis_url = redis_->url();
  options_.prefix = "zkfarm:";
  options_.artifacts = dir_->file("artifacts");
  std::filesystem::create_directories(options_.artifacts);
  bn254_ = farm::circuit_add(options_, runfile("formats/testdata/bn128_mul.zkey"));
  bls12381_ = farm::circuit_add(options_, runfile("formats/testdata/bls12381_mul.zkey"));
  coordinator_port_ = free_port();
}

void FarmTest::TearDown() {
  if (HasFailure()) std::cerr << logs();
  for (auto& w : workers_) w.reset();
  coordinator_.reset();
  redis_.reset();
  dir_.reset();
}

std::string FarmTest::logs() const {
  std::string out;
  for (const auto& entry : std::filesystem::directory_iterator(dir_->path()))
    if (entry.path().extension() == ".log")
      out += "==== " + entry.path().filename().string() + "\n" + read_file(entry.path());
  return out;
}

void FarmTest::start_coordinator(const std::vector<std::string>& extra) {
  if (!extra.empty() || coordinator_flags_.empty()) coordinator_flags_ = extra;
  std::vector<std::string> argv = {runfile("coordinator/zkfarm-coordinator"),
                                   "--redis", options_.redis_url,
                                   "--id", "c1",
                                   "--listen", "tcp://127.0.0.1:" + std::to_string(coordinator_port_),
                                   "--artifacts", options_.artifacts,
                                   "--heartbeat-ms", kTestHeartbeatMs,
                                   "--dead-after-ms", kTestDeadAfterMs,
                                   "--intake-poll-ms", "50"};
  argv.insert(argv.end(), coordinator_flags_.begin(), coordinator_flags_.end());
  // Metrics on a free port: tests run several farms (and coordinators) at once.
  coordinator_ = std::make_unique<Process>(
      argv, dir_->file("coordinator-" + std::to_string(++coordinator_starts_) + ".log"),
      std::map<std::string, std::string>{{"ZKFARM_METRICS_LISTEN", "127.0.0.1:0"}});
}

void FarmTest::kill_coordinator() {
  coordinator_->signal(SIGKILL);
  coordinator_->wait_for(std::chrono::seconds(5));
}

std::size_t FarmTest::start_worker(const std::string& id, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {runfile("worker/zkfarm-worker"), "--cpu", "--id", id};
  // Workers follow the fixture's coordinator unless told their own.
  if (std::find(extra.begin(), extra.end(), "--coordinator") == extra.end())
    argv.insert(argv.end(), {"--coordinator", "tcp://127.0.0.1:" + std::to_string(coordinator_port_)});
  argv.insert(argv.end(), {"--redis", options_.redis_url,
                           "--artifacts", options_.artifacts,
                           "--cache-dir", dir_->file("cache-" + id)});
  argv.insert(argv.end(), extra.begin(), extra.end());
  workers_.push_back(std::make_unique<Process>(argv, dir_->file("worker-" + id + ".log"),
                                               std::map<std::string, std::string>{{"ZKFARM_THREADS", "1"}, {"ZKFARM_METRICS_LISTEN", "127.0.0.1:0"}}));
  return workers_.size() - 1;
}

std::string FarmTest::witness_file(const std::string& fixture_name) {
  const std::string path = dir_->file(fixture_name);
  if (!std::filesystem::exists(path)) std::filesystem::copy_file(runfile("formats/testdata/" + fixture_name), path);
  return path;
}

std::string FarmTest::tenant_witness_file(const std::string& tenant, const std::string& fixture_name) {
  const std::string dir = dir_->file("tenants/" + tenant);
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/" + fixture_name;
  if (!std::filesystem::exists(path)) std::filesystem::copy_file(runfile("formats/testdata/" + fixture_name), path);
  return path;
}

std::string FarmTest::job_json(const std::string& id, const std::string& circuit,
                               const std::vector<std::string>& witness_urls, const std::string& priority) {
  json j = {{"id", id}, {"circuit", circuit}, {"priority", priority}, {"partitions", json::array()}};
  for (const auto& url : witness_urls) j["partitions"].push_back({{"witness", url}});
  return j.dump();
}

farm::JobStatus FarmTest::wait_job(const std::string& id, std::chrono::milliseconds timeout) {
  // Raw LPUSHed jobs have no record until a coordinator takes them.
  eventually([&] { return farm::status(options_, id).has_value(); }, timeout);
  auto s = farm::wait(options_, id, timeout);
  EXPECT_TRUE(s) << "job " << id << " does not exist";
  if (!s) return {};
  EXPECT_TRUE(s->terminal()) << "job " << id << " still " << s->state << " after " << timeout.count() << " ms";
  return *s;
}

void FarmTest::expect_result_verifies(const std::string& id, std::size_t partitions) {
  expect_result_verifies(options_, id, partitions);
}

void FarmTest::expect_result_verifies(const farm::FarmOptions& who, const std::string& id, std::size_t partitions) {
  auto text = farm::result(who, id);
  ASSERT_TRUE(text) << "no result for " << id;
  json result = json::parse(*text);
  ASSERT_EQ(result["partitions"].size(), partitions);
  const std::string curve = result["curve"];
  for (std::size_t i = 0; i < partitions; ++i) {
    const json& p = result["partitions"][i];
    EXPECT_EQ(p["partition"].get<std::size_t>(), i);
    const std::string proof = p["proof"].dump(), pub = p["public"].dump();
    if (curve == "bn128") {
      auto vk = read_verification_key<Bn254>(runfile("formats/testdata/bn128_verification_key.json"));
      auto inputs = public_signals_from_json<Bn254::Fr>(pub, "public");
      EXPECT_TRUE(groth16_verify<Bn254>(vk, std::span<const Bn254::Fr>(inputs), proof_from_json<Bn254>(proof, "proof")))
          << "partition " << i;
    } else {
      auto vk = read_verification_key<Bls12381>(runfile("formats/testdata/bls12381_verification_key.json"));
      auto inputs = public_signals_from_json<Bls12381::Fr>(pub, "public");
      EXPECT_TRUE(groth16_verify<Bls12381>(vk, std::span<const Bls12381::Fr>(inputs),
                                           proof_from_json<Bls12381>(proof, "proof")))
          << "partition " << i;
    }
  }
}

}  // namespace zkfarm::testing
