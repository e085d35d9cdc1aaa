// scheduling_test.cc -- the order in which the coordinator hands out
// partitions: round-robin between jobs of one priority (a small job is not
// stuck behind a big one), earlier deadline first within a priority, and
// priority above both.
//
// Jobs are queued and taken in by the coordinator before the only worker
// (one slot) joins, so the worker's log of received tasks is exactly the
// dispatch order.
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/cluster/farm_fixture.h"

namespace zkfarm::testing {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

// "job partition" for each "task N received: job J partition P" line.
std::vector<std::string> received_order(const std::string& log) {
  std::vector<std::string> out;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    const auto at = line.find(" received: job ");
    if (at == std::string::npos) continue;
    std::istringstream rest(line.substr(at + 15));
    std::string job, word, partition;
    rest >> job >> word >> partition;
    out.push_back(job + " " + partition);
  }
  return out;
}

std::string job_with(const std::string& id, const std::string& circuit, std::size_t partitions,
                     const std::string& witness, const std::string& priority, std::optional<double> deadline) {
  json j = {{"id", id}, {"circuit", circuit}, {"priority", priority}, {"partitions", json::array()}};
  for (std::size_t i = 0; i < partitions; ++i) j["partitions"].push_back(witness);
  if (deadline) j["deadline"] = *deadline;
  return j.dump();
}

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

class SchedulingTest : public FarmTest {
 protected:
  // Submits the jobs, waits until the coordinator runs all of them, then
  // starts one single-slot worker and returns its dispatch order once every
  // job is done.
  std::vector<std::string> dispatch_order(const std::vector<std::string>& jobs, const std::vector<std::string>& ids,
                                          std::size_t tasks) {
    start_coordinator();
    for (const auto& j : jobs) farm::submit(options_, j);
    EXPECT_TRUE(eventually(
        [&] {
          for (const auto& id : ids)
            if (farm::status(options_, id)->state != "running") return false;
          return true;
        },
        30s))
        << logs();
    const std::size_t w = start_worker("only", {"--slots", "1", "--prove-delay-ms", "50"});
    for (const auto& id : ids) EXPECT_EQ(wait_job(id, 120s).state, "done") << id << logs();
    auto order = received_order(workers_[w]->log());
    EXPECT_EQ(order.size(), tasks) << workers_[w]->log();
    return order;
  }
};

TEST_F(SchedulingTest, JobsOfOnePriorityShareWorkersRoundRobin) {
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  auto order = dispatch_order({job_with("big", bn254_.id, 6, w, "normal", std::nullopt),
                               job_with("small", bn254_.id, 2, w, "normal", std::nullopt)},
                              {"big", "small"}, 8);
  const std::vector<std::string> expected = {"big 0", "small 0", "big 1", "small 1",
                                             "big 2", "big 3",   "big 4", "big 5"};
  EXPECT_EQ(order, expected);
}

TEST_F(SchedulingTest, EarlierDeadlineFirstWithinAPriorityAndPriorityAboveDeadline) {
  const std::string w = "file://" + witness_file("bn128_mul.wtns");
  const double now = now_unix();
  auto order = dispatch_order({job_with("none", bn254_.id, 2, w, "normal", std::nullopt),
                               job_with("late", bn254_.id, 2, w, "normal", now + 900),
                               job_with("low-urgent", bn254_.id, 1, w, "low", now + 300),
                               job_with("early", bn254_.id, 2, w, "normal", now + 600),
                               job_with("high", bn254_.id, 1, w, "high", std::nullopt)},
                              {"none", "late", "low-urgent", "early", "high"}, 8);
  const std::vector<std::string> expected = {"high 0", "early 0", "early 1", "late 0",
                                             "late 1", "none 0",  "none 1",  "low-urgent 0"};
  EXPECT_EQ(order, expected);
}

}  // namespace
}  // namespace zkfarm::testing
