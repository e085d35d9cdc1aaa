// parallel.h -- a persistent process-wide thread pool and parallel_for.
//
// Every CPU kernel (NTT, MSM, fixed-base setup) splits its work with
// parallel_for(n, body): [0, n) is cut into contiguous chunks that the calling
// thread and the pool's workers pull dynamically from one atomic counter, and
// body(begin, end) runs once per chunk. The call returns only when every chunk
// has finished; the first exception thrown by any chunk is rethrown in the
// caller (remaining unstarted chunks are skipped).
//
// Threading model:
//  * One pool per process, created on first use with ParallelConfig::threads()
//    threads in total (the caller counts as one, so threads()-1 workers).
//    ZKFARM_THREADS is read once, at that moment; later changes are ignored.
//  * Workers are joined by the pool's destructor (static destruction at exit);
//    no thread is ever detached.
//  * Nested calls (a body that itself calls parallel_for) run serially on the
//    calling thread, so nesting cannot deadlock.
//  * Two unrelated threads calling parallel_for at once take turns: the second
//    waits for the first job to finish and then gets the whole pool. Waiting
//    beats running inline because our jobs are big (an inline 2^22 MSM on one
//    core would take several times longer than waiting for the pool).
//
// Cost: waking the pool is one mutex + condition-variable broadcast, ~10-50 us;
// callers should hand it work of at least ~100 us (every kernel here does).
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace zkfarm {

// Tuning knobs of the pool (one place, as STYLE.md asks).
struct ParallelConfig {
  // Upper bound accepted for ZKFARM_THREADS; a larger value is a typo.
  static constexpr std::size_t kMaxThreads = 4096;
  // Default number of chunks per thread for parallel_for when the caller does
  // not choose: 4 chunks per thread keeps the last-finishing thread's idle tail
  // short when chunks take unequal time (NTT blocks, MSM windows) while keeping
  // the per-chunk overhead (one atomic increment) negligible.
  static constexpr std::size_t kChunksPerThread = 4;

  // Returns the pool size to use: ZKFARM_THREADS if set, else
  // std::thread::hardware_concurrency() (1 if unknown). Throws
  // std::invalid_argument if ZKFARM_THREADS is set but not an integer in
  // [1, kMaxThreads].
  static std::size_t threads_from_environment() {
    const char* env = std::getenv("ZKFARM_THREADS");
    if (env == nullptr || *env == '\0') {
      unsigned hw = std::thread::hardware_concurrency();
      return hw == 0 ? 1 : hw;
    }
    char* end = nullptr;
    unsigned long long v = std::strtoull(env, &end, 10);
    if (*end != '\0' || v < 1 || v > kMaxThreads || env[0] == '-')
      throw std::invalid_argument(std::string("ZKFARM_THREADS must be an integer in [1, ") +
                                  std::to_string(kMaxThreads) + "], got \"" + env + "\"");
    return static_cast<std::size_t>(v);
  }
};

class ThreadPool {
 public:
  // Starts threads-1 workers (the caller of parallel_for is the last thread).
  // Throws std::invalid_argument if threads == 0, std::system_error if a
  // thread cannot be started (already-started workers are joined first).
  explicit ThreadPool(std::size_t threads) : threads_(threads) {
    if (threads == 0) throw std::invalid_argument("ThreadPool needs at least one thread");
    workers_.reserve(threads - 1);
    try {
      for (std::size_t i = 0; i + 1 < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
    } catch (...) {
      shutdown();
      throw;
    }
  }
  ~ThreadPool() { shutdown(); }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Total threads that run a job, the caller included.
  std::size_t size() const { return threads_; }

  // The process-wide pool, created on first call. Throws as
  // ParallelConfig::threads_from_environment() does (and then retries on the
  // next call, as function-local statics do).
  static ThreadPool& global() {
    static ThreadPool pool(ParallelConfig::threads_from_environment());
    return pool;
  }

  // Runs body(begin, end) over [0, n) cut into `chunks` contiguous pieces of
  // near-equal size (chunks == 0: size() * kChunksPerThread; always capped at
  // n). Returns when all pieces are done; rethrows the first exception a piece
  // threw. n == 0 returns at once without calling body.
  template <class F>
  void run(std::size_t n, F&& body, std::size_t chunks = 0) {
    if (n == 0) return;
    if (chunks == 0) chunks = threads_ * ParallelConfig::kChunksPerThread;
    chunks = std::min(chunks, n);
    if (chunks == 1 || threads_ == 1 || inside_job()) {
      // Serial path: same chunk boundaries, so results never depend on the
      // thread count (callers may rely on chunk-local state).
      for (std::size_t c = 0; c < chunks; ++c) body(chunk_begin(n, chunks, c), chunk_begin(n, chunks, c + 1));
      return;
    }
    using Body = std::remove_reference_t<F>;
    Job job;
    job.n = n;
    job.chunks = chunks;
    job.ctx = const_cast<void*>(static_cast<const void*>(&body));
    job.invoke = [](void* ctx, std::size_t b, std::size_t e) { (*static_cast<Body*>(ctx))(b, e); };

    std::unique_lock<std::mutex> submit(submit_mutex_);  // one job at a time
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      ++generation_;
    }
    wake_.notify_all();
    inside_job() = true;
    work_on(job);
    inside_job() = false;
    {
      // No new worker may join once job_ is cleared; wait for those inside.
      std::unique_lock<std::mutex> lock(mutex_);
      job_ = nullptr;
      idle_.wait(lock, [this] { return active_ == 0; });
    }
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  struct Job {
    void (*invoke)(void*, std::size_t, std::size_t) = nullptr;
    void* ctx = nullptr;
    std::size_t n = 0;
    std::size_t chunks = 0;
    std::atomic<std::size_t> next{0};
    std::mutex error_mutex;
    std::exception_ptr error;
  };

  static std::size_t chunk_begin(std::size_t n, std::size_t chunks, std::size_t c) {
    return static_cast<std::size_t>((static_cast<unsigned __int128>(n) * c) / chunks);
  }

  // True on pool workers and on a caller while it runs its share of a job.
  static bool& inside_job() {
    thread_local bool inside = false;
    return inside;
  }

  static void work_on(Job& job) {
    for (;;) {
      std::size_t c = job.next.fetch_add(1, std::memory_order_relaxed);
      if (c >= job.chunks) return;
      try {
        job.invoke(job.ctx, chunk_begin(job.n, job.chunks, c), chunk_begin(job.n, job.chunks, c + 1));
      } catch (...) {
        std::lock_guard<std::mutex> lock(job.error_mutex);
        if (!job.error) job.error = std::current_exception();
        job.next.store(job.chunks, std::memory_order_relaxed);  // skip the rest
      }
    }
  }

  void worker_loop() {
    inside_job() = true;
    std::uint64_t seen = 0;
    for (;;) {
      Job* job = nullptr;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || (generation_ != seen && job_ != nullptr); });
        if (stop_) return;
        seen = generation_;
        job = job_;
        ++active_;
      }
      work_on(*job);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (--active_ == 0) idle_.notify_all();
      }
    }
  }

  void shutdown() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_)
      if (t.joinable()) t.join();
    workers_.clear();
  }

  std::size_t threads_;
  std::vector<std::thread> workers_;
  std::mutex submit_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  Job* job_ = nullptr;
  std::uint64_t generation_ = 0;
  std::size_t active_ = 0;
  bool stop_ = false;
};

// Number of threads parallel_for uses (creates the global pool if needed).
inline std::size_t parallel_threads() { return ThreadPool::global().size(); }

// Runs body(begin, end) over [0, n) on the process-wide pool; see
// ThreadPool::run. chunks == 0 picks a default; pass chunks to control the
// granularity (e.g. chunks = n to get exactly one call per index).
// Returns when all work is done; rethrows the first exception of any chunk;
// throws std::invalid_argument if ZKFARM_THREADS is malformed.
template <class F>
void parallel_for(std::size_t n, F&& body, std::size_t chunks = 0) {
  ThreadPool::global().run(n, std::forward<F>(body), chunks);
}

}  // namespace zkfarm
