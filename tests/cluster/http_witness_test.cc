// http_witness_test.cc -- witnesses named by http:// URLs, served by the
// test's own HTTP server: fetched by the coordinator (public inputs) and the
// workers (straight into the prover's buffer), checked against the job's
// sha256 and size, typed failures (witnessUnavailable, witnessChecksum), and
// a signed URL's query string never in a log, a status or an error. The
// coordinator reads a witness only as far as its public inputs (one Range
// request); the worker fetches it whole and checks its sha256 and size.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/digest.h"
#include "cluster/artifacts.h"
#include "tests/cluster/farm_fixture.h"

namespace zkfarm::testing {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

constexpr const char* kSecret = "X-Amz-Signature=topsecret0123";

class HttpWitnessTest : public FarmTest {
 protected:
  void SetUp() override {
    FarmTest::SetUp();
    std::filesystem::create_directories(dir_->file("www"));
    for (const char* name : {"bn128_mul.wtns", "bls12381_mul.wtns"})
      std::filesystem::copy_file(runfile(std::string("formats/testdata/") + name), dir_->file(std::string("www/") + name));
    http_ = std::make_unique<HttpServer>(dir_->file("www"), dir_->file("http-server.txt"));
  }
  void TearDown() override {
    http_.reset();
    FarmTest::TearDown();
  }
  // A partition naming www/<name> by a signed URL, with its sha256 and size.
  json partition(const std::string& name, bool checks = true) {
    json p = {{"witness", http_->url() + name + "?" + kSecret}};
    if (checks) {
      p["sha256"] = sha256_file_hex(dir_->file("www/" + name));
      p["size"] = std::filesystem::file_size(dir_->file("www/" + name));
    }
    return p;
  }
  std::string job(const std::string& id, const std::string& circuit, const json& partitions) {
    return json{{"id", id}, {"circuit", circuit}, {"partitions", partitions}}.dump();
  }
  void expect_no_secret() {
    EXPECT_EQ(logs().find("topsecret"), std::string::npos) << "a URL's query string reached a log:\n" << logs();
  }
  std::unique_ptr<HttpServer> http_;
};

TEST_F(HttpWitnessTest, ProvesFromSignedUrlsAndChecksWhatTheJobSays) {
  start_coordinator();
  start_worker("w1");
  farm::submit(options_, job("signed", bn254_.id,
                             json::array({partition("bn128_mul.wtns"), partition("bn128_mul.wtns", false)})));
  farm::submit(options_, job("signed-bls", bls12381_.id, json::array({partition("bls12381_mul.wtns")})));
  // The wrong digest (found by the worker, which reads every byte), the
  // wrong size (by intake, from the stated length), a missing file (intake).
  json wrong_digest = partition("bn128_mul.wtns");
  wrong_digest["sha256"] = std::string(64, '0');
  farm::submit(options_, job("wrong-digest", bn254_.id, json::array({wrong_digest})));
  json wrong_size = partition("bn128_mul.wtns");
  wrong_size["size"] = wrong_size["size"].get<std::uint64_t>() + 1;
  farm::submit(options_, job("wrong-size", bn254_.id, json::array({wrong_size})));
  farm::submit(options_, job("missing", bn254_.id, json::array({partition("absent.wtns", false)})));

  farm::JobStatus s = wait_job("signed", 60s);
  ASSERT_EQ(s.state, "done") << s.error << logs();
  expect_result_verifies("signed", 2);
  s = wait_job("signed-bls", 60s);
  ASSERT_EQ(s.state, "done") << s.error << logs();
  expect_result_verifies("signed-bls", 1);
  for (const char* id : {"wrong-digest", "wrong-size"}) {
    s = wait_job(id, 30s);
    EXPECT_EQ(s.state, "failed") << id;
    EXPECT_EQ(s.error_code, "witnessChecksum") << id << ": " << s.error;
    EXPECT_EQ(s.error.find("topsecret"), std::string::npos) << s.error;
    EXPECT_NE(s.error.find("bn128_mul.wtns?<redacted>"), std::string::npos) << s.error;
  }
  s = wait_job("missing", 30s);
  EXPECT_EQ(s.state, "failed");
  EXPECT_EQ(s.error_code, "witnessUnavailable") << s.error;
  EXPECT_NE(s.error.find("HTTP 404"), std::string::npos) << s.error;
  EXPECT_EQ(s.error.find("topsecret"), std::string::npos) << s.error;
  // The server saw the signature (it was sent), nobody else printed it.
  EXPECT_NE(http_->log().find("topsecret"), std::string::npos);
  expect_no_secret();
}

TEST_F(HttpWitnessTest, AWitnessChangedAfterIntakeFailsOnTheWorkerAfterOneRefetch) {
  // Intake checks the witness; then it changes on the server before any
  // worker fetches it. The worker fetches it twice, then reports
  // witnessChecksum; with no second worker to confirm, the job fails so.
  start_coordinator();
  farm::submit(options_, job("changed", bn254_.id, json::array({partition("bn128_mul.wtns")})));
  // Started by the scheduler: intake has read and checked the witness.
  ASSERT_TRUE(eventually([&] { return coordinator_->log().find("job changed started") != std::string::npos; }, 30s))
      << logs();
  std::filesystem::copy_file(dir_->file("www/bls12381_mul.wtns"), dir_->file("www/bn128_mul.wtns"),
                             std::filesystem::copy_options::overwrite_existing);
  start_worker("w1");
  farm::JobStatus s = wait_job("changed", 60s);
  EXPECT_EQ(s.state, "failed") << logs();
  EXPECT_EQ(s.error_code, "witnessChecksum") << s.error;
  EXPECT_NE(workers_[0]->log().find("fetching it again"), std::string::npos) << logs();
  expect_no_secret();
}

TEST_F(HttpWitnessTest, SubmitTurnsLocalWitnessesIntoUrlsUnderABase) {
  start_coordinator();
  start_worker("w1");
  const CommandResult r = run_command({runfile("cli/zkfarm"), "submit", bn254_.id, dir_->file("www/bn128_mul.wtns"),
                                       "--id", "by-url", "--witness-url-base", http_->url(), "--redis",
                                       options_.redis_url},
                                      dir_->path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  farm::JobStatus s = wait_job("by-url", 60s);
  ASSERT_EQ(s.state, "done") << s.error << logs();
  expect_result_verifies("by-url", 1);
  EXPECT_NE(http_->log().find("GET /bn128_mul.wtns"), std::string::npos) << http_->log();
  // Bad bases are refused before anything is queued.
  for (const std::string& base : {std::string("ftp://host/"), http_->url() + "?sig=topsecret"}) {
    const CommandResult bad = run_command({runfile("cli/zkfarm"), "submit", bn254_.id, dir_->file("www/bn128_mul.wtns"),
                                           "--witness-url-base", base, "--redis", options_.redis_url},
                                          dir_->path());
    EXPECT_EQ(bad.exit_code, 2) << base;
    EXPECT_EQ(bad.err.find("topsecret"), std::string::npos) << bad.err;
  }
}

}  // namespace
}  // namespace zkfarm::testing
