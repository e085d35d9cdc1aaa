// host_threads.h -- persistent host threads for the concurrent parts of one
// proof.
//
// The device prover runs parts of a proof on host threads of their own:
// the witness MSMs beside H, and for a small key three of them beside the
// fourth (kernels/cuda/groth16_device.h). With std::async every proof
// started and ended four threads; a thread that made CUDA calls tears down
// the CUDA runtime's per-thread state as it ends, and the join of the last
// one fell in the proof's release, where the lanes of a busy device wait
// for each other (kernels/cuda/NOTES.md, run L4). HostThreads keeps its
// threads for the prover's life instead:
//  * run(f) hands f to an idle thread of the object and returns a
//    JoinedFuture of its result (its exception rethrown by get()).
//  * A thread is started whenever run() finds fewer idle threads than
//    queued tasks, so no task ever waits for a busy one: a task that waits
//    for tasks it started itself cannot deadlock, and the object grows to
//    the most tasks in flight at once (four for a proof), never shrinking.
//  * A JoinedFuture's destructor waits for its task, as std::async's
//    future does: a task may use the caller's locals by reference.
//  * The destructor lets every queued task run, then joins every thread.
// Plain C++ (no CUDA): tested on any machine (host_threads_test.cc).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace zkfarm {

// A future that waits for its task when it is destroyed or assigned over.
template <class R>
class JoinedFuture {
 public:
  JoinedFuture() = default;
  explicit JoinedFuture(std::future<R> future) : future_(std::move(future)) {}
  JoinedFuture(JoinedFuture&&) noexcept = default;
  JoinedFuture& operator=(JoinedFuture&& other) noexcept {
    if (this != &other) {
      wait_if_valid();
      future_ = std::move(other.future_);
    }
    return *this;
  }
  JoinedFuture(const JoinedFuture&) = delete;
  JoinedFuture& operator=(const JoinedFuture&) = delete;
  ~JoinedFuture() { wait_if_valid(); }

  bool valid() const { return future_.valid(); }
  void wait() const { future_.wait(); }
  R get() { return future_.get(); }

 private:
  void wait_if_valid() const {
    if (future_.valid()) future_.wait();
  }
  std::future<R> future_;
};

class HostThreads {
 public:
  HostThreads() = default;
  ~HostThreads() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  HostThreads(const HostThreads&) = delete;
  HostThreads& operator=(const HostThreads&) = delete;

  // Runs f() on one of this object's threads. Throws std::system_error if
  // a thread was needed and could not be started (f then never runs).
  template <class F>
  JoinedFuture<std::invoke_result_t<F&>> run(F f) {
    using R = std::invoke_result_t<F&>;
    auto promise = std::make_shared<std::promise<R>>();
    std::future<R> future = promise->get_future();
    // The job runs f and returns how to publish its outcome; serve() marks
    // its thread free before publishing, so a caller that runs the next
    // task as soon as this one's future is ready finds the thread free.
    Job job = [promise, f = std::move(f)]() mutable -> std::function<void()> {
      try {
        if constexpr (std::is_void_v<R>) {
          f();
          return [promise] { promise->set_value(); };
        } else {
          auto value = std::make_shared<R>(f());
          return [promise, value] { promise->set_value(std::move(*value)); };
        }
      } catch (...) {
        return [promise, error = std::current_exception()] { promise->set_exception(error); };
      }
    };
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (threads_.size() - busy_ <= jobs_.size()) threads_.emplace_back([this] { serve(); });  // may throw: before the push
      jobs_.push_back(std::move(job));
    }
    wake_.notify_one();
    return JoinedFuture<R>(std::move(future));
  }

  // Threads started so far (the most tasks that were in flight at once).
  std::size_t threads() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return threads_.size();
  }

 private:
  using Job = std::function<std::function<void()>()>;

  void serve() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return !jobs_.empty() || stopping_; });
      if (jobs_.empty()) return;  // stopping, nothing left to run
      Job job = std::move(jobs_.front());
      jobs_.pop_front();
      ++busy_;
      lock.unlock();
      std::function<void()> publish = job();  // never throws: f's exception is in publish
      lock.lock();
      --busy_;
      lock.unlock();
      publish();
      lock.lock();
    }
  }

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> jobs_;
  std::vector<std::thread> threads_;
  std::size_t busy_ = 0;  // threads running a job (the rest are free)
  bool stopping_ = false;
};

}  // namespace zkfarm
