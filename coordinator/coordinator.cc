// coordinator.cc -- see coordinator.h.
#include "coordinator/coordinator.h"

#include "cluster/tenants.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <deque>
#include <map>

#include "cluster/log.h"
#include "coordinator/intake.h"
#include "coordinator/redis_retry.h"
#include "coordinator/result_assembly.h"

namespace zkfarm {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// zkfarm_build_info's version label.
constexpr std::string_view kCoordinatorVersion = "0.1";

}  // namespace

template <class F>
auto Coordinator::with_redis(F&& fn) -> decltype(fn()) {
  return retry_redis(std::forward<F>(fn), stopping_, *metrics_);
}

Coordinator::Coordinator(CoordinatorConfig config)
    : config_(std::move(config)), metrics_(std::make_shared<metrics::CoordinatorMetrics>(kCoordinatorVersion)),
      keys_(config_.key_prefix), store_(config_.artifacts), context_(1),
      redis_(config_.redis_url), jobs_store_(redis_, keys_),
      scheduler_(SchedulerConfig{config_.max_attempts, config_.quarantine_after, config_.task_timeout,
                                 config_.task_timeout_floor, config_.witness_timeout, config_.max_tasks_per_worker},
                 *this, *metrics_) {
  if (config_.coordinator_id.empty()) throw std::invalid_argument("coordinator id must not be empty");
  if (config_.artifacts.empty()) throw std::invalid_argument("--artifacts (the artifact store root) is required");
  if (config_.takeover_after.count() > 0)
    lease_ = std::make_unique<LeaseKeeper>(config_, metrics_, [this] { stop(); });
}

Coordinator::~Coordinator() {
  stop();
  if (lease_thread_.joinable()) lease_thread_.join();
  if (intake_thread_.joinable()) intake_thread_.join();
  if (verifiers_) verifiers_->stop();
  if (link_) link_->stop();
}

void Coordinator::stop() {
  stopping_ = true;
  if (lease_) lease_->wake();
  events_.push(LinkEvent{LinkEvent::Kind::kDead, "", ""});  // wake run()
}

void Coordinator::run() {
  link_ = std::make_unique<RouterLink>(
      context_,
      RouterLink::Options{config_.listen, config_.heartbeat_interval, config_.dead_after, config_.curve_secret_key,
                          config_.curve_allowlist},
      [this](LinkEvent e) { events_.push(std::move(e)); });
  try {
    link_->start();
  } catch (const zmq::error_t& e) {
    throw std::runtime_error("cannot listen on " + config_.listen + ": " + e.what());
  }
  sessions_ = std::make_unique<WorkerSessions>(
      config_, *link_, redis_, scheduler_, *metrics_, stopping_,
      [this](const WorkerSessions::Session& s, wire::Result::Reader r) { on_result(s, r); });
  ZKLOG(kInfo) << "coordinator " << config_.coordinator_id << " listening on " << config_.listen << ", Redis "
               << RedisUrl::parse(config_.redis_url).redacted() << ", prefix " << keys_.prefix()
               << (config_.curve_secret_key.empty()
                       ? ", no CURVE (plaintext)"
                       : ", CURVE with " + std::to_string(config_.curve_allowlist.size()) + " allowed worker keys");
  if (lease_) lease_thread_ = std::thread([this] { lease_->run(stopping_); });
  intake_thread_ = std::thread([this] {
    Intake intake(
        config_, metrics_, active_jobs_, held_bytes_, tenant_load_,
        [this](PreparedJob job) { events_.push(std::move(job)); }, lease_.get());
    intake.run(stopping_);
  });
  start_verifiers();
  auto next_tick = Clock::now();
  // Events that write to Redis (verified results, new jobs), handled a few
  // at a time between looks at the workers' messages: a credit waits for at
  // most kStoresPerTurn stores, not for every store of a burst.
  std::deque<Event> deferred;
  auto handle = [&](Event& event) {
    try {
      if (auto* link = std::get_if<LinkEvent>(&event)) {
        if (!link->peer.empty()) sessions_->on_link(*link);
      } else if (auto* prepared = std::get_if<PreparedJob>(&event)) {
        on_prepared(std::move(*prepared));
      } else {
        on_verified(std::get<VerifyDone>(event));
      }
    } catch (const kj::Exception& e) {
      ZKLOG_PEER(kWarning, "messages that fail to read")
          << "dropped a message that failed to read: " << peer_text(e.getDescription().cStr());
    } catch (const RedisError& e) {
      if (stopping_) return;
      metrics_->redis_errors().Increment();
      ZKLOG(kError) << "Redis error while handling an event: " << e.what();
    }
  };
  while (!stopping_) {
    if (deferred.empty())
      events_.wait(std::chrono::duration_cast<std::chrono::milliseconds>(next_tick - Clock::now()));
    // Workers' messages first (credits, results to the verifiers: no Redis
    // round trip but a changed record's lookup), then dispatch.
    for (auto& event : events_.drain()) {
      if (stopping_) break;
      if (std::holds_alternative<LinkEvent>(event)) handle(event);
      else deferred.push_back(std::move(event));
    }
    scheduler_.dispatch();
    for (std::size_t n = 0; n < coordinator::kStoresPerTurn && !deferred.empty() && !stopping_; ++n) {
      Event event = std::move(deferred.front());
      deferred.pop_front();
      handle(event);
    }
    publish_tenant_load();
    if (Clock::now() >= next_tick) {
      try {
        tick();
      } catch (const RedisError& e) {
        metrics_->redis_errors().Increment();
        ZKLOG(kError) << "Redis error in periodic work: " << e.what();
      }
      scheduler_.update_gauges();
      next_tick = Clock::now() + coordinator::kTickInterval;
    }
    scheduler_.dispatch();
  }
  ZKLOG(kInfo) << "coordinator stopping; " << scheduler_.job_count()
               << " running jobs stay in the processing list and resume on restart";
}

