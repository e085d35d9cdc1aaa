// intake.cc -- see intake.h.
#include "coordinator/intake.h"

#include <cstdlib>
#include <optional>
#include <thread>

#include "cluster/artifacts.h"
#include "cluster/log.h"
#include "coordinator/job_check.h"

namespace zkfarm {

using Clock = std::chrono::steady_clock;

std::uint64_t estimate_held_bytes(const PreparedJob& job) {
  return 2 * std::uint64_t(job.raw.size()) + job.public_inputs.size() +
         job.spec.partitions.size() * coordinator::kHeldBytesPerPartition;
}

Intake::Intake(const CoordinatorConfig& config, std::shared_ptr<metrics::CoordinatorMetrics> metrics,
               std::atomic<std::uint32_t>& active_jobs, std::atomic<std::uint64_t>& held_bytes,
               std::function<void(PreparedJob)> deliver, std::function<void()> stop)
    : config_(config), metrics_(std::move(metrics)), keys_(config.key_prefix),
      witness_policy_(make_witness_policy(config.witness_roots, config.artifacts, config.key_prefix)),
      active_jobs_(active_jobs), held_bytes_(held_bytes), deliver_(std::move(deliver)), stop_(std::move(stop)) {
  witness_policy_.http.ca_file = config.ca_file;
  witness_policy_.http.urls = parse_url_policy(config.witness_url_allow);
  const std::string kAbort = "abort-in-intake=";
  if (config_.inject_fault.rfind(kAbort, 0) == 0) abort_job_ = config_.inject_fault.substr(kAbort.size());
}

bool Intake::room_for_a_job() {
  if (active_jobs_.load() >= config_.max_active_jobs) return false;
  const std::uint64_t held = held_bytes_.load();
  const bool full = held >= config_.memory_budget_bytes;
  if (full != budget_full_) {
    budget_full_ = full;
    ZKLOG(kInfo) << "memory budget " << (full ? "reached" : "has room again") << ": " << active_jobs_.load()
                 << " jobs hold an estimated " << (held >> 20) << " MiB of " << (config_.memory_budget_bytes >> 20)
                 << " MiB" << (full ? "; further jobs wait in Redis" : "");
  }
  return !full;
}

void Intake::run(const std::atomic<bool>& stopping) {
  RedisClient redis(config_.redis_url);
  JobStore store(redis, keys_);
  bool recovered = false;
  std::chrono::milliseconds backoff = coordinator::kRedisRetryFirst;
  // Leases (--takeover-after-ms): renewed every third of their length; a
  // renewal that finds the lease gone means we were silent long enough for
  // another coordinator to take our jobs, so we stop rather than run them
  // twice.
  bool first_lease = true;
  auto next_lease = Clock::now();
  auto next_depth_sample = Clock::now();
  while (!stopping) {
    try {
      if (Clock::now() >= next_depth_sample) {
        sample_queue_depth(redis);
        next_depth_sample = Clock::now() + config_.intake_poll;
      }
      if (config_.takeover_after.count() > 0 && Clock::now() >= next_lease) {
        if (!store.renew_lease(config_.coordinator_id, config_.takeover_after, first_lease)) {
          ZKLOG(kError) << "lease lost (silent for more than " << config_.takeover_after.count()
                        << " ms): another coordinator may own our jobs now; stopping";
          stop_();
          break;
        }
        first_lease = false;
        next_lease = Clock::now() + config_.takeover_after / coordinator::kLeaseRenewalsPerLease;
        for (const auto& dead : store.expired_coordinators(config_.coordinator_id)) {
          const std::size_t moved = store.take_over(dead, config_.coordinator_id);
          if (moved == 0) continue;
          ZKLOG(kWarning) << "took over " << moved << " jobs of coordinator " << dead << " (lease expired)";
          recovered = false;  // resume them below, keeping proved partitions
        }
      }
      if (!recovered) {
        // Everything in our processing list is ours: jobs taken before a
        // crash (or before a lost reply). Already-running ones are deduped
        // by the scheduler.
        redis.command({"SADD", keys_.coordinators_seen(), config_.coordinator_id});  // status page
        auto items = store.processing(config_.coordinator_id);
        if (!items.empty()) ZKLOG(kInfo) << "recovering " << items.size() << " jobs from the processing list";
        for (const auto& raw : items) handle_raw(redis, store, raw);
        recovered = true;
      }
      if (!room_for_a_job()) {
        std::this_thread::sleep_for(coordinator::kIntakeFullRecheck);
        continue;
      }
      auto raw = store.take_next(config_.coordinator_id);
      if (!raw) raw = store.wait_critical(config_.coordinator_id, config_.intake_poll);
      if (raw) {
        handle_raw(redis, store, *raw);
        next_depth_sample = Clock::now();  // the queue just changed
      }
      backoff = coordinator::kRedisRetryFirst;
    } catch (const RedisError& e) {
      if (stopping) break;
      metrics_->redis_errors().Increment();
      ZKLOG(kWarning) << "intake: " << e.what() << "; retrying in " << backoff.count() << " ms";
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, coordinator::kRedisRetryMax);
      recovered = false;  // a lost LMOVE reply leaves the job in the processing list
    } catch (const std::exception& e) {
      ZKLOG(kError) << "intake: " << e.what();
      std::this_thread::sleep_for(coordinator::kIntakeErrorPause);
    }
  }
}

