// task_pipeline.cc -- see task_pipeline.h.
#include "worker/task_pipeline.h"

#include <stdexcept>

namespace zkfarm {

TaskPipeline::TaskPipeline(Options options, Stages stages, metrics::WorkerMetrics& metrics)
    : options_(std::move(options)), stages_(std::move(stages)), metrics_(metrics) {
  if (options_.slots == 0) throw std::invalid_argument("task pipeline: 0 prover slots");
  if (!stages_.generate_witness || !stages_.prepare || !stages_.prove)
    throw std::invalid_argument("task pipeline: a stage is missing");
}

TaskPipeline::~TaskPipeline() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  ready_cv_.notify_all();
  witgen_cv_.notify_all();
  for (auto& thread : threads_)
    if (thread.joinable()) thread.join();
}

void TaskPipeline::start() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (started_) return;
  started_ = true;
  for (std::uint32_t i = 0; i < options_.slots; ++i) threads_.emplace_back([this] { prover_main(); });
  if (options_.prefetch > 0) threads_.emplace_back([this] { prepare_main(); });
  for (std::uint32_t i = 0; i < options_.witgen_workers; ++i) threads_.emplace_back([this] { witgen_main(); });
}

std::unique_ptr<RedisClient> TaskPipeline::connect() const {
  if (options_.redis_url.empty()) return nullptr;
  return std::make_unique<RedisClient>(options_.redis_url);
}

void TaskPipeline::enqueue_for_prepare(QueuedTask task) {
  queue_.push_back(std::move(task));
  queue_cv_.notify_all();
}

void TaskPipeline::submit(QueuedTask task) {
  std::lock_guard<std::mutex> lock(mutex_);
  held_[task.key()] = task.cancelled;
  if (task.witness.kind == WitnessRef::Kind::kInput) {
    // The witness generator pool first, then a prover.
    witgen_queue_.push_back(std::move(task));
    metrics_.witgen_queue_depth().Set(static_cast<double>(witgen_queue_.size()));
    witgen_cv_.notify_one();
  } else {
    enqueue_for_prepare(std::move(task));
  }
}

bool TaskPipeline::cancel(TaskKey key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = held_.find(key);
  if (it == held_.end()) return false;
  it->second->store(true);
  return true;
}

std::size_t TaskPipeline::held() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return held_.size();
}

std::vector<std::uint64_t> TaskPipeline::witness_pending(std::size_t session) const {
  std::vector<std::uint64_t> pending;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& task : witgen_queue_)
    if (task.session == session) pending.push_back(task.task_id);
  for (const auto& [index, task_id] : witgen_active_)
    if (index == session) pending.push_back(task_id);
  return pending;
}

std::vector<TaskPipeline::Progress> TaskPipeline::take_progress() {
  std::deque<Progress> drained = progress_.drain();
  return std::vector<Progress>(drained.begin(), drained.end());
}

std::vector<Finished> TaskPipeline::take_finished() {
  std::deque<Finished> drained = finished_.drain();
  std::vector<Finished> out(std::make_move_iterator(drained.begin()), std::make_move_iterator(drained.end()));
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Finished& f : out) held_.erase({f.session, f.task_id});
  return out;
}

void TaskPipeline::witgen_main() {
  std::unique_ptr<RedisClient> redis = connect();
  for (;;) {
    QueuedTask task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      witgen_cv_.wait(lock, [&] { return stopping_ || !witgen_queue_.empty(); });
      if (stopping_) return;
      task = std::move(witgen_queue_.front());
      witgen_queue_.pop_front();
      ++witgen_running_;
      witgen_active_.insert(task.key());
      metrics_.witgen_queue_depth().Set(static_cast<double>(witgen_queue_.size()));
      metrics_.witgen_busy(witgen_running_);
    }
    progress_.push({task.key(), Progress::Stage::kWitness});
    std::optional<Finished> failed = stages_.generate_witness(task, redis.get());
    std::lock_guard<std::mutex> lock(mutex_);
    --witgen_running_;
    witgen_active_.erase(task.key());
    metrics_.witgen_busy(witgen_running_);
    if (failed) {
      finished_.push(std::move(*failed));
    } else {
      enqueue_for_prepare(std::move(task));
    }
  }
}

void TaskPipeline::prover_main() {
  std::unique_ptr<RedisClient> redis = connect();
  for (;;) {
    if (options_.prefetch == 0) {
      QueuedTask task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (stopping_) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      progress_.push({task.key(), Progress::Stage::kWitness});
      auto prepared = stages_.prepare(std::move(task), redis.get());
      if (auto* failed = std::get_if<Finished>(&prepared)) {
        finished_.push(std::move(*failed));
      } else {
        progress_.push({std::get<Prepared>(prepared).task.key(), Progress::Stage::kProving});
        finished_.push(stages_.prove(std::get<Prepared>(prepared)));
      }
      continue;
    }
    // Prefetching: the preparer has fetched and parsed the witness.
    Prepared prepared;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_cv_.wait(lock, [&] { return stopping_ || !ready_.empty(); });
      if (stopping_) return;
      prepared = std::move(ready_.front());
      ready_.pop_front();
    }
    queue_cv_.notify_all();  // room for the preparer
    progress_.push({prepared.task.key(), Progress::Stage::kProving});
    finished_.push(stages_.prove(prepared));
  }
}

void TaskPipeline::prepare_main() {
  std::unique_ptr<RedisClient> redis = connect();
  for (;;) {
    QueuedTask task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      queue_cv_.wait(lock, [&] { return stopping_ || (!queue_.empty() && ready_.size() < options_.prefetch); });
      if (stopping_) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    progress_.push({task.key(), Progress::Stage::kWitness});
    auto prepared = stages_.prepare(std::move(task), redis.get());
    if (auto* failed = std::get_if<Finished>(&prepared)) {
      finished_.push(std::move(*failed));
      continue;
    }
    progress_.push({std::get<Prepared>(prepared).task.key(), Progress::Stage::kReady});
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ready_.push_back(std::move(std::get<Prepared>(prepared)));
    }
    ready_cv_.notify_one();
  }
}

}  // namespace zkfarm
