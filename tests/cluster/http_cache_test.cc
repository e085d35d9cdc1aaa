// http_cache_test.cc -- a worker's --cache-dir for artifacts over HTTP:
//  * a broken download is resumed with a Range request when the server
//    honours Range (the test's own server, range_http_server.py, which can
//    cut a transfer after N bytes and logs every request);
//  * a cache dir without room for a circuit fails the task with an error
//    naming the space needed and free, leaves no partial file behind (nor
//    does a write that runs out of room anyway), and the worker goes on
//    serving once there is room;
//  * a cache dir under --cache-budget: circuits beyond it remove the least
//    recently used circuit's files, the disk stays under the budget, and a
//    circuit needed again is downloaded and checked again.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <regex>

#include "base/digest.h"
#include "tests/cluster/farm_fixture.h"

namespace zkfarm::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// tests/cluster/range_http_server.py serving `dir` on a free port, with
// its --cut and --fill-after options.
std::unique_ptr<HttpServer> range_server(const std::string& dir, const std::string& log_path,
                                         const std::vector<std::string>& cuts,
                                         const std::vector<std::string>& fills = {}) {
  std::vector<std::string> extra;
  for (const auto& cut : cuts) extra.insert(extra.end(), {"--cut", cut});
  for (const auto& fill : fills) extra.insert(extra.end(), {"--fill-after", fill});
  return std::make_unique<HttpServer>(dir, log_path, runfile("tests/cluster/range_http_server.py"), extra);
}

class HttpCacheTest : public FarmTest {
 protected:
  void SetUp() override {
    FarmTest::SetUp();
    witness_file("bn128_mul.wtns");
  }
  void TearDown() override {
    for (auto& w : workers_) w.reset();  // nothing holds the mount any more
    if (!mounted_.empty() && ::umount2(mounted_.c_str(), MNT_DETACH) != 0)
      ADD_FAILURE() << "cannot unmount " << mounted_ << ": " << std::strerror(errno);
    http_.reset();
    FarmTest::TearDown();
  }
  std::string witness_url() { return http_->url() + "bn128_mul.wtns"; }
  // Mounts a 1 MiB tmpfs on `dir` and fills it, but for `free_pages` 4 KiB
  // pages, with the file `dir`/filler. False: mount is not permitted.
  bool small_cache(const std::string& dir, std::uint64_t free_pages) {
    fs::create_directories(dir);
    if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=1m") != 0) {
      mount_error_ = std::strerror(errno);
      return false;
    }
    mounted_ = dir;
    struct statvfs st {};
    EXPECT_EQ(::statvfs(dir.c_str(), &st), 0);
    EXPECT_EQ(st.f_frsize, 4096u);
    const std::uint64_t free_bytes = std::uint64_t(st.f_bavail) * st.f_frsize;
    EXPECT_GT(free_bytes, free_pages * 4096);
    write_file(dir + "/filler", std::string(free_bytes - free_pages * 4096, '\0'));
    EXPECT_EQ(::statvfs(dir.c_str(), &st), 0);
    EXPECT_EQ(std::uint64_t(st.f_bavail) * st.f_frsize, free_pages * 4096);
    return true;
  }
  std::unique_ptr<HttpServer> http_;
  std::string mounted_, mount_error_;
};

TEST_F(HttpCacheTest, ABrokenDownloadIsResumedWithARangeRequest) {
  const std::string zkey = "/artifacts/" + bn254_.id + "/circuit.zkey";
  const std::uint64_t size = fs::file_size(options_.artifacts + "/" + bn254_.id + "/circuit.zkey");
  const std::uint64_t cut = size / 2;
  http_ = range_server(dir_->path(), dir_->file("http-server.txt"),
                                            std::vector<std::string>{zkey + ":" + std::to_string(cut)});
  start_coordinator({"--witness-url-allow", "127.0.0.1"});
  start_worker("w1", {"--witness-url-allow", "127.0.0.1", "--artifacts", http_->url() + "artifacts/"});
  farm::submit(options_, job_json("bn", bn254_.id, {witness_url()}));
  farm::JobStatus s = wait_job("bn", 60s);
  ASSERT_EQ(s.state, "done") << s.error << logs() << http_->log();
  expect_result_verifies("bn", 1);

  const std::string log = http_->log();
  EXPECT_NE(log.find("cut " + zkey + " after " + std::to_string(cut) + " bytes"), std::string::npos) << log;
  // The next request for the zkey asks for the rest, from where the broken
  // transfer stopped (K > 0), and gets it as 206.
  const std::regex resumed("request GET " + zkey + " range=bytes=([0-9]+)-\n");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log, m, resumed)) << log;
  EXPECT_EQ(std::stoull(m[1].str()), cut) << log;
  EXPECT_NE(log.find("served " + zkey + " status=206 bytes=" + std::to_string(cut) + "-" + std::to_string(size - 1) +
                     "/" + std::to_string(size)),
            std::string::npos)
      << log;
  EXPECT_NE(workers_[0]->log().find("resuming after"), std::string::npos) << logs();

  const std::string copy = dir_->file("cache-w1/" + bn254_.id + "/circuit.zkey");
  EXPECT_FALSE(fs::exists(copy + ".part"));
  EXPECT_EQ(sha256_file_hex(copy), bn254_.id);
}

