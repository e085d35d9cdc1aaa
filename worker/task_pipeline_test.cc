// task_pipeline_test -- the worker's task transitions, with stages that
// record what they are given and wait where the test says: which queue a
// task goes to, which thread does what, how far the preparer runs ahead,
// early answers, cancellation, and what counts as held.
#include "worker/task_pipeline.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "monitoring/metrics/metrics.h"

namespace zkfarm {
namespace {

using namespace std::chrono_literals;

// A gate the stages wait at until the test opens it.
class Gate {
 public:
  explicit Gate(bool open) : open_(open) {}
  void open() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void close() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = false;
  }
  void pass() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_;
};

// What the stages saw, in order.
struct Record {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::uint64_t> generated, prepared, proved;
  std::map<std::uint64_t, std::thread::id> prepare_thread, prove_thread;
  std::map<std::uint64_t, bool> cancelled_when_proved;
  std::map<std::uint64_t, double> witgen_seconds_seen;

  // Waits until pred() holds (under the mutex); false after 10 s.
  template <class Pred>
  bool wait_for(Pred pred) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, 10s, pred);
  }
};

std::string answer_of(const char* stage, std::uint64_t task_id) { return std::string(stage) + ":" + std::to_string(task_id); }

class Harness {
 public:
  // Task ids in fail_generating / fail_preparing are answered by that stage.
  explicit Harness(TaskPipeline::Options options, std::set<std::uint64_t> fail_generating = {},
                   std::set<std::uint64_t> fail_preparing = {})
      : metrics_("test-worker", "cpu", "0"),
        pipeline_(options, stages(std::move(fail_generating), std::move(fail_preparing)), metrics_) {}

  Gate generate_gate{true}, prove_gate{true};
  Record record;
  TaskPipeline& pipeline() { return pipeline_; }

  static QueuedTask task(std::uint64_t task_id, std::size_t session = 0,
                         WitnessRef::Kind kind = WitnessRef::Kind::kFile) {
    QueuedTask task;
    task.session = session;
    task.task_id = task_id;
    task.job_id = "job-" + std::to_string(task_id);
    task.witness.kind = kind;
    return task;
  }

  // Takes answers until n have come (or 10 s passed); returns them.
  std::vector<Finished> answers(std::size_t n) {
    std::vector<Finished> all;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (all.size() < n && std::chrono::steady_clock::now() < deadline) {
      pollfd p{pipeline_.finished_fd(), POLLIN, 0};
      ::poll(&p, 1, 100);
      for (auto& f : pipeline_.take_finished()) all.push_back(std::move(f));
    }
    return all;
  }

 private:
  TaskPipeline::Stages stages(std::set<std::uint64_t> fail_generating, std::set<std::uint64_t> fail_preparing) {
    TaskPipeline::Stages s;
    s.generate_witness = [this, fail_generating](QueuedTask& task, RedisClient*) -> std::optional<Finished> {
      {
        std::lock_guard<std::mutex> lock(record.mutex);
        record.generated.push_back(task.task_id);
      }
      record.changed.notify_all();
      generate_gate.pass();
      if (fail_generating.count(task.task_id)) return Finished{answer_of("refused", task.task_id), task.session, task.task_id};
      task.witgen_seconds = 1.5;  // the mark of a computed witness
      return std::nullopt;
    };
    s.prepare = [this, fail_preparing](QueuedTask task, RedisClient*) -> std::variant<Prepared, Finished> {
      {
        std::lock_guard<std::mutex> lock(record.mutex);
        record.prepared.push_back(task.task_id);
        record.prepare_thread[task.task_id] = std::this_thread::get_id();
        record.witgen_seconds_seen[task.task_id] = task.witgen_seconds;
      }
      record.changed.notify_all();
      if (fail_preparing.count(task.task_id)) return Finished{answer_of("unprepared", task.task_id), task.session, task.task_id};
      Prepared prepared;
      prepared.task = std::move(task);
      return prepared;
    };
    s.prove = [this](const Prepared& prepared) {
      const QueuedTask& task = prepared.task;
      {
        std::lock_guard<std::mutex> lock(record.mutex);
        record.proved.push_back(task.task_id);
        record.prove_thread[task.task_id] = std::this_thread::get_id();
      }
      record.changed.notify_all();
      prove_gate.pass();
      {
        std::lock_guard<std::mutex> lock(record.mutex);
        record.cancelled_when_proved[task.task_id] = task.cancelled->load();
      }
      return Finished{answer_of("proved", task.task_id), task.session, task.task_id};
    };
    return s;
  }

