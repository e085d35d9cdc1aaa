// http_witness_test.cc -- witnesses named by http:// URLs, served by the
// test's own HTTP server: fetched by the coordinator (public inputs) and the
// workers (straight into the prover's buffer), checked against the job's
// sha256 and size, typed failures (witnessUnavailable, witnessChecksum), and
// a signed URL's query string never in a log, a status or an error. The
// coordinator reads a witness only as far as its public inputs (one Range
// request); the worker fetches it whole and checks its sha256 and size.
// Servers that announce or send more than the circuit's witness are
// refused (witnessLength) without the processes growing, and witness URLs
// reach only what --witness-url-allow names: loopback and private
// addresses, direct or through a redirect, fail with one error text.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "base/digest.h"
#include "cluster/witness_access.h"
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
  // The test's servers are on loopback, which --witness-url-allow refuses
  // unless named.
  void start_farm(const std::vector<std::string>& allow = {"127.0.0.1"}) {
    std::vector<std::string> flags;
    for (const auto& entry : allow) flags.insert(flags.end(), {"--witness-url-allow", entry});
    start_coordinator(flags);
    start_worker("w1", flags);
  }
  std::unique_ptr<HttpServer> http_;
};

// The peak resident memory of a process (VmHWM), in bytes.
std::uint64_t peak_rss_bytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) << 10;
  return 0;
}

TEST_F(HttpWitnessTest, ProvesFromSignedUrlsAndChecksWhatTheJobSays) {
  start_farm();
  farm::submit(options_, job("signed", bn254_.id,
                             json::array({partition("bn128_mul.wtns"), partition("bn128_mul.wtns", false)})));
  farm::submit(options_, job("signed-bls", bls12381_.id, json::array({partition("bls12381_mul.wtns")})));
  // The wrong digest (found by the worker, which reads every byte), the
  // wrong size (by intake, from the stated length), a missing file (intake).
  json wrong_digest = partition("bn128_mul.wtns");
  wrong_digest["sha256"] = std::string(64, '0');
  farm::submit(options_, job("wrong-digest", bn254_.id, json::array({wrong_digest})));
  // (One byte short: a size above the circuit's witness is refused as
  // witnessLength before any read, ServersThatSendMore... below.)
  json wrong_size = partition("bn128_mul.wtns");
  wrong_size["size"] = wrong_size["size"].get<std::uint64_t>() - 1;
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
  start_coordinator({"--witness-url-allow", "127.0.0.1"});
  farm::submit(options_, job("changed", bn254_.id, json::array({partition("bn128_mul.wtns")})));
  // Started by the scheduler: intake has read and checked the witness.
  ASSERT_TRUE(eventually([&] { return coordinator_->log().find("job changed started") != std::string::npos; }, 30s))
      << logs();
  std::filesystem::copy_file(dir_->file("www/bls12381_mul.wtns"), dir_->file("www/bn128_mul.wtns"),
                             std::filesystem::copy_options::overwrite_existing);
  start_worker("w1", {"--witness-url-allow", "127.0.0.1"});
  farm::JobStatus s = wait_job("changed", 60s);
  EXPECT_EQ(s.state, "failed") << logs();
  EXPECT_EQ(s.error_code, "witnessChecksum") << s.error;
  EXPECT_NE(workers_[0]->log().find("fetching it again"), std::string::npos) << logs();
  expect_no_secret();
}

