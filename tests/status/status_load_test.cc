// status_load_test.cc -- the coordinator's HTTP ports under hostile or heavy
// clients, with real processes (redis-server, zkfarm-coordinator, sockets).
//
//   * Slowloris on the status page's port: 32 connections that trickle a
//     request's headers forever. /metrics, on its own server and port, must
//     answer within a generous bound all the while (when the page and
//     /metrics shared civetweb's 4 threads, 6 such connections kept /metrics
//     silent for over 20 s), and the page answers again once its request
//     timeout has dropped them.
//   * 16 running jobs of about 7.6 MB of JSON each (4096 partitions naming a
//     long redis:// key), no worker to run them. /api/v1/jobs must list all
//     16 without reading a raw job entry: Redis's own counters show no LRANGE
//     (the page used to LRANGE every processing list) and only kilobytes
//     sent back per request beyond what the coordinator's own loops read, and the coordinator's peak memory does not grow
//     (it grew by ~380 MB when the page parsed the raw entries).
// Durations are asserted only as generous upper bounds; the figures measured
// are printed.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cluster/job_store.h"
#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "tests/cluster/farm_fixture.h"
#include "tests/harness/harness.h"

namespace zkfarm::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A slowloris client: sends a request's headers a line every 200 ms and
// never ends them, until the server closes the connection or it is destroyed.
class Trickler {
 public:
  explicit Trickler(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
    thread_ = std::thread([this] {
      std::string line = "GET /api/v1/jobs HTTP/1.1\r\n";
      while (connected_ && !stop_) {
        if (send(fd_, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) break;
        line = "X-Slow: 1\r\n";
        for (int i = 0; i < 20 && !stop_; ++i) std::this_thread::sleep_for(10ms);
      }
      dropped_ = !stop_;
    });
  }
  ~Trickler() {
    stop_ = true;
    thread_.join();
    if (fd_ >= 0) close(fd_);
  }
  bool connected() const { return connected_; }
  bool dropped() const { return dropped_; }

 private:
  int fd_ = -1;
  bool connected_ = false;
  std::atomic<bool> stop_{false}, dropped_{false};
  std::thread thread_;
};

// A field of /proc/<pid>/status in kB ("VmHWM", "VmRSS"), -1 if absent.
long proc_status_kb(pid_t pid, const std::string& name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name + ":", 0) == 0) return std::stol(line.substr(name.size() + 1));
  return -1;
}

// One "name:value" of an INFO section reply, or "" (INFO's lines end "\r\n").
std::string info_field(const std::string& info, const std::string& name) {
  const std::size_t at = info.find("\n" + name + ":");
  if (at == std::string::npos) return "";
  const std::size_t start = at + name.size() + 2;
  return info.substr(start, info.find_first_of("\r\n", start) - start);
}

class StatusLoadTest : public FarmTest {};

TEST_F(StatusLoadTest, SlowlorisOnThePageLeavesMetricsAnswering) {
  const int metrics_port = free_port(), page_port = free_port();
  start_coordinator({"--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port), "--status-listen",
                     "127.0.0.1:" + std::to_string(page_port)});
  ASSERT_TRUE(eventually([&] { return http_request(page_port, "GET", "/api/v1/jobs").status == 200; }, 30s))
      << logs();
  ASSERT_EQ(http_request(metrics_port, "GET", "/metrics").status, 200);
  EXPECT_EQ(http_request(metrics_port, "GET", "/").status, 404) << "the page is not on the metrics port";
  EXPECT_EQ(http_request(page_port, "GET", "/metrics").status, 404) << "/metrics is not on the page's port";

  std::vector<std::unique_ptr<Trickler>> tricklers;
  for (int i = 0; i < 32; ++i) tricklers.push_back(std::make_unique<Trickler>(page_port));
  for (const auto& t : tricklers) ASSERT_TRUE(t->connected());
  std::this_thread::sleep_for(500ms);  // every page thread is held now
  double slowest = 0;
  for (int i = 0; i < 5; ++i) {
    const auto start = std::chrono::steady_clock::now();
    HttpResult scrape = http_request(metrics_port, "GET", "/metrics");
    slowest = std::max(slowest, seconds_since(start));
    EXPECT_EQ(scrape.status, 200);
    EXPECT_NE(scrape.body.find("zkfarm_build_info"), std::string::npos);
    std::this_thread::sleep_for(200ms);
  }
  std::printf("slowest /metrics beside 32 slowloris connections on the page: %.3f s\n", slowest);
  EXPECT_LT(slowest, 10.0) << "/metrics waited on the page's slow clients";
  // The page sheds them after its request timeout (5 s a connection; 32 of
  // them through 4 threads) and answers again.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(eventually([&] { return http_request(page_port, "GET", "/api/v1/jobs").status == 200; }, 120s));
  std::printf("the page answered again after %.1f s\n", seconds_since(start));
  for (const auto& t : tricklers) EXPECT_TRUE(eventually([&] { return t->dropped(); }, 120s));
}

