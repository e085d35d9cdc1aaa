// witness_access_test.cc -- what a client-named witness may make the farm
// do: a FIFO (or any non-regular file) fails its job at once instead of
// blocking the coordinator's intake or a worker's prover thread; file://
// witnesses are read only under the witness roots and redis:// witnesses
// only under the farm's key prefix, and errors echo nothing of a file.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "cluster/redis_client.h"
#include "tests/cluster/farm_fixture.h"

namespace zkfarm::testing {
namespace {

// Makes a FIFO at path (replacing whatever is there).
void make_fifo(const std::string& path) {
  std::filesystem::remove(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << path;
}

// Waits for a process to exit after SIGTERM; returns its exit code, or -1 if
// it is still running after timeout (it is SIGKILLed by its destructor).
int terminate_and_wait(Process& process, std::chrono::milliseconds timeout) {
  process.signal(SIGTERM);
  std::optional<int> status = process.wait_for(timeout);
  if (!status) return -1;
  return WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status);
}

// Before the fix the coordinator's intake thread waited in open() for a
// writer that never came: the job stayed running, later jobs were never
// taken, and SIGTERM could not stop the coordinator (it joins intake).
TEST_F(FarmTest, FifoWitnessFailsItsJobAndTheCoordinatorKeepsServing) {
  start_coordinator();
  start_worker("w1", {"--prove-delay-ms", "1000"});
  const std::string fifo = dir_->file("fifo.wtns");
  make_fifo(fifo);
  farm::submit(options_, job_json("fifo", bn254_.id, {"file://" + fifo}));
  farm::JobStatus s = wait_job("fifo", std::chrono::seconds(15));
  EXPECT_EQ(s.state, "failed");
  EXPECT_EQ(s.error_code, "witnessUnavailable") << s.error;
  EXPECT_NE(s.error.find(fifo + ": not a regular file"), std::string::npos) << s.error;

  // Intake still serves, and a cancel of a running job takes effect.
  const std::string good = "file://" + witness_file("bn128_mul.wtns");
  farm::submit(options_, job_json("fifo-again", bn254_.id, {good, "file://" + fifo}));
  farm::submit(options_, job_json("to-cancel", bn254_.id, {good, good, good}));
  ASSERT_TRUE(eventually(
      [&] {
        auto st = farm::status(options_, "to-cancel");
        return st && st->state == "running";
      },
      std::chrono::seconds(15)))
      << logs();
  farm::cancel(options_, "to-cancel");
  EXPECT_EQ(wait_job("to-cancel", std::chrono::seconds(15)).state, "cancelled");
  EXPECT_EQ(wait_job("fifo-again", std::chrono::seconds(15)).state, "failed");

  // And SIGTERM stops the coordinator promptly.
  EXPECT_EQ(terminate_and_wait(*coordinator_, std::chrono::seconds(10)), 0) << logs();
}

// The coordinator saw a regular file; by the time the worker fetches the
// witness it is a FIFO. Before the fix the prover thread waited in open()
// forever: the partition never finished and SIGTERM's drain never ended
// (after the drain timeout the worker still joined the blocked thread).
// The swap happens after intake and before any worker exists: a worker
// fetches a partition's witness ahead of its slot (prefetch), so swapping
// while partition 0 proves would race that fetch.
TEST_F(FarmTest, FifoWitnessOnAWorkerFailsTheTaskAndDrainFinishes) {
  start_coordinator({"--max-attempts", "1"});
  const std::string good = "file://" + witness_file("bn128_mul.wtns");
  const std::string swapped = dir_->file("swapped.wtns");
  std::filesystem::copy_file(runfile("formats/testdata/bn128_mul.wtns"), swapped);
  farm::submit(options_, job_json("swap", bn254_.id, {good, "file://" + swapped}));
  ASSERT_TRUE(eventually([&] { return coordinator_->log().find("job swap started") != std::string::npos; },
                         std::chrono::seconds(15)))
      << logs();
  make_fifo(swapped);
  const std::size_t w = start_worker("w1", {"--slots", "1", "--drain-timeout-s", "5"});
  farm::JobStatus s = wait_job("swap", std::chrono::seconds(20));
  EXPECT_EQ(s.state, "failed");
  EXPECT_NE(s.error.find(swapped + ": not a regular file"), std::string::npos) << s.error;
  EXPECT_NE(workers_[w]->log().find("not a regular file"), std::string::npos);
  // The worker still drains and exits well inside its drain timeout.
  EXPECT_EQ(terminate_and_wait(*workers_[w], std::chrono::seconds(4)), 0) << logs();
}

// Before the fix a job could make the coordinator open any path it can
// read: /etc/passwd failed with `wrong magic ... found "root"`, a missing
// path with "No such file", so errors told whether a path exists, its size
// and its first bytes; and a redis:// witness could name any key.
TEST_F(FarmTest, WitnessesOutsideTheRootsAreRefusedAlikeAndNothingIsEchoed) {
  start_coordinator();
  start_worker("w1");
  const std::string dir = dir_->path();
  std::filesystem::create_symlink("/etc/passwd", dir_->file("link.wtns"));
  std::filesystem::create_directory_symlink("/etc", dir_->file("etc"));
  RedisClient redis(options_.redis_url);
  // A valid witness under a key outside the farm's prefix.
  redis.command({"SET", "other:wtns", read_file(witness_file("bn128_mul.wtns"))});
  const std::map<std::string, std::string> refused = {
      {"passwd", "file:///etc/passwd"},
      {"missing", "file:///nonexistent/p.wtns"},
      {"dotdot", "file://" + dir + "/../../../../../../../../etc/passwd"},
      {"symlink", "file://" + dir + "/link.wtns"},
      {"symlinked-dir", "file://" + dir + "/etc/passwd"},
      {"missing-inside", "file://" + dir + "/no-such.wtns"},
  };
  for (const auto& [id, url] : refused) farm::submit(options_, job_json(id, bn254_.id, {url}));
  farm::submit(options_, job_json("other-key", bn254_.id, {"redis://other:wtns"}));
  farm::submit(options_, job_json("inside", bn254_.id, {"file://" + witness_file("bn128_mul.wtns")}));

  // The same answer, reference aside, for every path it may not read,
  // whether or not it exists.
  std::set<std::string> answers;
  for (const auto& [id, url] : refused) {
    farm::JobStatus s = wait_job(id, std::chrono::seconds(15));
    EXPECT_EQ(s.state, "failed") << id;
    EXPECT_EQ(s.error_code, "witnessUnavailable") << id << ": " << s.error;
    EXPECT_NE(s.error.find("under the witness roots (" + dir + ")"), std::string::npos) << id << ": " << s.error;
    EXPECT_EQ(s.error.find("found"), std::string::npos) << id << ": " << s.error;
    std::string answer = s.error;
    const std::string reference = url;
    if (auto at = answer.find(reference); at != std::string::npos) answer.replace(at, reference.size(), "REF");
    answers.insert(answer);
  }
  EXPECT_EQ(answers.size(), 1u) << [&] {
    std::string all;
    for (const auto& a : answers) all += a + "\n";
    return all;
  }();
  farm::JobStatus other = wait_job("other-key", std::chrono::seconds(15));
  EXPECT_EQ(other.state, "failed");
  EXPECT_NE(other.error.find("not a key of this farm"), std::string::npos) << other.error;
  EXPECT_EQ(wait_job("inside", std::chrono::seconds(20)).state, "done");
  expect_result_verifies("inside", 1);
}

// --witness-root narrows the default; the worker applies its own roots and
// key prefix too (a coordinator is not the only line of defence).
TEST_F(FarmTest, ConfiguredWitnessRootsBindTheCoordinatorAndTheWorkers) {
  const std::string roots = dir_->file("witnesses");
  std::filesystem::create_directories(roots);
  std::filesystem::copy_file(runfile("formats/testdata/bn128_mul.wtns"), roots + "/p.wtns");
  const std::string outside = "file://" + witness_file("bn128_mul.wtns");  // in the default root only
  start_coordinator({"--witness-root", roots, "--max-attempts", "1"});
  start_worker("w1");
  farm::submit(options_, job_json("in-root", bn254_.id, {"file://" + roots + "/p.wtns"}));
  farm::submit(options_, job_json("outside-root", bn254_.id, {outside}));
  EXPECT_EQ(wait_job("in-root", std::chrono::seconds(20)).state, "done");
  farm::JobStatus s = wait_job("outside-root", std::chrono::seconds(15));
  EXPECT_EQ(s.state, "failed");
  EXPECT_NE(s.error.find("under the witness roots (" + roots + ")"), std::string::npos) << s.error;

  // The coordinator's roots allow the whole temp dir; the worker's do not.
  coordinator_->signal(SIGTERM);
  ASSERT_TRUE(coordinator_->wait_for(std::chrono::seconds(10)));
  workers_[0]->signal(SIGTERM);
  ASSERT_TRUE(workers_[0]->wait_for(std::chrono::seconds(10)));
  start_coordinator({"--witness-root", dir_->path(), "--max-attempts", "1"});
  start_worker("w2", {"--witness-root", roots, "--prefix", "zkfarm:mine:"});
  RedisClient redis(options_.redis_url);
  redis.command({"SET", "zkfarm:wtns:p", read_file(witness_file("bn128_mul.wtns"))});
  farm::submit(options_, job_json("worker-refuses-file", bn254_.id, {outside}));
  farm::submit(options_, job_json("worker-refuses-key", bn254_.id, {"redis://zkfarm:wtns:p"}));
  s = wait_job("worker-refuses-file", std::chrono::seconds(20));
  EXPECT_EQ(s.state, "failed");
  EXPECT_NE(s.error.find("under the witness roots (" + roots + ")"), std::string::npos) << s.error;
  s = wait_job("worker-refuses-key", std::chrono::seconds(20));
  EXPECT_EQ(s.state, "failed");
  EXPECT_NE(s.error.find("must start with 'zkfarm:mine:'"), std::string::npos) << s.error;

  // A root that is not a directory is a start-up error naming the flag.
  CommandResult bad = run_command({runfile("coordinator/zkfarm-coordinator"), "--redis", options_.redis_url,
                                   "--artifacts", options_.artifacts, "--witness-root", dir_->file("nope")},
                                  dir_->path(), {}, std::chrono::seconds(30));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--witness-root '" + dir_->file("nope") + "': not an existing directory"),
            std::string::npos)
      << bad.err;
}

}  // namespace
}  // namespace zkfarm::testing
