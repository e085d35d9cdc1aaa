// farm_fixture.h -- a whole farm on loopback for one test: a private
// redis-server, an artifact store with the snarkjs fixture circuits
// registered, and helpers to start a coordinator and workers as separate
// processes and to submit jobs through the same API the CLI uses.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster/artifacts.h"
#include "cluster/farm_api.h"
#include "tests/harness/harness.h"

namespace zkfarm::testing {

// Liveness windows of the test farms (--heartbeat-ms, --dead-after-ms). A
// process starved of CPU on a loaded 2-core machine can be silent for more
// than a second, and a live worker declared dead moves its tasks and changes
// what a test sees; 5 s of silence is a death no test mistakes, and the tests
// that kill a worker wait for its death with windows of 20 s or more.
inline constexpr const char* kTestHeartbeatMs = "100";
inline constexpr const char* kTestDeadAfterMs = "5000";

class FarmTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Starts (or restarts) the coordinator with extra flags.
  void start_coordinator(const std::vector<std::string>& extra = {});
  void kill_coordinator();
  // Starts a worker; returns its index in workers_.
  std::size_t start_worker(const std::string& id, const std::vector<std::string>& extra = {});

  // Copies a fixture witness into the temp dir; returns its path.
  std::string witness_file(const std::string& fixture_name);
  // The same under tenants/<tenant>/ of the temp dir (the default witness
  // root): where a registered tenant's file:// witnesses must lie
  // (WitnessPolicy::tenant_policy).
  std::string tenant_witness_file(const std::string& tenant, const std::string& fixture_name);
  // Job JSON with n partitions of the same witness.
  std::string job_json(const std::string& id, const std::string& circuit, const std::vector<std::string>& witness_urls,
                       const std::string& priority = "normal");
  // Waits (up to timeout) for the job to end; returns its status.
  farm::JobStatus wait_job(const std::string& id, std::chrono::milliseconds timeout = std::chrono::seconds(40));
  // Checks every partition proof of a done job with the lead's verifier
  // against the fixture's snarkjs verification key.
  void expect_result_verifies(const std::string& id, std::size_t partitions);
  // The same for a job of the client `who` (a tenant's credentials).
  void expect_result_verifies(const farm::FarmOptions& who, const std::string& id, std::size_t partitions);
  std::string logs() const;  // all process logs, for failure messages

  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<RedisServer> redis_;
  farm::FarmOptions options_;
  CircuitInfo bn254_, bls12381_;
  int coordinator_port_ = 0;
  std::unique_ptr<Process> coordinator_;
  std::vector<std::unique_ptr<Process>> workers_;
  std::vector<std::string> coordinator_flags_;
  int coordinator_starts_ = 0;
};

}  // namespace zkfarm::testing