  metrics::WorkerMetrics metrics_;
  TaskPipeline pipeline_;
};

TaskPipeline::Options options(std::uint32_t slots, std::uint32_t prefetch, std::uint32_t witgen_workers = 1) {
  TaskPipeline::Options o;
  o.slots = slots;
  o.prefetch = prefetch;
  o.witgen_workers = witgen_workers;
  return o;
}

TEST(TaskPipeline, RefusesNoSlotsOrAMissingStage) {
  metrics::WorkerMetrics metrics("test-worker", "cpu", "0");
  TaskPipeline::Stages stages;
  EXPECT_THROW(TaskPipeline(options(1, 1), stages, metrics), std::invalid_argument);
  stages.generate_witness = [](QueuedTask&, RedisClient*) { return std::optional<Finished>(); };
  stages.prepare = [](QueuedTask task, RedisClient*) { return std::variant<Prepared, Finished>(Prepared{std::move(task)}); };
  stages.prove = [](const Prepared& p) { return Finished{"", p.task.session, p.task.task_id}; };
  EXPECT_THROW(TaskPipeline(options(0, 1), stages, metrics), std::invalid_argument);
  EXPECT_NO_THROW(TaskPipeline(options(1, 0, 0), stages, metrics));
}

TEST(TaskPipeline, AReferenceIsPreparedAheadThenProvedAndHeldUntilItsAnswerIsTaken) {
  Harness h(options(1, 1));
  h.pipeline().start();
  h.pipeline().submit(Harness::task(7, 2));
  EXPECT_EQ(h.pipeline().held(), 1u);
  ASSERT_TRUE(h.record.wait_for([&] { return h.record.proved.size() == 1; }));
  {
    pollfd p{h.pipeline().finished_fd(), POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 10000), 1);
  }
  EXPECT_EQ(h.pipeline().held(), 1u);  // answered, but not yet taken by the link
  const auto answers = h.answers(1);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].bytes, "proved:7");
  EXPECT_EQ(answers[0].session, 2u);
  EXPECT_EQ(answers[0].task_id, 7u);
  EXPECT_EQ(h.pipeline().held(), 0u);
  EXPECT_TRUE(h.record.generated.empty());  // a reference needs no generator
  // The preparer and the prover are different threads.
  EXPECT_NE(h.record.prepare_thread[7], h.record.prove_thread[7]);
}

TEST(TaskPipeline, WithoutPrefetchTheProverPreparesItsOwnTask) {
  Harness h(options(1, 0));
  h.pipeline().start();
  h.pipeline().submit(Harness::task(1));
  ASSERT_EQ(h.answers(1).size(), 1u);
  EXPECT_EQ(h.record.prepare_thread[1], h.record.prove_thread[1]);
}