// ---------------------------------------------------------------------------
// Verifier threads

void Coordinator::start_verifiers() {
  verifiers_ = std::make_unique<VerifierPool<VerifyRequest>>(
      store_, config_.verify_threads,
      [this](VerifyRequest&& request, PartitionVerifier::Outcome&& outcome) {
        events_.push(VerifyDone{std::move(request), std::move(outcome)});
      },
      [this](CurveId curve, std::size_t, double seconds) {
        metrics_->verify_duration(curve_name(curve)).Observe(seconds);
      });
  verifiers_->start();
}

// ---------------------------------------------------------------------------
// Scheduler thread

void Coordinator::on_prepared(PreparedJob prepared) {
  const std::uint64_t held = prepared.held_bytes;
  const std::string tenant = prepared.tenant;
  const std::uint64_t partitions = prepared.spec.partitions.size();  // as the intake counted it
  // A recovery pass (after a lost Redis connection or a takeover) prepares
  // every job of the processing list again, also one this thread finished
  // after the intake had claimed it: a job that is terminal in Redis is
  // never started again (it would prove partitions twice).
  const RedisReply fields = with_redis([&] {
    return redis_.command({"HMGET", job_keys(prepared.tenant).job(prepared.job_id.empty() ? prepared.spec.id : prepared.job_id),
                           JobStore::kState, JobStore::kCancelRequested});
  });
  const RedisReply& state = fields.as_array().at(0);
  // A cancel whose request the tick took before this job reached the
  // scheduler would be lost: the flag in Redis says it was asked for.
  const bool cancel_requested = fields.as_array().at(1).str == "1";
  if (state.type == RedisReply::Type::kString && is_terminal_state(state.str)) {
    ZKLOG(kInfo) << "job " << prepared.spec.id << " is already " << state.str << "; not started again";
    --active_jobs_;
    held_bytes_ -= held;
    tenant_load_.received(tenant, partitions, scheduler_.active_partitions(tenant));
    tenant_load_.ended(tenant);
    return;
  }
  auto shared = std::make_shared<const PreparedJob>(std::move(prepared));
  ScheduledJob job;
  job.spec = std::shared_ptr<const JobSpec>(shared, &shared->spec);  // the prepared job's, not a copy
  job.curve = shared->circuit.curve;
  job.submitted_at = shared->submitted_at;
  job.tenant = shared->tenant;  // whose share it is charged to (fair share)
  for (const auto& [index, text] : shared->stored_proofs) {
    try {
      job.proved[index] = parse_partition_result(text);
    } catch (const std::exception& e) {
      ZKLOG(kWarning) << "job " << job.id() << " partition " << index << ": stored proof unreadable (" << e.what()
                      << "); proving it again";
    }
  }
  job.prepared = std::move(shared);
  const std::string id = job.id();
  const bool added = scheduler_.add_job(std::move(job));
  tenant_load_.received(tenant, partitions, scheduler_.active_partitions(tenant));
  if (!added) {  // a recovery pass saw a job we already run
    --active_jobs_;
    held_bytes_ -= held;
    tenant_load_.ended(tenant);
    return;
  }
  if (cancel_requested) scheduler_.end_job(id, ErrorCode::kCancelled, "cancelled by request");
}

void Coordinator::publish_tenant_load() {
  std::map<std::string, std::uint64_t> active = {{"", scheduler_.active_partitions("")}};
  for (const auto& tenant : tenants_) active[tenant] = scheduler_.active_partitions(tenant);
  tenant_load_.publish(active);
}