TEST_F(StatusLoadTest, LargeRunningJobsAreNotReadRaw) {
  const int page_port = free_port();
  start_coordinator({"--status-listen", "127.0.0.1:" + std::to_string(page_port)});
  RedisClient redis(options_.redis_url);
  KeyLayout keys(options_.prefix);
  // One witness under a long key; 4096 partitions naming it make a job of
  // about 7.6 MB (the limit is 8 MiB).
  const std::string key = options_.prefix + "wtns:" + std::string(1800, 'k');
  redis.command({"SET", key, read_file(witness_file("bn128_mul.wtns"))});
  constexpr int kJobs = 16;
  std::size_t job_bytes = 0;
  for (int j = 0; j < kJobs; ++j) {
    json job = {{"id", "big-" + std::to_string(j)}, {"circuit", bn254_.id}, {"partitions", json::array()}};
    for (int p = 0; p < 4096; ++p) job["partitions"].push_back({{"witness", "redis://" + key}});
    const std::string text = job.dump();
    job_bytes = text.size();
    farm::submit(options_, text);
  }
  std::printf("%d jobs of %zu bytes of JSON each\n", kJobs, job_bytes);
  ASSERT_GT(job_bytes, 7u << 20);
  // All taken in and running (no worker: they stay running).
  ASSERT_TRUE(eventually(
      [&] {
        for (int j = 0; j < kJobs; ++j)
          if (redis.command({"HGET", keys.job("big-" + std::to_string(j)), JobStore::kState}).str != "running")
            return false;
        return true;
      },
      240s))
      << logs();
  ASSERT_TRUE(eventually([&] { return http_request(page_port, "GET", "/api/v1/jobs").status == 200; }, 30s));
  std::this_thread::sleep_for(1s);  // intake's allocations settle

  const long peak_before_kb = proc_status_kb(coordinator_->pid(), "VmHWM");
  auto redis_sent = [&] {
    return std::stoll(info_field(redis.command({"INFO", "stats"}).str, "total_net_output_bytes"));
  };
  // What Redis sends the farm itself (the coordinator's own loops) in the
  // time the requests below take, so that only the page's share is bounded.
  const auto quiet_start = std::chrono::steady_clock::now();
  const long long quiet_before = redis_sent();
  std::this_thread::sleep_for(2s);
  const long long quiet_sent = redis_sent() - quiet_before;
  const double quiet_seconds = seconds_since(quiet_start);
  redis.command({"CONFIG", "RESETSTAT"});
  const long long sent_before = redis_sent();
  const auto requests_start = std::chrono::steady_clock::now();
  double slowest = 0;
  constexpr int kRequests = 5;
  for (int i = 0; i < kRequests; ++i) {
    const auto start = std::chrono::steady_clock::now();
    HttpResult r = http_request(page_port, "GET", "/api/v1/jobs");
    slowest = std::max(slowest, seconds_since(start));
    ASSERT_EQ(r.status, 200) << r.body;
    const json jobs = json::parse(r.body);
    ASSERT_EQ(jobs["running"].size(), static_cast<std::size_t>(kJobs)) << jobs.dump(1).substr(0, 2000);
    EXPECT_EQ(jobs["running"][0]["partitions"], 4096);
    EXPECT_EQ(jobs["running"][0]["coordinator"], "c1");
    ASSERT_EQ(jobs["coordinators"].size(), 1u);
    EXPECT_EQ(jobs["coordinators"][0]["held"], kJobs);
    EXPECT_LT(r.body.size(), 64u << 10);
  }
  const std::string commandstats = redis.command({"INFO", "commandstats"}).str;
  const double requests_seconds = seconds_since(requests_start);
  const long long sent = redis_sent() - sent_before -
                         static_cast<long long>(quiet_sent * requests_seconds / quiet_seconds);
  const long peak_after_kb = proc_status_kb(coordinator_->pid(), "VmHWM");
  std::printf("/api/v1/jobs with %d running jobs: slowest %.3f s; Redis sent %lld bytes for %d requests (beyond "
              "the farm's own %lld bytes in %.1f s); coordinator peak memory %ld -> %ld kB\n",
              kJobs, slowest, sent, kRequests, quiet_sent, quiet_seconds, peak_before_kb, peak_after_kb);
  EXPECT_EQ(info_field(commandstats, "cmdstat_lrange"), "") << "the page read a raw list: " << commandstats;
  EXPECT_LT(sent, 4ll << 20) << "the page read megabytes of job JSON";
  EXPECT_LT(peak_after_kb - peak_before_kb, 32 << 10) << "the page grew the coordinator's peak memory";
  EXPECT_LT(slowest, 10.0);
}

}  // namespace
}  // namespace zkfarm::testing