TEST(TaskPipeline, ThePreparerRunsAtMostPrefetchTasksAhead) {
  Harness h(options(1, 1));
  h.prove_gate.close();
  h.pipeline().start();
  for (std::uint64_t id = 1; id <= 4; ++id) h.pipeline().submit(Harness::task(id));
  // Task 1 is proving; task 2 is prepared and waits for the prover.
  ASSERT_TRUE(h.record.wait_for([&] { return h.record.proved.size() == 1 && h.record.prepared.size() == 2; }));
  std::this_thread::sleep_for(200ms);
  {
    std::lock_guard<std::mutex> lock(h.record.mutex);
    EXPECT_EQ(h.record.prepared, (std::vector<std::uint64_t>{1, 2}));  // 3 and 4 wait unprepared
  }
  EXPECT_EQ(h.pipeline().held(), 4u);
  h.prove_gate.open();
  const auto answers = h.answers(4);
  ASSERT_EQ(answers.size(), 4u);
  for (std::uint64_t id = 1; id <= 4; ++id) EXPECT_EQ(answers[id - 1].bytes, answer_of("proved", id));
  EXPECT_EQ(h.pipeline().held(), 0u);
}

TEST(TaskPipeline, AnInputPartitionGoesThroughTheGeneratorFirst) {
  Harness h(options(1, 1));
  h.generate_gate.close();
  h.pipeline().start();
  h.pipeline().submit(Harness::task(5, 1, WitnessRef::Kind::kInput));
  h.pipeline().submit(Harness::task(6, 1, WitnessRef::Kind::kInput));
  h.pipeline().submit(Harness::task(9, 0, WitnessRef::Kind::kInput));
  // One generator thread: 5 runs, 6 and 9 wait; all are pending a witness.
  ASSERT_TRUE(h.record.wait_for([&] { return h.record.generated.size() == 1; }));
  auto pending = h.pipeline().witness_pending(1);
  std::sort(pending.begin(), pending.end());
  EXPECT_EQ(pending, (std::vector<std::uint64_t>{5, 6}));
  EXPECT_EQ(h.pipeline().witness_pending(0), std::vector<std::uint64_t>{9});
  EXPECT_TRUE(h.record.prepared.empty());
  h.generate_gate.open();
  const auto answers = h.answers(3);
  ASSERT_EQ(answers.size(), 3u);
  EXPECT_TRUE(h.pipeline().witness_pending(1).empty());
  EXPECT_TRUE(h.pipeline().witness_pending(0).empty());
  // Each reached the preparer with the witness the generator computed.
  for (std::uint64_t id : {5, 6, 9}) EXPECT_EQ(h.record.witgen_seconds_seen[id], 1.5) << id;
}

TEST(TaskPipeline, ARefusedInputIsAnsweredAndNeverPrepared) {
  Harness h(options(1, 1), /*fail_generating=*/{3});
  h.pipeline().start();
  h.pipeline().submit(Harness::task(3, 0, WitnessRef::Kind::kInput));
  h.pipeline().submit(Harness::task(4, 0, WitnessRef::Kind::kInput));
  auto answers = h.answers(2);
  ASSERT_EQ(answers.size(), 2u);
  std::set<std::string> bytes;
  for (const auto& a : answers) bytes.insert(a.bytes);
  EXPECT_EQ(bytes, (std::set<std::string>{"refused:3", "proved:4"}));
  EXPECT_EQ(h.record.prepared, std::vector<std::uint64_t>{4});
  EXPECT_EQ(h.pipeline().held(), 0u);
}

TEST(TaskPipeline, ATaskThatCannotBePreparedIsAnsweredAndNeverProved) {
  for (std::uint32_t prefetch : {0u, 1u}) {
    Harness h(options(1, prefetch), {}, /*fail_preparing=*/{2});
    h.pipeline().start();
    h.pipeline().submit(Harness::task(2));
    h.pipeline().submit(Harness::task(3));
    const auto answers = h.answers(2);
    ASSERT_EQ(answers.size(), 2u) << "prefetch " << prefetch;
    EXPECT_EQ(answers[0].bytes, "unprepared:2");
    EXPECT_EQ(answers[1].bytes, "proved:3");
    EXPECT_EQ(h.record.proved, std::vector<std::uint64_t>{3});
  }
}

