// fairness_test.cc -- the farm's fair share between tenants, with real
// processes (issue 27 item 4): redis-server with the shipped ACL users
// (deploy/users.acl), a coordinator as zkfarm-admin, four CPU workers as
// zkfarm-worker, and the tenants' clients as the zkfarm CLI with their own
// credentials.
//
// Tenant A queues 200 jobs of 4 partitions; then tenant B submits one job,
// then three more (60 partitions each, so B keeps work pending through the
// run). Measured from what the farm records -- each proved partition's
// "partition_proved" event (its time) and its stored PartitionResult
// (coordinator worker_s: dispatch to result; accept_s: result to stored):
//  - B's wait: from the moment B's CLI was started to the dispatch of B's
//    first partition. Every worker is busy with A's partitions then, so it
//    must not exceed one partition time (the longest worker_s measured)
//    plus kSchedulingSlack;
//  - each tenant's share of the worker time inside two windows, weights
//    1:1 and then 3:1 (`zkfarm tenant set a --weight 3`), both tenants
//    with work queued all through: within 10% of its weight's share.
// The figures are printed ("fairness: ...") for the closing note.
// Every worker sleeps kProveDelayMs before each proof (--prove-delay-ms),
// so that the partition time is the workers' and not the CPU's: the test
// measures the scheduler's decisions on a loaded 2-core machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "tests/cluster/farm_fixture.h"
#include "tests/harness/harness.h"

namespace zkfarm::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr int kWorkers = 4;
constexpr const char* kProveDelayMs = "300";
constexpr int kBurstJobs = 200;       // tenant A's
constexpr int kBurstPartitions = 4;   // per A job
constexpr int kBJobs = 4;             // tenant B's, the first one timed
constexpr int kBPartitions = 60;      // per B job: B's work outlasts both windows
constexpr double kWindowSeconds = 8;  // each measured window
// What B's wait may take beyond one partition time: the CLI's start, the
// intake's poll (50 ms here), the claim, the witness reads and the
// dispatch, on a 2-core machine shared with other tests.
constexpr double kSchedulingSlack = 2.0;  // seconds
constexpr double kShareTolerance = 0.10;  // of each tenant's weight's share

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// One proved partition's task, as the farm recorded it.
struct Task {
  double start = 0, end = 0;  // unix seconds: dispatch, result received
};

class FairnessTest : public FarmTest {
 protected:
  // The fixture's farm, but Redis runs the shipped ACL users: the
  // coordinator is zkfarm-admin, the workers zkfarm-worker, each tenant
  // its own user.
  void SetUp() override {
    dir_ = std::make_unique<TempDir>();
    redis_ = start_redis_with_shipped_users(*dir_);
    options_.redis_url = shipped_user_url(*redis_, "zkfarm-admin");
    options_.prefix = "zkfarm:";
    options_.artifacts = dir_->file("artifacts");
    std::filesystem::create_directories(options_.artifacts);
    bn254_ = farm::circuit_add(options_, runfile("formats/testdata/bn128_mul.zkey"));
    coordinator_port_ = free_port();
  }

  // The CLI as the admin (admin_url) or a tenant.
  CommandResult cli(std::vector<std::string> args, const std::string& url) {
    args.insert(args.begin(), runfile("cli/zkfarm"));
    args.insert(args.end(), {"--redis", url});
    return run_command(args, dir_->path());
  }

  // Every proved partition of a tenant's jobs id0..id<n-1>, from their
  // events and stored results (read as the admin).
  std::vector<Task> tasks_of(RedisClient& admin, const std::string& tenant, const std::string& prefix, int n) {
    const KeyLayout keys = KeyLayout(options_.prefix).for_tenant(tenant);
    std::vector<Task> out;
    for (int i = 0; i < n; ++i) {
      const std::string id = prefix + std::to_string(i);
      std::map<std::uint32_t, double> proved_at;
      const RedisReply events = admin.command({"LRANGE", keys.job_events(id), "0", "-1"});
      for (const auto& e : events.as_array()) {
        const json event = json::parse(e.as_string());
        if (event["type"] == "partition_proved") proved_at[event["partition"].get<std::uint32_t>()] = event["time"];
      }
      const auto proofs = admin.command({"HGETALL", keys.job_proofs(id)}).as_array();
      for (std::size_t k = 0; k + 1 < proofs.size(); k += 2) {
        const std::uint32_t partition = static_cast<std::uint32_t>(std::stoul(proofs[k].as_string()));
        const json result = json::parse(proofs[k + 1].as_string());
        auto at = proved_at.find(partition);
        if (at == proved_at.end()) continue;
        const double end = at->second - result["coordinator"]["accept_s"].get<double>();
        out.push_back(Task{end - result["coordinator"]["worker_s"].get<double>(), end});
      }
    }
    return out;
  }
};

// Worker seconds of `tasks` inside [from, to].
double seconds_within(const std::vector<Task>& tasks, double from, double to) {
  double sum = 0;
  for (const Task& t : tasks) sum += std::max(0.0, std::min(t.end, to) - std::max(t.start, from));
  return sum;
}