TEST_F(HttpCacheTest, ACacheDirWithoutRoomFailsTheTaskAndTheWorkerGoesOn) {
  const std::string cache = dir_->file("cache-small");
  // One 4 KiB page free: the circuit's zkey alone (4.5 KiB) does not fit,
  // nor do its files together.
  if (!small_cache(cache, 1))
    GTEST_SKIP() << "cannot mount a 1 MiB tmpfs on " << cache << " (needs root with CAP_SYS_ADMIN): " << mount_error_;
  ASSERT_FALSE(HasFailure());
  const std::string filler = cache + "/filler";

  http_ = range_server(dir_->path(), dir_->file("http-server.txt"), std::vector<std::string>{});
  start_coordinator({"--max-attempts", "1", "--witness-url-allow", "127.0.0.1"});
  start_worker("w1", {"--witness-url-allow", "127.0.0.1", "--artifacts", http_->url() + "artifacts/", "--cache-dir", cache});
  farm::submit(options_, job_json("full", bn254_.id, {witness_url()}));
  farm::JobStatus s = wait_job("full", 60s);
  ASSERT_EQ(s.state, "failed") << logs();
  EXPECT_NE(s.error.find("no room in --cache-dir " + cache), std::string::npos) << s.error;
  EXPECT_TRUE(std::regex_search(s.error, std::regex("need [0-9.]+ KiB \\([0-9]+ bytes\\), 4\\.0 KiB \\(4096 bytes\\) are free"))) << s.error;
  // Nothing of the circuit was written: no partial file, no artifact.
  EXPECT_FALSE(fs::exists(cache + "/" + bn254_.id)) << logs();
  EXPECT_EQ(http_->log().find("request GET /artifacts/"), std::string::npos) << http_->log();

  // Room again: the same worker downloads the circuit and proves.
  fs::remove(filler);
  farm::submit(options_, job_json("room", bn254_.id, {witness_url()}));
  s = wait_job("room", 60s);
  ASSERT_EQ(s.state, "done") << s.error << logs();
  expect_result_verifies("room", 1);
  EXPECT_EQ(sha256_file_hex(cache + "/" + bn254_.id + "/circuit.zkey"), bn254_.id);
}

TEST_F(HttpCacheTest, AWriteThatRunsOutOfRoomLeavesNoPartialFile) {
  // Room for the circuit when its download starts; another writer takes
  // the rest of the disk after 100 bytes of the zkey (4.5 KiB): the write
  // of the next page fails with ENOSPC.
  const std::string cache = dir_->file("cache-small");
  if (!small_cache(cache, 16))
    GTEST_SKIP() << "cannot mount a 1 MiB tmpfs on " << cache << " (needs root with CAP_SYS_ADMIN): " << mount_error_;
  ASSERT_FALSE(HasFailure());
  const std::string zkey = "/artifacts/" + bn254_.id + "/circuit.zkey";
  http_ = range_server(dir_->path(), dir_->file("http-server.txt"),
                                            std::vector<std::string>{},
                                            std::vector<std::string>{zkey + ":100:" + cache + "/other-writer"});
  start_coordinator({"--max-attempts", "1", "--witness-url-allow", "127.0.0.1"});
  start_worker("w1", {"--witness-url-allow", "127.0.0.1", "--artifacts", http_->url() + "artifacts/", "--cache-dir", cache});
  farm::submit(options_, job_json("enospc", bn254_.id, {witness_url()}));
  farm::JobStatus s = wait_job("enospc", 60s);
  ASSERT_EQ(s.state, "failed") << logs();
  EXPECT_NE(http_->log().find("filled " + cache + "/other-writer after 100 bytes of " + zkey), std::string::npos)
      << http_->log();
  EXPECT_NE(s.error.find("cannot write " + cache + "/" + bn254_.id + "/circuit.zkey.part"), std::string::npos)
      << s.error;
  EXPECT_NE(s.error.find("circuit.zkey.part: " + std::string(std::strerror(ENOSPC))), std::string::npos) << s.error;
  for (const auto& entry : fs::recursive_directory_iterator(cache))
    EXPECT_NE(entry.path().extension(), ".part") << entry.path();

  // Room again: the same worker downloads the circuit and proves.
  fs::remove(cache + "/filler");
  fs::remove(cache + "/other-writer");
  farm::submit(options_, job_json("room", bn254_.id, {witness_url()}));
  s = wait_job("room", 60s);
  ASSERT_EQ(s.state, "done") << s.error << logs();
  expect_result_verifies("room", 1);
}

