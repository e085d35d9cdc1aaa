// unanswered_worker_test.cc -- a worker the coordinator never answers (a
// wrong coordinator key, a key missing from the allowlist, no keys at all,
// no coordinator) says so within seconds, and names the keys as the likely
// cause when CURVE is on. Before, it logged only "connecting to ...".
#include <chrono>

#include "cluster/curve_keys.h"
#include "tests/cluster/farm_fixture.h"

namespace zkfarm::testing {
namespace {

using namespace std::chrono_literals;

// The worker's warning comes 5 s after its first Hello (WorkerConfig::
// unanswered_warning); the margin is for a loaded machine.
constexpr auto kWarningWithin = 20s;

bool log_contains(const Process& p, const std::string& text) { return p.log().find(text) != std::string::npos; }

TEST_F(FarmTest, WorkersTheCoordinatorDoesNotAnswerSaySoAndNameTheKeys) {
  const CurveKeyPair server = generate_curve_keypair();
  const CurveKeyPair listed = generate_curve_keypair();
  const CurveKeyPair unlisted = generate_curve_keypair();
  const CurveKeyPair impostor_server = generate_curve_keypair();
  write_curve_key_file(dir_->file("server.key"), server.secret_key);
  write_curve_key_file(dir_->file("listed.key"), listed.secret_key);
  write_curve_key_file(dir_->file("unlisted.key"), unlisted.secret_key);
  write_file(dir_->file("allowlist"), listed.public_key + "\n");
  start_coordinator({"--curve-secret-key-file", dir_->file("server.key"), "--curve-allowlist", dir_->file("allowlist")});
  // Its key is not in the allowlist.
  const std::size_t not_listed = start_worker(
      "w-unlisted", {"--curve-server-key", server.public_key, "--curve-secret-key-file", dir_->file("unlisted.key")});
  // A listed key, but the wrong coordinator public key.
  const std::size_t wrong_server = start_worker(
      "w-wrong-server", {"--curve-server-key", impostor_server.public_key, "--curve-secret-key-file",
                         dir_->file("listed.key")});
  // No keys at all, against a coordinator that requires them.
  const std::size_t plaintext = start_worker("w-plaintext");
  // The right keys: welcomed.
  const std::size_t good = start_worker(
      "w-good", {"--curve-server-key", server.public_key, "--curve-secret-key-file", dir_->file("listed.key")});

  for (std::size_t w : {not_listed, wrong_server}) {
    EXPECT_TRUE(eventually([&] { return log_contains(*workers_[w], "has not answered for"); }, kWarningWithin))
        << logs();
    const std::string log = workers_[w]->log();
    EXPECT_NE(log.find("CURVE is on, so the likely cause is the keys"), std::string::npos) << log;
    EXPECT_NE(log.find("--curve-allowlist"), std::string::npos) << log;
  }
  // The unlisted worker is told which public key to add (never a secret).
  EXPECT_TRUE(log_contains(*workers_[not_listed], unlisted.public_key));
  EXPECT_EQ(logs().find(unlisted.secret_key), std::string::npos);
  EXPECT_EQ(logs().find(listed.secret_key), std::string::npos);
  EXPECT_TRUE(eventually([&] { return log_contains(*workers_[plaintext], "has not answered for"); }, kWarningWithin))
      << logs();
  EXPECT_TRUE(log_contains(*workers_[plaintext], "needs --curve-server-key"));
  EXPECT_TRUE(eventually([&] { return log_contains(*workers_[good], "welcomed"); }, kWarningWithin)) << logs();
}

TEST_F(FarmTest, AWorkerWithNoCoordinatorSaysSoWithinSeconds) {
  // Nothing listens on the coordinator port.
  const std::size_t w = start_worker("w-alone");
  EXPECT_TRUE(eventually([&] { return log_contains(*workers_[w], "has not answered for"); }, kWarningWithin))
      << logs();
  EXPECT_TRUE(log_contains(*workers_[w], "is it running and reachable at that address?"));
}

}  // namespace
}  // namespace zkfarm::testing