TEST_F(FairnessTest, ABurstDoesNotDelayAnotherTenantAndWorkerTimeFollowsTheWeights) {
  const CommandResult added_a = cli({"tenant", "add", "a"}, options_.redis_url);
  const CommandResult added_b = cli({"tenant", "add", "b"}, options_.redis_url);
  ASSERT_EQ(added_a.exit_code, 0) << added_a.err;
  ASSERT_EQ(added_b.exit_code, 0) << added_b.err;
  const std::string url_a = added_a.out.substr(0, added_a.out.find('\n'));
  const std::string url_b = added_b.out.substr(0, added_b.out.find('\n'));
  const CommandResult shared = cli({"circuit", "share", bn254_.id, "a", "b"}, options_.redis_url);
  ASSERT_EQ(shared.exit_code, 0) << shared.err;

  // One task per worker at a time: a task's time from dispatch to result
  // (worker_s, what the scheduler charges) is the worker's time on it, not
  // time queued at the worker behind its other tasks.
  start_coordinator({"--max-tasks-per-worker", "1"});
  const std::string admin_url = options_.redis_url;
  options_.redis_url = shipped_user_url(*redis_, "zkfarm-worker");  // start_worker's --redis
  for (int i = 0; i < kWorkers; ++i) start_worker("w" + std::to_string(i), {"--prove-delay-ms", kProveDelayMs});
  options_.redis_url = admin_url;
  // Each tenant's witness in its own directory under the witness root.
  const std::string a_witness = tenant_witness_file("a", "bn128_mul.wtns");
  const std::string b_witness = tenant_witness_file("b", "bn128_mul.wtns");

  // Tenant A's burst, through the CLI.
  std::vector<std::string> burst(kBurstPartitions, a_witness);
  for (int i = 0; i < kBurstJobs; ++i) {
    std::vector<std::string> args = {"submit", bn254_.id};
    args.insert(args.end(), burst.begin(), burst.end());
    args.insert(args.end(), {"--id", "a" + std::to_string(i)});
    const CommandResult r = cli(args, url_a);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  RedisClient admin(admin_url);
  const KeyLayout keys(options_.prefix);
  // Every worker busy with A's work, A's queue still long.
  ASSERT_GT(admin.command({"LLEN", keys.for_tenant("a").queue(Priority::kNormal)}).as_integer(), 50);

  // B's first job, then B's work for the windows.
  std::vector<std::string> b_job = {"submit", bn254_.id};
  for (int k = 0; k < kBPartitions; ++k) b_job.push_back(b_witness);
  const double b_submitted = now_unix();
  for (int i = 0; i < kBJobs; ++i) {
    std::vector<std::string> args = b_job;
    args.insert(args.end(), {"--id", "b" + std::to_string(i)});
    const CommandResult r = cli(args, url_b);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // Window 1: weights 1:1, from a second after B's jobs are in.
  std::this_thread::sleep_for(1s);
  const double w1_from = now_unix();
  std::this_thread::sleep_for(std::chrono::duration<double>(kWindowSeconds));
  const double w1_to = now_unix();
  // Window 2: weights 3:1, once every coordinator tick has read it (ten
  // ticks of 100 ms) and the shares have settled.
  const CommandResult set = cli({"tenant", "set", "a", "--weight", "3"}, admin_url);
  ASSERT_EQ(set.exit_code, 0) << set.err;
  std::this_thread::sleep_for(2s);
  const double w2_from = now_unix();
  std::this_thread::sleep_for(std::chrono::duration<double>(kWindowSeconds));
  const double w2_to = now_unix();
  // Both tenants still had work queued at the end: nobody ran dry.
  EXPECT_GT(admin.command({"LLEN", keys.for_tenant("a").queue(Priority::kNormal)}).as_integer(), 0);
  EXPECT_NE(farm::status(farm::FarmOptions{.redis_url = url_b, .prefix = options_.prefix}, "b0")->state, "done");
  // Tasks in flight at the windows' end are proved within a partition time.
  std::this_thread::sleep_for(2s);

  RedisClient reader(admin_url);
  const std::vector<Task> a = tasks_of(reader, "a", "a", kBurstJobs);
  const std::vector<Task> b = tasks_of(reader, "b", "b", kBJobs);
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  double partition_time = 0;
  for (const Task& t : a) partition_time = std::max(partition_time, t.end - t.start);
  double b_first = b[0].start;
  for (const Task& t : b) b_first = std::min(b_first, t.start);
  const double b_wait = b_first - b_submitted;
  std::printf("fairness: B's first partition dispatched %.3f s after B's CLI started; one partition time (longest "
              "worker_s of A's %zu partitions) %.3f s, slack %.1f s\n",
              b_wait, a.size(), partition_time, kSchedulingSlack);
  EXPECT_LE(b_wait, partition_time + kSchedulingSlack) << logs();

  struct Window {
    double from, to, weight_a, weight_b;
  };
  for (const Window& window : {Window{w1_from, w1_to, 1, 1}, Window{w2_from, w2_to, 3, 1}}) {
    const double sa = seconds_within(a, window.from, window.to), sb = seconds_within(b, window.from, window.to);
    const double share_a = sa / (sa + sb), share_b = sb / (sa + sb);
    const double want_a = window.weight_a / (window.weight_a + window.weight_b), want_b = 1 - want_a;
    std::printf("fairness: weights %g:%g over %.1f s: worker time A %.2f s, B %.2f s (%.0f%% of %d workers); "
                "shares A %.3f (weight's %.3f), B %.3f (weight's %.3f)\n",
                window.weight_a, window.weight_b, window.to - window.from, sa, sb,
                100 * (sa + sb) / ((window.to - window.from) * kWorkers), kWorkers, share_a, want_a, share_b, want_b);
    EXPECT_NEAR(share_a, want_a, kShareTolerance * want_a) << "weights " << window.weight_a << ":" << window.weight_b;
    EXPECT_NEAR(share_b, want_b, kShareTolerance * want_b) << "weights " << window.weight_a << ":" << window.weight_b;
  }
}

}  // namespace
}  // namespace zkfarm::testing