// Bytes of the files under `dir` (recursively).
std::uint64_t bytes_under(const std::string& dir) {
  std::uint64_t total = 0;
  if (!fs::exists(dir)) return 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file()) total += entry.file_size();
  return total;
}

// Probe: the artifact cache on disk was never evicted.
TEST_F(HttpCacheTest, TheCacheDirStaysUnderItsBudgetAndARemovedCircuitIsFetchedAgain) {
  witness_file("bls12381_mul.wtns");
  const std::uint64_t bn = bytes_under(options_.artifacts + "/" + bn254_.id);
  const std::uint64_t bls = bytes_under(options_.artifacts + "/" + bls12381_.id);
  // Room for either circuit, not both.
  const std::uint64_t budget = std::max(bn, bls) + std::min(bn, bls) / 2;
  ASSERT_LT(budget, bn + bls);
  const std::string cache = dir_->file("cache-budget");
  http_ = range_server(dir_->path(), dir_->file("http-server.txt"), std::vector<std::string>{});
  start_coordinator({"--witness-url-allow", "127.0.0.1"});
  // One circuit resident in memory: the next job of the first circuit loads
  // it from the cache directory again.
  start_worker("w1", {"--witness-url-allow", "127.0.0.1", "--artifacts", http_->url() + "artifacts/", "--cache-dir",
                      cache, "--max-resident", "1", "--cache-budget", std::to_string(budget)});
  const std::string zkey = "/artifacts/" + bn254_.id + "/circuit.zkey";
  struct Step {
    std::string job;
    const CircuitInfo* circuit;
    std::string witness;
  };
  const std::vector<Step> steps = {{"bn-1", &bn254_, "bn128_mul.wtns"},
                                   {"bls-1", &bls12381_, "bls12381_mul.wtns"},
                                   {"bn-2", &bn254_, "bn128_mul.wtns"}};
  for (const Step& step : steps) {
    farm::submit(options_, job_json(step.job, step.circuit->id, {http_->url() + step.witness}));
    farm::JobStatus s = wait_job(step.job, 60s);
    ASSERT_EQ(s.state, "done") << step.job << ": " << s.error << logs();
    expect_result_verifies(step.job, 1);
    const std::uint64_t held = bytes_under(cache);
    EXPECT_LE(held, budget) << "after " << step.job;
    EXPECT_TRUE(fs::exists(cache + "/" + step.circuit->id)) << step.job;
    std::cout << "after " << step.job << ": " << held << " bytes cached, budget " << budget << "\n";
  }
  // bls-1 removed bn254's files, bn-2 removed bls12381's and downloaded
  // bn254 again (and checked it: its copy's sha256 is its id).
  EXPECT_FALSE(fs::exists(cache + "/" + bls12381_.id)) << logs();
  const std::string log = workers_[0]->log();
  EXPECT_NE(log.find("removed circuit " + bn254_.id + "'s files"), std::string::npos) << log;
  EXPECT_NE(log.find("removed circuit " + bls12381_.id + "'s files"), std::string::npos) << log;
  const std::string served = http_->log();
  std::size_t gets = 0;
  for (std::size_t at = served.find("request GET " + zkey); at != std::string::npos;
       at = served.find("request GET " + zkey, at + 1))
    ++gets;
  EXPECT_EQ(gets, 2u) << served;
  EXPECT_EQ(sha256_file_hex(cache + "/" + bn254_.id + "/circuit.zkey"), bn254_.id);
}

}  // namespace
}  // namespace zkfarm::testing