void Intake::handle_raw(RedisClient& redis, JobStore& store, const std::string& raw) {
  const std::string& me = config_.coordinator_id;
  const std::string digest = entry_digest(raw);
  // Counted once per process: a retry after a lost Redis reply is the same
  // attempt, a restart is a new one.
  if (!counted_.count(digest)) {
    const long attempts = store.begin_intake(me, digest);
    counted_.insert(digest);
    if (attempts > coordinator::kIntakeCrashLimit) {
      const std::string id = extract_job_id(raw).value_or("");
      const std::string reason = "set aside: coordinator " + me + " died " + std::to_string(attempts - 1) +
                                 " times while taking this job in; its queue entry is kept in " + keys_.set_aside();
      ZKLOG(kError) << "job " << (id.empty() ? "(no usable id)" : id) << " " << reason;
      store.set_aside(me, raw, id, attempts - 1, reason, config_.terminal_ttl_seconds);
      metrics_->jobs_failed("", "unknown", "setAside").Increment();
      counted_.erase(digest);
      return;
    }
  }
  check_raw(redis, store, raw, digest);
  store.end_intake(me, digest);
  counted_.erase(digest);
}

void Intake::check_raw(RedisClient& redis, JobStore& store, const std::string& raw, const std::string& digest) {
  const std::string& me = config_.coordinator_id;
  // Labels for the job counters; stay "none"/"unknown" until the job parses.
  std::string spec_circuit, spec_priority = "unknown";
  auto fail = [&](const std::string& id, ErrorCode code, const std::string& message) {
    ZKLOG(kWarning) << "job " << id << " failed at intake: " << message;
    JobStore::Finish f;
    f.state = kStateFailed;
    f.error_code = error_name(code);
    f.error = message;
    f.raw = raw;
    f.owner = me;
    f.ttl_seconds = config_.terminal_ttl_seconds;
    store.finish(id, f);
    metrics_->jobs_failed(spec_circuit, spec_priority, error_name(code)).Increment();
  };
  JobSpec spec;
  try {
    spec = parse_job(raw);
  } catch (const JobError& e) {
    metrics_->jobs_submitted(spec_circuit, spec_priority).Increment();
    auto id = extract_job_id(raw);
    if (!id) {
      ZKLOG(kWarning) << "rejected a submission without a usable id: " << e.what();
      store.reject_unattributable(me, raw, std::string("invalid job: ") + e.what());
      return;
    }
    // The entry did not parse, but it names an id: claim() needs only that,
    // so the failure is recorded on that job (or refused as a duplicate).
    JobSpec unparsed;
    unparsed.id = *id;
    std::string detail;
    auto claim = store.claim(unparsed, me, &detail, digest);
    if (claim == JobStore::Claim::kNew || claim == JobStore::Claim::kResume)
      fail(*id, ErrorCode::kInvalidJob, std::string("invalid job: ") + e.what());
    else if (claim == JobStore::Claim::kTerminal)
      store.drop_processing(me, raw);  // this entry's job already ended
    else
      store.reject_unattributable(me, raw,
                                  "invalid job with the job id " + *id + ", which belongs to another submission (" +
                                      detail + "); that job was not touched: " + e.what(),
                                  "duplicateId");
    return;
  }
  if (!abort_job_.empty() && spec.id == abort_job_) {
    ZKLOG(kError) << "--inject-fault: aborting while taking in job " << spec.id;
    std::abort();
  }
  spec_circuit = spec.circuit;
  spec_priority = priority_name(spec.priority);
  // Read before claim(), which stamps submitted_at on jobs pushed without it.
  const RedisReply submitted = redis.command({"HGET", keys_.job(spec.id), JobStore::kSubmittedAt});
  std::string detail;
  const auto claim = store.claim(spec, me, &detail, digest);
  const double intake_time = unix_now();
  double submitted_at = intake_time;
  if (submitted.type == RedisReply::Type::kString) {
    try {
      submitted_at = std::stod(submitted.str);
    } catch (const std::exception&) {
      submitted_at = intake_time;  // not a number: treat as pushed without one
    }
  }
  if (claim == JobStore::Claim::kNew) {
    metrics_->jobs_submitted(spec_circuit, spec_priority).Increment();
    if (submitted.type == RedisReply::Type::kString && submitted_at <= intake_time)
      metrics_->job_queue_wait(spec_priority).Observe(intake_time - submitted_at);
  }
  if (claim == JobStore::Claim::kTerminal) {
    ZKLOG(kInfo) << "job " << spec.id << " is already " << detail << "; dropped from the queue";
    store.drop_processing(me, raw);
    return;
  }
  if (claim == JobStore::Claim::kOwnedElsewhere) {
    store.reject_unattributable(me, raw, "duplicate job id " + spec.id + " (running on coordinator " + detail + ")",
                                "duplicateId");
    return;
  }
  if (claim == JobStore::Claim::kDuplicate) {
    ZKLOG(kWarning) << "rejected a second submission of job id " << spec.id << " (the job is " << detail << ")";
    store.reject_unattributable(me, raw,
                                "job id " + spec.id + ", which belongs to another submission (" +
                                    detail + "): this duplicate was not run and that job was not touched",
                                "duplicateId");
    return;
  }
  if (redis.command({"HGET", keys_.job(spec.id), JobStore::kCancelRequested}).str == "1") {
    const std::string cancelled(error_name(ErrorCode::kCancelled));
    JobStore::Finish f{kStateCancelled, cancelled, "cancelled", "", raw, me, config_.terminal_ttl_seconds};
    store.finish(spec.id, f);
    metrics_->jobs_failed(spec_circuit, spec_priority, cancelled).Increment();
    return;
  }
  std::optional<CircuitInfo> circuit;
  try {
    circuit = load_circuit_info(redis, keys_, spec.circuit);
  } catch (const RedisError&) {
    throw;
  } catch (const std::exception& e) {
    fail(spec.id, ErrorCode::kUnknownCircuit, e.what());
    return;
  }
  // Each witness is read only as far as its header and public inputs; the
  // worker that proves it checks its sha256 and size.
  // Each read is capped at the circuit's witness size and counts against
  // --memory-budget-mib while it lasts.
  const WitnessReader read_witness = [&](const WitnessRef& ref, std::uint32_t num_public) -> WitnessRead {
    try {
      const std::uint64_t max_bytes = circuit ? witness_max_bytes(circuit->num_vars) : 0;
      return read_witness_summary(ref, &redis, witness_policy_, num_public, max_bytes,
                                  ReadBudget{&held_bytes_, config_.memory_budget_bytes});
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
  };
  auto checked = check_job(spec, circuit, unix_now(), read_witness);
  if (auto* failure = std::get_if<JobCheckFailure>(&checked)) {
    fail(spec.id, failure->code, failure->message);
    return;
  }
  PreparedJob job = std::move(std::get<PreparedJob>(checked));
  job.raw = raw;
  job.submitted_at = std::min(submitted_at, intake_time);
  if (claim == JobStore::Claim::kResume) job.stored_proofs = store.proofs(spec.id);
  job.held_bytes = estimate_held_bytes(job);
  ++active_jobs_;
  held_bytes_ += job.held_bytes;
  deliver_(std::move(job));
}

void Intake::sample_queue_depth(RedisClient& redis) {
  std::vector<std::vector<std::string>> commands;
  for (std::size_t i = 0; i < 4; ++i) commands.push_back({"LLEN", keys_.queue(static_cast<Priority>(i))});
  const RedisReply lengths = redis.transaction(commands);
  const auto& replies = lengths.as_array();
  for (std::size_t i = 0; i < replies.size() && i < 4; ++i)
    metrics_->queue_depth(priority_name(static_cast<Priority>(i))).Set(static_cast<double>(replies[i].as_integer()));
}

}  // namespace zkfarm
