// verifier_pool.h -- the coordinator's proof verification: a pool of threads
// (--verify-threads), each with its own PartitionVerifier, checking the
// proofs the scheduler thread accepted from workers.
//
// Work sharing: requests queue in one FIFO. A thread that wakes takes its
// share of what is queued, ceil(queued / threads), but at least min_share
// (coordinator::kVerifyMinShare) or all there is: an idle farm verifies each
// proof as it comes (lowest latency), a short queue goes to one thread as one
// batch (a proof costs three times more alone than in a batch of 16), and a
// backlog is split so every thread verifies a batch of its own. (Dividing by
// the threads, not by those idle at that moment: a thread that is free first
// would otherwise take the whole backlog and leave the others none.) With one thread
// a wake takes the whole queue, as the coordinator's single verifier thread
// did. Within what it took, a thread makes one PartitionVerifier::verify()
// call per curve, and that call checks the proofs of each circuit as one
// randomized batch (groth16_verify_batch: k + 3 Miller loops instead of 4k
// pairings), one by one only when the batch fails, to find the bad ones. So
// batching is per circuit, as before, but a backlog of B proofs makes T
// batches of about B / T instead of one of B: a batch costs 3 Miller loops
// more than it would in one piece, little beside k subgroup checks.
//
// Threading and ownership: push() from any thread. on_done and on_batch run
// on the pool's threads (several at once): they must be thread-safe (the
// coordinator's on_done pushes into its event Mailbox). stop() (and the
// destructor) wake and join every thread; requests still queued are dropped
// (a stopping coordinator's running jobs resume on restart, and a dropped
// result is proved again). The threads are named zkfarm-verify (top -H, and
// bench/load_driver's CPU per thread). A PartitionVerifier caches verifying keys, so each
// thread reads a circuit's vk.json once.
#pragma once

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cluster/artifacts.h"
#include "cluster/groth16_glue.h"
#include "cluster/log.h"
#include "coordinator/constants.h"
#include "formats/curve_id.h"

namespace zkfarm {

// Request: any movable type with a member `PartitionVerifier::Item item`
// (the coordinator's carries the accepted result it answers).
template <class Request>
class VerifierPool {
 public:
  // One verified request and its outcome (outcome.valid, or why not).
  using OnDone = std::function<void(Request&& request, PartitionVerifier::Outcome&& outcome)>;
  // After each verify() call: its curve, how many proofs it checked, and the
  // seconds it took (zkfarm_verify_duration_seconds{curve}).
  using OnBatch = std::function<void(CurveId curve, std::size_t proofs, double seconds)>;

  // Throws std::invalid_argument for threads == 0 or min_share == 0. The
  // threads start at start(), so a caller may queue work first.
  VerifierPool(ArtifactStore store, unsigned threads, OnDone on_done, OnBatch on_batch = {},
               std::size_t min_share = coordinator::kVerifyMinShare)
      : store_(std::move(store)), thread_count_(threads), min_share_(min_share), on_done_(std::move(on_done)),
        on_batch_(std::move(on_batch)) {
    if (threads == 0) throw std::invalid_argument("the verifier pool needs at least one thread");
    if (min_share == 0) throw std::invalid_argument("the verifier pool's least share must be at least one proof");
    if (!on_done_) throw std::invalid_argument("the verifier pool needs an on_done callback");
  }
  ~VerifierPool() { stop(); }
  VerifierPool(const VerifierPool&) = delete;
  VerifierPool& operator=(const VerifierPool&) = delete;

  // Starts the threads (once; later calls do nothing).
  void start() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!threads_.empty() || stopping_) return;
    for (unsigned i = 0; i < thread_count_; ++i) threads_.emplace_back([this] { thread_main(); });
  }

  // Queues a request. Thread-safe.
  void push(Request request) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(request));
    }
    ready_.notify_one();
  }

  // Wakes and joins every thread; what is still queued is dropped. Idempotent.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }

  unsigned threads() const { return thread_count_; }

 private:
  // Waits for work; returns this thread's share (empty once stopping).
  std::vector<Request> take() {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    std::vector<Request> share;
    if (stopping_) return share;
    const std::size_t n =
        std::min(queue_.size(), std::max((queue_.size() + thread_count_ - 1) / thread_count_, min_share_));
    share.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      share.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    // More left for the others: wake one (a push's notify may have gone to
    // this thread, or to one that took everything it saw).
    if (!queue_.empty()) ready_.notify_one();
    return share;
  }

  void thread_main() {
    // Named for top -H and /proc/<pid>/task/*/comm (at most 15 characters).
    pthread_setname_np(pthread_self(), "zkfarm-verify");
    PartitionVerifier verifier(store_);
    for (;;) {
      std::vector<Request> batch = take();
      if (batch.empty()) return;
      // One verify() call per curve, so zkfarm_verify_duration_seconds{curve}
      // times one curve's work (the verifier batches per circuit inside it).
      std::map<CurveId, std::vector<std::size_t>> by_curve;
      for (std::size_t i = 0; i < batch.size(); ++i) by_curve[batch[i].item.circuit.curve].push_back(i);
      std::vector<PartitionVerifier::Outcome> outcomes(batch.size());
      for (const auto& [curve, indices] : by_curve) {
        std::vector<PartitionVerifier::Item> items;
        items.reserve(indices.size());
        for (std::size_t i : indices) items.push_back(batch[i].item);
        std::vector<PartitionVerifier::Outcome> curve_outcomes;
        const auto started = std::chrono::steady_clock::now();
        try {
          curve_outcomes = verifier.verify(items);
        } catch (const std::exception& e) {
          // The verifying key itself is unusable: nothing can be accepted.
          ZKLOG(kError) << "verification impossible: " << e.what();
          curve_outcomes.assign(items.size(), PartitionVerifier::Outcome{});
          for (auto& o : curve_outcomes) o.reason = std::string("verifier: ") + e.what();
        }
        if (on_batch_)
          on_batch_(curve, items.size(),
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
        for (std::size_t k = 0; k < indices.size(); ++k) outcomes[indices[k]] = std::move(curve_outcomes[k]);
      }
      for (std::size_t i = 0; i < batch.size(); ++i) on_done_(std::move(batch[i]), std::move(outcomes[i]));
    }
  }

  const ArtifactStore store_;
  const unsigned thread_count_;
  const std::size_t min_share_;
  const OnDone on_done_;
  const OnBatch on_batch_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Request> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace zkfarm
