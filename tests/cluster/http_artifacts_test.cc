// http_artifacts_test.cc -- workers without the artifact store: --artifacts
// is the URL of the test's HTTP server serving it. A circuit's files are
// downloaded into the worker's private --cache-dir, a broken partial
// download is started over, each file is checked against the sha256 in its
// Redis record, and a file that does not match is downloaded once more and
// then refused (artifactChecksum) while the farm goes on.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/cluster/farm_fixture.h"

namespace zkfarm::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class HttpArtifactsTest : public FarmTest {
 protected:
  void SetUp() override {
    FarmTest::SetUp();
    witness_file("bn128_mul.wtns");
    witness_file("bls12381_mul.wtns");
    // Serves the test's directory: the store under artifacts/, the witnesses beside it.
    http_ = std::make_unique<HttpServer>(dir_->path(), dir_->file("http-server.txt"));
  }
  void TearDown() override {
    http_.reset();
    FarmTest::TearDown();
  }
  // Witnesses come from the same loopback server, which
  // --witness-url-allow must name (artifacts are not confined).
  std::size_t start_http_worker(const std::string& id) {
    return start_worker(id, {"--artifacts", http_->url() + "artifacts/", "--witness-url-allow", "127.0.0.1"});
  }
  std::string witness_url(const std::string& name) { return http_->url() + name; }
  std::unique_ptr<HttpServer> http_;
};

TEST_F(HttpArtifactsTest, WorkersDownloadCircuitsIntoTheirCacheAndCheckThem) {
  start_coordinator({"--witness-url-allow", "127.0.0.1"});
  // A transfer broken earlier left bytes that are not the zkey's.
  const std::string cache = dir_->file("cache-w1");
  fs::create_directories(cache + "/" + bn254_.id);
  write_file(cache + "/" + bn254_.id + "/circuit.zkey.part", std::string(100, 'x'));
  start_http_worker("w1");
  farm::submit(options_, job_json("bn", bn254_.id, {witness_url("bn128_mul.wtns"), witness_url("bn128_mul.wtns")}));
  farm::submit(options_, job_json("bls", bls12381_.id, {witness_url("bls12381_mul.wtns")}));
  farm::JobStatus s = wait_job("bn", 60s);
  ASSERT_EQ(s.state, "done") << s.error << logs();
  expect_result_verifies("bn", 2);
  s = wait_job("bls", 60s);
  ASSERT_EQ(s.state, "done") << s.error << logs();
  expect_result_verifies("bls", 1);
  for (const auto& circuit : {bn254_, bls12381_})
    for (const char* name : {"circuit.zkey", "circuit.pce", "vk.json"}) {
      const std::string copy = cache + "/" + circuit.id + "/" + name;
      EXPECT_TRUE(fs::exists(copy)) << copy;
      EXPECT_FALSE(fs::exists(copy + ".part")) << copy;
      EXPECT_EQ(read_file(copy), read_file(options_.artifacts + "/" + circuit.id + "/" + name)) << copy;
    }
  EXPECT_NE(workers_[0]->log().find("downloading " + http_->url() + "artifacts/" + bn254_.id + "/circuit.zkey"),
            std::string::npos)
      << logs();
  EXPECT_NE(http_->log().find("GET /artifacts/" + bls12381_.id + "/circuit.pce"), std::string::npos);
}

TEST_F(HttpArtifactsTest, AFileThatDoesNotMatchItsRecordIsDownloadedAgainThenRefused) {
  // The served PCE of the BLS circuit no longer matches its record.
  const std::string pce = options_.artifacts + "/" + bls12381_.id + "/circuit.pce";
  std::string bytes = read_file(pce);
  bytes[bytes.size() / 2] ^= 0x55;
  write_file(pce, bytes);
  start_coordinator({"--max-attempts", "2", "--witness-url-allow", "127.0.0.1"});
  start_http_worker("w1");
  farm::submit(options_, job_json("bad-pce", bls12381_.id, {witness_url("bls12381_mul.wtns")}));
  farm::JobStatus s = wait_job("bad-pce", 60s);
  EXPECT_EQ(s.state, "failed") << logs();
  EXPECT_EQ(s.error_code, "artifactChecksum") << s.error;
  EXPECT_NE(workers_[0]->log().find("downloading it again"), std::string::npos) << logs();
  EXPECT_FALSE(fs::exists(dir_->file("cache-w1/" + bls12381_.id + "/circuit.pce")));
  // The worker goes on with the other circuit.
  farm::submit(options_, job_json("good", bn254_.id, {witness_url("bn128_mul.wtns")}));
  s = wait_job("good", 60s);
  ASSERT_EQ(s.state, "done") << s.error << logs();
  expect_result_verifies("good", 1);
}

}  // namespace
}  // namespace zkfarm::testing
