// witness_reads.cc -- see witness_reads.h.
#include "coordinator/witness_reads.h"

#include <algorithm>

#include "cluster/redis_client.h"
#include "cluster/witness_access.h"

namespace zkfarm {

WitnessReads::WitnessReads(std::shared_ptr<const JobSpec> spec, Options options, std::function<void()> on_change)
    : spec_(std::move(spec)), options_(std::move(options)), on_change_(std::move(on_change)) {
  results_.resize(spec_->partitions.size());
  for (std::size_t i = 0; i < spec_->partitions.size(); ++i)
    if (spec_->partitions[i].kind != WitnessRef::Kind::kInput) to_read_.push_back(i);
  const std::size_t readers = std::min(std::max<std::size_t>(options_.readers, 1), to_read_.size());
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    for (std::size_t k = 0; k < readers; ++k) {
      threads_.emplace_back([this] { reader_main(); });
      ++running_;
    }
  } catch (...) {
    stopped_ = true;
    if (threads_.empty()) throw;  // the destructor is not run: nothing to join
    // The threads started read on; one short of a full set is still correct.
  }
}

WitnessReads::~WitnessReads() {
  stop();
  for (auto& thread : threads_) thread.join();
}

void WitnessReads::stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopped_ = true;
}

bool WitnessReads::settled() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_flight_ == 0 && (stopped_ || next_ == to_read_.size());
}

bool WitnessReads::idle() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return running_ == 0;
}

std::optional<WitnessRead> WitnessReads::result(std::size_t partition) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return partition < results_.size() ? results_[partition] : std::nullopt;
}

std::string WitnessReads::redis_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return redis_error_;
}

void WitnessReads::reader_main() {
  std::unique_ptr<RedisClient> redis;  // this thread's, made on its first redis:// witness
  for (;;) {
    std::size_t partition = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopped_ || next_ == to_read_.size()) break;
      partition = to_read_[next_++];
      ++in_flight_;
    }
    std::optional<WitnessRead> read;
    std::string redis_error;
    try {
      read = read_one(spec_->partitions[partition], redis);
    } catch (const RedisError& e) {
      redis_error = e.what();
    }
    bool settled = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --in_flight_;
      if (read) {
        if (std::holds_alternative<JobCheckFailure>(*read)) stopped_ = true;  // the job fails anyway
        results_[partition] = std::move(read);
      } else {
        stopped_ = true;
        if (redis_error_.empty()) redis_error_ = redis_error;
      }
      settled = in_flight_ == 0 && (stopped_ || next_ == to_read_.size());
    }
    if (settled) on_change_();
  }
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last = --running_ == 0;
  }
  if (last) on_change_();
}

WitnessRead WitnessReads::read_one(const WitnessRef& ref, std::unique_ptr<RedisClient>& redis) {
  // An HTTP read may take the time left to the deadline and one second
  // more (whole seconds: what HttpLimits counts in); the intake gives up at
  // the deadline itself, so its error is the one a job gets, and this only
  // ends the transfer (without the second, curl's own timeout could end the
  // read first under load and name itself instead).
  WitnessPolicy policy = options_.policy;
  const auto left = std::chrono::ceil<std::chrono::seconds>(options_.deadline - Clock::now()) + std::chrono::seconds(1);
  policy.http.timeout = std::max(std::chrono::seconds(1), std::min(left, policy.http.timeout));
  policy.http.connect_timeout = std::min(policy.http.connect_timeout, policy.http.timeout);
  try {
    if (ref.kind == WitnessRef::Kind::kRedis && !redis) redis = std::make_unique<RedisClient>(options_.redis_url);
    return read_witness_summary(ref, redis.get(), policy, options_.num_public, options_.max_bytes, options_.budget);
  } catch (const WitnessTooLarge& e) {
    return JobCheckFailure{ErrorCode::kWitnessLength, e.what()};
  } catch (const WitnessUnavailable& e) {
    return JobCheckFailure{ErrorCode::kWitnessUnavailable, e.what()};
  } catch (const WitnessChecksum& e) {
    return JobCheckFailure{ErrorCode::kWitnessChecksum, e.what()};
  } catch (const RedisError&) {
    throw;
  } catch (const std::exception& e) {
    return JobCheckFailure{ErrorCode::kBadWitness, e.what()};
  }
}

}  // namespace zkfarm
