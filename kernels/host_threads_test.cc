// host_threads_test.cc -- HostThreads: results and errors come back, threads
// are kept and reused, a task may wait for tasks it started, and a dropped
// future still waits for its task.
#include "kernels/host_threads.h"

#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace zkfarm {
namespace {

TEST(HostThreads, ReturnsResultsAndRethrowsErrors) {
  HostThreads threads;
  JoinedFuture<int> sum = threads.run([] { return 20 + 22; });
  EXPECT_EQ(sum.get(), 42);
  JoinedFuture<int> failing = threads.run([]() -> int { throw std::runtime_error("task failed"); });
  EXPECT_THROW(
      {
        try {
          failing.get();
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "task failed");
          throw;
        }
      },
      std::runtime_error);
  // The thread that ran the failing task serves the next one.
  EXPECT_EQ(threads.run([] { return 7; }).get(), 7);
  EXPECT_EQ(threads.threads(), 1u);
}

TEST(HostThreads, KeepsItsThreadsAcrossTasks) {
  HostThreads threads;
  std::set<std::thread::id> ids;
  for (int i = 0; i < 200; ++i) ids.insert(threads.run([] { return std::this_thread::get_id(); }).get());
  EXPECT_EQ(ids.size(), 1u) << "each task should reuse the one idle thread, not start its own";
  EXPECT_NE(*ids.begin(), std::this_thread::get_id());
  EXPECT_EQ(threads.threads(), 1u);
}

// The prover's shape: one task (the witness MSMs) starts three more and
// waits for them. With fewer threads than tasks in flight a queue would
// deadlock here; HostThreads starts a thread instead, up to four.
TEST(HostThreads, ATaskMayWaitForTasksItStarted) {
  HostThreads threads;
  for (int proof = 0; proof < 100; ++proof) {
    JoinedFuture<int> outer = threads.run([&threads, proof] {
      std::vector<JoinedFuture<int>> inner;
      for (int q = 0; q < 3; ++q) inner.push_back(threads.run([proof, q] { return proof * 10 + q; }));
      int total = 0;
      for (auto& f : inner) total += f.get();
      return total;
    });
    ASSERT_EQ(outer.get(), proof * 30 + 3);
  }
  EXPECT_LE(threads.threads(), 4u);
  EXPECT_GE(threads.threads(), 2u);
}

TEST(HostThreads, ManyTasksAtOnceEachGetAThread) {
  HostThreads threads;
  std::atomic<int> waiting{0};
  std::atomic<bool> release{false};
  std::vector<JoinedFuture<void>> running;
  for (int i = 0; i < 8; ++i)
    running.push_back(threads.run([&] {
      ++waiting;
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }));
  // All eight run at once (none queued behind a busy thread).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (waiting < 8 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(waiting.load(), 8);
  release = true;
  for (auto& f : running) f.get();
  EXPECT_EQ(threads.threads(), 8u);
}

TEST(HostThreads, ADroppedFutureWaitsForItsTask) {
  HostThreads threads;
  std::atomic<bool> done{false};
  {
    JoinedFuture<void> f = threads.run([&done] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      done = true;
    });
  }  // destroyed without get(): must have waited (the task uses `done` by reference)
  EXPECT_TRUE(done.load());
  std::atomic<bool> first{false};
  JoinedFuture<void> f = threads.run([&first] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    first = true;
  });
  f = threads.run([] {});  // assigned over: waits for the first task too
  EXPECT_TRUE(first.load());
}

TEST(HostThreads, DestructionRunsEveryTaskAndJoins) {
  std::atomic<int> ran{0};
  {
    HostThreads threads;
    std::vector<JoinedFuture<void>> futures;
    for (int i = 0; i < 16; ++i) futures.push_back(threads.run([&ran] { ++ran; }));
    futures.clear();
  }
  EXPECT_EQ(ran.load(), 16);
}

}  // namespace
}  // namespace zkfarm