TEST_F(HttpWitnessTest, SubmitTurnsLocalWitnessesIntoUrlsUnderABase) {
  start_farm();
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

TEST_F(HttpWitnessTest, ServersThatSendMoreThanTheCircuitsWitnessAreRefused) {
  // Range requests (intake's prefix read) are answered honestly; a whole GET
  // (the worker's) announces 60 GiB, or sends an endless body. Intake reads
  // the prefix, the worker refuses the body at the circuit's witness size.
  for (const char* name : {"huge.wtns", "endless.wtns"})
    std::filesystem::copy_file(dir_->file("www/bn128_mul.wtns"), dir_->file(std::string("www/") + name));
  HttpServer hostile(dir_->file("www"), dir_->file("hostile-server.txt"), runfile("tests/cluster/range_http_server.py"),
                     {"--huge-length", "/huge.wtns", "--endless", "/endless.wtns"});
  start_farm();
  const std::uint64_t max_bytes = witness_max_bytes(bn254_.num_vars);
  const std::uint64_t coordinator_before = peak_rss_bytes(coordinator_->pid());
  const std::uint64_t worker_before = peak_rss_bytes(workers_[0]->pid());
  for (const char* name : {"huge", "endless"})
    farm::submit(options_, job(name, bn254_.id, json::array({json{{"witness", hostile.url() + name + ".wtns"}}})));
  for (const char* name : {"huge", "endless"}) {
    const farm::JobStatus s = wait_job(name, 60s);
    EXPECT_EQ(s.state, "failed") << name;
    EXPECT_EQ(s.error_code, "witnessLength") << name << ": " << s.error;
    EXPECT_NE(s.error.find("this circuit's witness is " + std::to_string(max_bytes) + " bytes"), std::string::npos)
        << s.error;
  }
  EXPECT_NE(logs().find("the server announces more than the " + std::to_string(max_bytes) + " bytes"),
            std::string::npos)
      << logs();
  EXPECT_NE(logs().find("runs past " + std::to_string(max_bytes) + " bytes"), std::string::npos) << logs();
  // A job that says its witness is larger than the circuit's is refused
  // before anything is read.
  json oversized = partition("bn128_mul.wtns");
  oversized["size"] = 60ull << 30;
  farm::submit(options_, job("says-huge", bn254_.id, json::array({oversized})));
  farm::JobStatus s = wait_job("says-huge", 30s);
  EXPECT_EQ(s.error_code, "witnessLength") << s.error;
  EXPECT_NE(s.error.find("the job says the witness has 64424509440 bytes"), std::string::npos) << s.error;
  EXPECT_NE(coordinator_->log().find("job says-huge failed at intake"), std::string::npos) << logs();
  // The processes held no more than a witness's worth.
  std::cerr << "peak RSS: coordinator " << (coordinator_before >> 20) << " -> "
            << (peak_rss_bytes(coordinator_->pid()) >> 20) << " MiB, worker " << (worker_before >> 20) << " -> "
            << (peak_rss_bytes(workers_[0]->pid()) >> 20) << " MiB\n";
  EXPECT_LT(peak_rss_bytes(coordinator_->pid()), coordinator_before + (64u << 20));
  EXPECT_LT(peak_rss_bytes(workers_[0]->pid()), worker_before + (64u << 20));
  // The farm still proves.
  farm::submit(options_, job("still-fine", bn254_.id, json::array({partition("bn128_mul.wtns")})));
  s = wait_job("still-fine", 60s);
  ASSERT_EQ(s.state, "done") << s.error << logs();
  expect_no_secret();
}

TEST_F(HttpWitnessTest, WitnessUrlsReachOnlyWhatTheAllowListNames) {
  // Allowed: the prefix http://127.0.0.1:<R>/pub/ and the host 127.0.0.2
  // (nothing listens there). R redirects out of its prefix to S's loopback
  // server by name and by address.
  std::filesystem::create_directories(dir_->file("www/pub"));
  std::filesystem::copy_file(dir_->file("www/bn128_mul.wtns"), dir_->file("www/pub/bn128_mul.wtns"));
  const std::string s_port = std::to_string(http_->port());
  HttpServer r(dir_->file("www"), dir_->file("redirect-server.txt"), runfile("tests/cluster/range_http_server.py"),
               {"--redirect", "/pub/to-localhost=http://localhost:" + s_port + "/bn128_mul.wtns", "--redirect",
                "/pub/to-address=http://127.0.0.1:" + s_port + "/bn128_mul.wtns", "--redirect",
                "/pub/to-private=/bn128_mul.wtns"});
  start_farm({r.url() + "pub/", "127.0.0.2"});
  const std::map<std::string, std::string> refused = {
      {"direct-loopback", http_->url() + "bn128_mul.wtns"},
      {"direct-private", "http://10.255.1.2/bn128_mul.wtns"},
      {"closed-port", "http://127.0.0.2:" + std::to_string(free_port()) + "/bn128_mul.wtns"},
      {"outside-prefix", r.url() + "bn128_mul.wtns"},
      {"redirect-localhost", r.url() + "pub/to-localhost"},
      {"redirect-address", r.url() + "pub/to-address"},
      {"redirect-private", r.url() + "pub/to-private"},
  };
  for (const auto& [id, url] : refused) farm::submit(options_, job(id, bn254_.id, json::array({json{{"witness", url}}})));
  farm::submit(options_, job("allowed", bn254_.id, json::array({json{{"witness", r.url() + "pub/bn128_mul.wtns"}}})));
  farm::JobStatus s = wait_job("allowed", 60s);
  ASSERT_EQ(s.state, "done") << s.error << logs();
  expect_result_verifies("allowed", 1);
  for (const auto& [id, url] : refused) {
    s = wait_job(id, 60s);
    EXPECT_EQ(s.state, "failed") << id;
    EXPECT_EQ(s.error_code, "witnessUnavailable") << id << ": " << s.error;
    // One text, whatever lies behind the URL.
    EXPECT_EQ(s.error, "partition 0: cannot fetch witness: GET " + url + ": " + std::string(kUnreachable)) << id;
  }
  // Nothing was asked of S; R saw no request out of its prefix.
  EXPECT_EQ(http_->log().find("bn128_mul.wtns"), std::string::npos) << http_->log();
  EXPECT_EQ(r.log().find("request GET /bn128_mul.wtns"), std::string::npos) << r.log();
}

TEST_F(HttpWitnessTest, ADaemonRefusesAMalformedAllowList) {
  start_coordinator({"--witness-url-allow", "none,127.0.0.1"});
  const auto coordinator_status = coordinator_->wait_for(30s);
  ASSERT_TRUE(coordinator_status && WIFEXITED(*coordinator_status)) << logs();
  EXPECT_EQ(WEXITSTATUS(*coordinator_status), 2) << logs();
  EXPECT_NE(coordinator_->log().find("--witness-url-allow"), std::string::npos) << logs();
  start_worker("w1", {"--witness-url-allow", "ftp://host/"});
  const auto worker_status = workers_[0]->wait_for(30s);
  ASSERT_TRUE(worker_status && WIFEXITED(*worker_status)) << logs();
  EXPECT_EQ(WEXITSTATUS(*worker_status), 2) << logs();
}

TEST_F(HttpWitnessTest, ACancelStopsTheWitnessTransfer) {
  // The server sends 100 bytes of the witness, then nothing: curl's stall
  // limit would end the transfer after 30 s. A cancel ends it at once.
  std::filesystem::copy_file(dir_->file("www/bn128_mul.wtns"), dir_->file("www/stall.wtns"));
  HttpServer stalling(dir_->file("www"), dir_->file("stall-server.txt"), runfile("tests/cluster/range_http_server.py"),
                      {"--stall", "/stall.wtns"});
  start_farm();
  farm::submit(options_, job("stalled", bn254_.id, json::array({json{{"witness", stalling.url() + "stall.wtns"}}})));
  ASSERT_TRUE(eventually([&] { return stalling.log().find("hostile /stall.wtns stall") != std::string::npos; }, 30s))
      << stalling.log() << logs();
  farm::cancel(options_, "stalled");
  const farm::JobStatus s = wait_job("stalled", 30s);
  EXPECT_EQ(s.state, "cancelled") << s.error;
  ASSERT_TRUE(eventually([&] { return stalling.log().find("client left after") != std::string::npos; }, 20s))
      << stalling.log() << logs();
  const std::string log = stalling.log();
  const double stayed = std::stod(log.substr(log.find("client left after ") + 18));
  EXPECT_LT(stayed, 15.0) << "the worker kept the transfer open after the cancel:\n" << log;
  EXPECT_TRUE(eventually([&] { return workers_[0]->log().find("witness fetch cancelled") != std::string::npos; }, 10s))
      << logs();
  // The worker goes on.
  farm::submit(options_, job("after", bn254_.id, json::array({partition("bn128_mul.wtns")})));
  ASSERT_EQ(wait_job("after", 60s).state, "done") << logs();
}

}  // namespace
}  // namespace zkfarm::testing