void Coordinator::on_result(const WorkerSessions::Session& session, wire::Result::Reader result) {
  const std::uint64_t task_id = result.getTaskId();
  auto accepted = scheduler_.on_result(session.peer, task_id);
  if (!accepted) {
    ZKLOG_PEER(kInfo, session.peer) << "ignored a late or unknown result for task " << task_id << " (job "
                                    << peer_text(result.getJobId().cStr()) << ") from worker "
                                    << peer_text(session.worker_id);
    return;
  }
  VerifyRequest request;
  request.device_uuid = result.getDeviceUuid().cStr();
  request.timings = stage_seconds_from_wire(result.getTimings());
  request.item.circuit = accepted->prepared->circuit;
  auto proof = result.getProof();
  request.item.proof.assign(reinterpret_cast<const char*>(proof.begin()), proof.size());
  if (accepted->prepared->spec.partitions[accepted->partition].kind == WitnessRef::Kind::kInput) {
    // The worker computed this witness: verify against the public signals it
    // reports (a wrong length can only fail verification), with the public
    // inputs taken from the partition's input where the circuit's record maps
    // them (intake put them in the job): a worker that proved some other
    // input's statement then fails verification like any bad proof.
    auto reported = result.getPublicInputs();
    request.item.public_inputs.assign(reported.begin(), reported.end());
    const PreparedJob& job = *accepted->prepared;
    if (!job.public_from_input.empty() && request.item.public_inputs.size() == job.public_bytes) {
      const auto expected = job.public_inputs.begin() +
                            static_cast<std::ptrdiff_t>(std::size_t(accepted->partition) * job.public_bytes);
      const std::size_t n8 = job.public_bytes / job.public_from_input.size();
      bool differs = false;
      for (std::size_t k = 0; k < job.public_from_input.size(); ++k) {
        if (!job.public_from_input[k]) continue;
        const auto from = expected + static_cast<std::ptrdiff_t>(k * n8);
        const auto to = request.item.public_inputs.begin() + static_cast<std::ptrdiff_t>(k * n8);
        differs |= !std::equal(from, from + static_cast<std::ptrdiff_t>(n8), to);
        std::copy(from, from + static_cast<std::ptrdiff_t>(n8), to);
      }
      if (differs)
        ZKLOG_PEER(kWarning, session.peer) << "worker " << peer_text(session.worker_id) << " reported public inputs for job " << accepted->job_id
                        << " partition " << accepted->partition
                        << " that are not its input's; verifying against the input's";
    }
  } else {
    request.item.public_inputs = accepted->prepared->partition_public_inputs(accepted->partition);
  }
  request.accepted = std::move(*accepted);
  verifiers_->push(std::move(request));
}

void Coordinator::on_verified(const VerifyDone& done) {
  const VerifyRequest& r = done.request;
  PartitionResult result;
  if (done.outcome.valid) {
    // Where the time went, as the coordinator saw it: queued (pending ->
    // dispatched), at the worker (dispatched -> result), and accepting it
    // (result received -> verified, up to the Redis write that follows).
    const CoordinatorSeconds seconds{r.accepted.wait_seconds, r.accepted.worker_seconds,
                                     std::chrono::duration<double>(Clock::now() - r.accepted.received).count()};
    result = assemble_partition_result(
        r.accepted.partition,
        VerifiedProof{done.outcome.proof_json, done.outcome.public_json, done.outcome.compressed},
        r.accepted.worker_id, r.device_uuid, r.timings, seconds);
  }
  scheduler_.on_verified(r.accepted, done.outcome.valid, done.outcome.reason, std::move(result));
}

void Coordinator::tick() {
  // Cancels addressed to us: the default tenant's and every tenant's (each
  // names jobs of its own namespace only), in one round trip.
  // The tenant records (their weights and reservations for the scheduler's
  // fair share), re-read every 10 ticks: two round trips. A farm without
  // tenants has an empty policy: the default tenant alone, as before.
  if (Clock::now() >= tenants_read_) {
    const std::vector<TenantRecord> records = with_redis([&] { return load_tenants(redis_, keys_); });
    tenants_.clear();
    FairSharePolicy policy;
    for (const auto& r : records) {
      tenants_.push_back(r.name);
      policy.tenants[r.name] = TenantPolicy{r.weight, r.reserved_workers};
    }
    scheduler_.set_tenants(std::move(policy));  // keeps what each tenant used so far
    tenants_read_ = Clock::now() + coordinator::kTickInterval * 10;
  }
  std::vector<std::vector<std::string>> spops = {
      {"SPOP", keys_.cancels(config_.coordinator_id), std::to_string(coordinator::kCancelsPerTick)}};
  for (const auto& tenant : tenants_)
    spops.push_back({"SPOP", keys_.for_tenant(tenant).cancels(config_.coordinator_id),
                     std::to_string(coordinator::kCancelsPerTick)});
  RedisReply cancels = with_redis([&] { return spops.size() == 1 ? redis_.command(spops[0]) : redis_.transaction(spops); });
  for (std::size_t i = 0; i < spops.size(); ++i) {
    const RedisReply& ids = spops.size() == 1 ? cancels : cancels.as_array().at(i);
    if (ids.type != RedisReply::Type::kArray) continue;
    for (const auto& c : ids.as_array())
      scheduler_.end_job(scheduled_job_id(i == 0 ? "" : tenants_[i - 1], c.as_string()), ErrorCode::kCancelled,
                         "cancelled by request");
  }
  // Deadlines and stalled tasks.
  scheduler_.expire(unix_now(), Clock::now());
  sessions_->flush_warnings();
  sessions_->flush_records();
  flush_peer_log();
}