// Progress (the coordinator's witness and task timeouts start there): the
// witness fetch as it begins, the ready witness, the proof as a prover takes
// it; a task its preparation answered never reaches proving; with and
// without a preparer, and for an input partition from its generator on.
TEST(TaskPipeline, ATasksProgressIsReportedAsItHappens) {
  using Stage = TaskPipeline::Progress::Stage;
  for (std::uint32_t prefetch : {0u, 1u}) {
    Harness h(options(1, prefetch), {}, /*fail_preparing=*/{2});
    h.prove_gate.close();
    h.pipeline().start();
    h.pipeline().submit(Harness::task(1, 3));
    ASSERT_TRUE(h.record.wait_for([&] { return h.record.proved.size() == 1; }));
    std::vector<TaskPipeline::Progress> expected = {{{3, 1}, Stage::kWitness}};
    if (prefetch > 0) expected.push_back({{3, 1}, Stage::kReady});
    expected.push_back({{3, 1}, Stage::kProving});
    {
      pollfd p{h.pipeline().progress_fd(), POLLIN, 0};
      ASSERT_EQ(::poll(&p, 1, 10000), 1) << "prefetch " << prefetch;
    }
    EXPECT_EQ(h.pipeline().take_progress(), expected) << "prefetch " << prefetch;
    h.pipeline().submit(Harness::task(2, 3));  // fails in prepare: never ready, never proving
    h.prove_gate.open();
    ASSERT_EQ(h.answers(2).size(), 2u);
    EXPECT_EQ(h.pipeline().take_progress(), (std::vector<TaskPipeline::Progress>{{{3, 2}, Stage::kWitness}}))
        << "prefetch " << prefetch;
  }
  Harness h(options(1, 1));
  h.pipeline().start();
  h.pipeline().submit(Harness::task(5, 0, WitnessRef::Kind::kInput));
  ASSERT_EQ(h.answers(1).size(), 1u);
  const auto progress = h.pipeline().take_progress();
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.front(), (TaskPipeline::Progress{{0, 5}, Stage::kWitness})) << "from the generator on";
  EXPECT_EQ(progress.back(), (TaskPipeline::Progress{{0, 5}, Stage::kProving}));
}

TEST(TaskPipeline, CancelReachesAHeldTaskOnly) {
  Harness h(options(1, 1));
  h.prove_gate.close();
  h.pipeline().start();
  h.pipeline().submit(Harness::task(8, 1));
  ASSERT_TRUE(h.record.wait_for([&] { return h.record.proved.size() == 1; }));
  EXPECT_FALSE(h.pipeline().cancel({0, 8}));  // the same id from another coordinator is another task
  EXPECT_FALSE(h.pipeline().cancel({1, 99}));
  EXPECT_TRUE(h.pipeline().cancel({1, 8}));
  h.prove_gate.open();
  ASSERT_EQ(h.answers(1).size(), 1u);
  EXPECT_TRUE(h.record.cancelled_when_proved[8]);  // the prover saw it during its work
  EXPECT_FALSE(h.pipeline().cancel({1, 8}));       // answered: no longer held
}

TEST(TaskPipeline, SeveralSlotsProveAtOnce) {
  Harness h(options(2, 1));
  h.prove_gate.close();
  h.pipeline().start();
  for (std::uint64_t id = 1; id <= 3; ++id) h.pipeline().submit(Harness::task(id));
  ASSERT_TRUE(h.record.wait_for([&] { return h.record.proved.size() == 2; }));
  h.prove_gate.open();
  EXPECT_EQ(h.answers(3).size(), 3u);
}

TEST(TaskPipeline, StopsWithTasksStillQueued) {
  // The destructor returns while tasks wait: the threads between tasks end.
  Harness h(options(1, 1));
  h.prove_gate.close();
  h.pipeline().start();
  for (std::uint64_t id = 1; id <= 3; ++id) h.pipeline().submit(Harness::task(id));
  ASSERT_TRUE(h.record.wait_for([&] { return h.record.proved.size() == 1; }));
  h.prove_gate.open();
}

}  // namespace
}  // namespace zkfarm