// ---------------------------------------------------------------------------
// The scheduler's effects

void Coordinator::send_task(const TaskOrder& order) { sessions_->send_task(order); }

void Coordinator::send_cancel(const std::string& peer, std::uint64_t task_id, const std::string& job_id) {
  sessions_->send_cancel(peer, task_id, job_id);
}

KeyLayout Coordinator::job_keys(const std::string& tenant) const {
  return tenant.empty() ? keys_ : keys_.for_tenant(tenant);
}

JobStore Coordinator::store_of(const ScheduledJob& job) {
  return JobStore(redis_, job_keys(job.prepared ? job.prepared->tenant : std::string()));
}

const std::string& Coordinator::stored_id(const ScheduledJob& job) {
  return job.prepared && !job.prepared->job_id.empty() ? job.prepared->job_id : job.id();
}

void Coordinator::job_started(const ScheduledJob& job) {
  with_redis([&] {
    store_of(job).event(stored_id(job), event_json(stored_id(job), "started"));
    return 0;
  });
}

void Coordinator::partition_proved(const ScheduledJob& job, const PartitionResult& result) {
  json extra = {{"partition", result.partition}, {"worker", result.worker}};
  const std::string extra_text = extra.dump();
  const std::string entry = to_json(result).dump();
  // The worker's proof counter goes in the same round trip, and its record
  // keeps an expiry (one that had expired is not left without one).
  const std::vector<std::vector<std::string>> counter = {
      {"HINCRBY", keys_.worker(result.worker), WorkerRecord::kProofs, "1"},
      {"EXPIRE", keys_.worker(result.worker), sessions_->record_ttl(), "NX"}};
  with_redis([&] {
    store_of(job).store_proof(stored_id(job), result.partition, entry,
                              event_json(stored_id(job), "partition_proved", extra_text.substr(1, extra_text.size() - 2)),
                              counter, result.coordinator.worker);
    return 0;
  });
}

void Coordinator::attempt_failed(const ScheduledJob& job, std::uint32_t) {
  with_redis([&] {
    return redis_.command({"HINCRBY", store_of(job).keys().job(stored_id(job)), JobStore::kAttempts, "1"});
  });
}

void Coordinator::witness_pending_changed(const ScheduledJob& job, std::uint32_t count) {
  with_redis([&] {
    return redis_.command(
        {"HSET", store_of(job).keys().job(stored_id(job)), JobStore::kWaitingForWitness, std::to_string(count)});
  });
}

void Coordinator::job_finished(const ScheduledJob& job, const JobEnd& end) {
  std::optional<JobResult> result = end.result;
  if (result) result->id = stored_id(job);  // the id its tenant knows
  JobStore::Finish f{end.state,
                     end.code ? std::string(error_name(*end.code)) : "",
                     end.message,
                     result ? to_json(*result).dump() : "",
                     job.prepared ? job.prepared->raw : "",
                     config_.coordinator_id,
                     config_.terminal_ttl_seconds};
  with_redis([&] { return store_of(job).finish(stored_id(job), f); });
  --active_jobs_;
  tenant_load_.ended(job.prepared ? job.prepared->tenant : std::string());
  if (job.prepared) held_bytes_ -= job.prepared->held_bytes;
}

void Coordinator::faults_changed(const std::string& worker_id, int delta) {
  with_redis([&] { return redis_.command({"HINCRBY", keys_.worker(worker_id), WorkerRecord::kFaults, std::to_string(delta)}); });
}

void Coordinator::worker_quarantined(const std::string& worker_id, const std::string& curve_key) {
  std::vector<std::string> command = {"SADD", keys_.quarantine(), worker_id};
  if (!curve_key.empty()) command.push_back(KeyLayout::quarantined_key(curve_key));
  with_redis([&] { return redis_.command(command); });
}

}  // namespace zkfarm
