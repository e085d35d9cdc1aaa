// intake.cc -- see intake.h.
#include "coordinator/intake.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <set>
#include <system_error>
#include <thread>

#include "cluster/artifacts.h"
#include "cluster/log.h"
#include "cluster/tenants.h"
#include "cluster/witness_access.h"
#include "coordinator/job_check.h"
#include "kernels/curves.h"

namespace zkfarm {

using Clock = std::chrono::steady_clock;

namespace {
// A reply error naming a key of the wrong type: a tenant's client may write
// its own namespace, so a job's keys may be a set where a hash belongs. It
// spoils that entry only, never the intake of everyone else's.
bool is_wrong_type(const RedisError& e) {
  return e.kind() == RedisError::Kind::kReply && std::string_view(e.what()).rfind("WRONGTYPE", 0) == 0;
}

// How often intake re-reads the tenant list: a new tenant's queue is served
// within a second, at one SMEMBERS a second.
constexpr std::chrono::milliseconds kTenantsRefresh{1000};
// The most max-queued-jobs refusals of one tenant in one pass: a burst of
// thousands is refused over a few polls, other work between.
constexpr std::uint64_t kRefusalsPerPass = 100;
}  // namespace

// The source the log rate limit counts lines about queue entries under
// (clients have no identity there).
constexpr const char* kSubmissions = "job submissions";

std::uint64_t estimate_held_bytes(std::size_t entry_bytes, std::size_t partitions, std::size_t public_bytes) {
  return 2 * std::uint64_t(entry_bytes) + std::uint64_t(partitions) * (public_bytes + coordinator::kHeldBytesPerPartition);
}

std::uint64_t estimate_held_bytes(const PreparedJob& job) {
  return 2 * std::uint64_t(job.raw.size()) + job.public_inputs.size() +
         job.spec.partitions.size() * coordinator::kHeldBytesPerPartition;
}

Intake::Intake(const CoordinatorConfig& config, std::shared_ptr<metrics::CoordinatorMetrics> metrics,
               std::atomic<std::uint32_t>& active_jobs, std::atomic<std::uint64_t>& held_bytes,
               TenantLoad& load, std::function<void(PreparedJob)> deliver, LeaseKeeper* lease)
    : config_(config), metrics_(std::move(metrics)), keys_(config.key_prefix),
      witness_policy_(make_witness_policy(config.witness_roots, config.artifacts, config.key_prefix)),
      active_jobs_(active_jobs), held_bytes_(held_bytes), load_(load), deliver_(std::move(deliver)), lease_(lease) {
  witness_policy_.http.ca_file = config.ca_file;
  witness_policy_.http.urls = parse_url_policy(config.witness_url_allow);
  const std::string kAbort = "abort-in-intake=";
  if (config_.inject_fault.rfind(kAbort, 0) == 0) abort_job_ = config_.inject_fault.substr(kAbort.size());
}

Intake::~Intake() {
  // Every read stops at once; the joins then wait for the reads in flight.
  for (auto& job : reading_) job.reads->stop();
  for (auto& reads : expired_reads_) reads->stop();
  reading_.clear();
  expired_reads_.clear();
}

bool Intake::room_for_a_job() {
  if (active_jobs_.load() + reading_.size() >= config_.max_active_jobs) return false;
  std::uint64_t held = held_bytes_.load();
  for (const auto& job : reading_) held += job.held_bytes;
  const bool full = held >= config_.memory_budget_bytes;
  if (full != budget_full_) {
    budget_full_ = full;
    ZKLOG(kInfo) << "memory budget " << (full ? "reached" : "has room again") << ": "
                 << active_jobs_.load() + reading_.size() << " jobs hold an estimated " << (held >> 20) << " MiB of "
                 << (config_.memory_budget_bytes >> 20) << " MiB" << (full ? "; further jobs wait in Redis" : "");
  }
  return !full;
}

void Intake::wait_for_reads(std::chrono::milliseconds timeout) {
  // Never past the next deadline, which collect_reads must see in time.
  const auto now = Clock::now();
  for (const auto& job : reading_)
    timeout = std::min(timeout, std::chrono::ceil<std::chrono::milliseconds>(job.deadline - now));
  if (read_ended_->wait(std::max(timeout, std::chrono::milliseconds(1)))) read_ended_->drain();
}

void Intake::run(const std::atomic<bool>& stopping) {
  RedisClient redis(config_.redis_url);
  JobStore store(redis, keys_);
  // With leases, no job is taken before this coordinator holds its lease
  // (another one could take it over meanwhile).
  if (lease_ && !lease_->wait_first_lease(stopping)) return;
  bool recovered = false;
  // The client functions tenants submit and cancel with, as this build
  // has them (the same text again is harmless; a user that may not load
  // them leaves that to `zkfarm tenant add`).
  try {
    load_client_functions(redis);
  } catch (const RedisError& e) {
    ZKLOG(kInfo) << "did not load the tenants' client functions (" << e.what()
                 << "); `zkfarm tenant add` loads them";
  }
  std::chrono::milliseconds backoff = coordinator::kRedisRetryFirst;
  auto next_depth_sample = Clock::now();
  while (!stopping) {
    try {
      if (Clock::now() >= next_depth_sample) {
        sample_queue_depth(redis);
        next_depth_sample = Clock::now() + queue_count_period();
      }
      if (lease_ && lease_->take_recovery_request()) recovered = false;  // resume them, keeping proved partitions
      if (!recovered) {
        // Everything in our processing list is ours: jobs taken before a
        // crash (or before a lost reply), or taken over. Already-running
        // ones are deduped by the scheduler; those being read are skipped.
        redis.command({"SADD", keys_.coordinators_seen(), config_.coordinator_id});  // status page
        auto items = store.processing(config_.coordinator_id);
        std::multiset<std::string> being_read;
        for (const auto& job : reading_) being_read.insert(job.digest);
        recovering_.clear();
        for (auto& raw : items) {
          auto it = being_read.find(entry_digest(raw));  // the entry's digest, as handle_raw counts it
          if (it != being_read.end()) {
            being_read.erase(it);
            continue;
          }
          recovering_.push_back(std::move(raw));
        }
        if (!recovering_.empty()) ZKLOG(kInfo) << "recovering " << recovering_.size() << " jobs from the processing list";
        recovered = true;
      }
      collect_reads(store);
      // The processing list first (its jobs are ours already), as many
      // being read at once as new ones.
      while (!recovering_.empty() && reading_slots() < coordinator::kJobsReadingAtOnce && !stopping) {
        const std::string raw = std::move(recovering_.front());
        recovering_.pop_front();
        handle_raw(redis, store, raw, /*may_hold=*/false);  // ours already: never back to a queue
      }
      if (!recovering_.empty()) {
        wait_for_reads(coordinator::kIntakeFullRecheck);
        continue;
      }
      if (!room_for_a_job() ||
          reading_slots() >= coordinator::kJobsReadingAtOnce + coordinator::kCriticalJobsReadingBeyond) {
        wait_for_reads(coordinator::kIntakeFullRecheck);
        continue;
      }
      // Tenants' queue lengths (max-queued-jobs refusals, the slots'
      // shares) before the first take, then every poll but at most every
      // kQueueCountMinPeriod (queue_count_period).
      if (Clock::now() >= next_queue_count_) {
        count_tenant_queues(redis, store);
        next_queue_count_ = Clock::now() + queue_count_period();
      }
      release_holds();
      std::optional<std::string> raw;
      if (reading_slots() >= coordinator::kJobsReadingAtOnce) {
        raw = store.wait_critical(config_.coordinator_id, config_.intake_poll);  // critical jobs only
      } else {
        bool default_tenant = true;
        const std::vector<std::string> turn = tenants_to_take(redis, default_tenant);
        raw = store.take_next(config_.coordinator_id, turn, default_tenant);
        // Nothing queued: wait for a critical job, or, while jobs are being
        // read, for a read to end (the queues are polled again meanwhile).
        if (!raw && reading_.empty() && default_tenant)
          raw = store.wait_critical(config_.coordinator_id, config_.intake_poll);
        else if (!raw)
          wait_for_reads(config_.intake_poll);
      }
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

void Intake::handle_raw(RedisClient& redis, JobStore& store, const std::string& raw, bool may_hold) {
  const std::string& me = config_.coordinator_id;
  const std::string digest = entry_digest(raw);
  // Counted once per process: a retry after a lost Redis reply is the same
  // attempt, a restart is a new one.
  if (!counted_.count(digest)) {
    const long attempts = store.begin_intake(me, digest);
    counted_.insert(digest);
    if (attempts > coordinator::kIntakeCrashLimit) {
      const ProcessingEntry entry = split_processing_entry(raw);
      const std::string id = extract_job_id(entry.raw).value_or("");
      const std::string reason = "set aside: coordinator " + me + " died " + std::to_string(attempts - 1) +
                                 " times while taking this job in; its queue entry is kept in " + keys_.set_aside();
      ZKLOG(kError) << "job " << (id.empty() ? "(no usable id)" : peer_text(scheduled_job_id(entry.tenant, id))) << " " << reason;
      JobStore tenant_store(redis, entry.tenant.empty() ? keys_ : keys_.for_tenant(entry.tenant));
      tenant_store.set_aside(me, raw, id, attempts - 1, reason, config_.terminal_ttl_seconds, entry_digest(entry.raw));
      metrics_->jobs_failed("", "unknown", "setAside", entry.tenant).Increment();
      counted_.erase(digest);
      return;
    }
  }
  try {
    const bool reading = !check_raw(redis, store, raw, digest, may_hold);
    refusing_.erase(raw);
    if (reading) return;  // its witnesses are being read
  } catch (const RedisError& e) {
    if (!is_wrong_type(e)) throw;
    ZKLOG(kWarning) << "rejected a queue entry whose job keys have the wrong type: " << e.what();
    store.reject_unattributable(me, raw, std::string("the job's Redis keys have the wrong type: ") + e.what());
  }
  store.end_intake(me, digest);
  counted_.erase(digest);
}

void Intake::fail_job(JobStore& store, const std::string& raw, const std::string& id, const std::string& circuit,
                      const std::string& priority, ErrorCode code, const std::string& message) {
  ZKLOG_PEER(kWarning, kSubmissions) << "job " << peer_text(id) << " failed at intake: " << message;
  JobStore::Finish f;
  f.state = kStateFailed;
  f.error_code = error_name(code);
  f.error = message;
  f.raw = raw;
  f.owner = config_.coordinator_id;
  f.ttl_seconds = config_.terminal_ttl_seconds;
  store.finish(id, f);
  metrics_->jobs_failed(circuit, priority, error_name(code), store.keys().tenant()).Increment();
}

bool Intake::check_raw(RedisClient& redis, JobStore& farm_store, const std::string& entry,
                       const std::string& entry_sha256, bool may_hold) {
  const std::string& me = config_.coordinator_id;
  // A tenant's job: its keys are in its namespace, its entry wraps the
  // queue entry (whose digest its job record holds).
  const ProcessingEntry split = split_processing_entry(entry);
  if (!split.tenant.empty() && !is_valid_tenant_name(split.tenant)) {
    farm_store.reject_unattributable(me, entry, "a processing entry names no tenant ('" + split.tenant + "')");
    return true;
  }
  const KeyLayout keys = split.tenant.empty() ? keys_ : keys_.for_tenant(split.tenant);
  JobStore store(redis, keys);
  const std::string& raw = split.raw;
  const std::string digest = entry_digest(raw);
  // Labels for the job counters; stay "none"/"unknown" until the job parses.
  std::string spec_circuit, spec_priority = "unknown";
  auto fail = [&](const std::string& id, ErrorCode code, const std::string& message) {
    fail_job(store, entry, id, spec_circuit, spec_priority, code, message);
  };
  JobSpec spec;
  try {
    spec = parse_job(raw);
  } catch (const JobError& e) {
    metrics_->jobs_submitted(spec_circuit, spec_priority, split.tenant).Increment();
    auto id = extract_job_id(raw);
    if (!id) {
      ZKLOG_PEER(kWarning, kSubmissions) << "rejected a submission without a usable id: " << peer_text(e.what());
      store.reject_unattributable(me, entry, std::string("invalid job: ") + e.what());
      return true;
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
      store.drop_processing(me, entry);  // this entry's job already ended
    else
      store.reject_unattributable(me, entry,
                                  "invalid job with the job id " + *id + ", which belongs to another submission (" +
                                      detail + "); that job was not touched: " + e.what(),
                                  "duplicateId");
    return true;
  }
  if (!abort_job_.empty() && spec.id == abort_job_) {
    ZKLOG(kError) << "--inject-fault: aborting while taking in job " << spec.id;
    std::abort();
  }
  spec_circuit = spec.circuit;
  spec_priority = priority_name(spec.priority);
  // The tenant's quotas (admission.h), asked before the claim: a held job
  // goes back to its queue unclaimed; a refusal fails the job after it.
  AdmissionVerdict verdict;
  if (auto quota = quotas_.find(split.tenant); !split.tenant.empty() && quota != quotas_.end()) {
    TenantUsage usage;
    if (auto beyond = refusing_.find(entry); beyond != refusing_.end()) usage.queued_ahead = beyond->second;
    usage.active_partitions = active_partitions(split.tenant);
    const JobDemand demand{raw.size(), spec.partitions.size()};
    verdict = admit_job(split.tenant, quota->second, usage, demand);
    if (verdict.kind == AdmissionVerdict::Kind::kHold) {
      // A job of the processing list (recovery) is ours already: it starts.
      if (may_hold && farm_store.return_to_queue(me, entry, spec.priority)) {
        ZKLOG_PEER(kInfo, kSubmissions) << "job " << peer_text(scheduled_job_id(split.tenant, spec.id))
                                        << " held in its queue: " << verdict.message;
        held_[split.tenant] = demand;
        return true;
      }
      verdict = {};
    }
  }
  // The circuit's record before anything is counted: the job's metrics name
  // its circuit only once the circuit is known to be registered (a job
  // naming a made-up circuit counts as "unknown" and adds no series).
  std::optional<CircuitInfo> circuit;
  std::string circuit_error;
  try {
    circuit = load_visible_circuit(redis, keys, spec.circuit);
  } catch (const RedisError&) {
    throw;
  } catch (const std::exception& e) {
    circuit_error = e.what();
  }
  if (circuit) metrics_->circuit_registered(spec.circuit);
  // Read before claim(), which stamps submitted_at on jobs pushed without it.
  const RedisReply submitted = redis.command({"HGET", keys.job(spec.id), JobStore::kSubmittedAt});
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
    metrics_->jobs_submitted(spec_circuit, spec_priority, split.tenant).Increment();
    if (submitted.type == RedisReply::Type::kString && submitted_at <= intake_time)
      metrics_->job_queue_wait(spec_priority, split.tenant).Observe(intake_time - submitted_at);
  }
  if (claim == JobStore::Claim::kTerminal) {
    ZKLOG_PEER(kInfo, kSubmissions) << "job " << spec.id << " is already " << detail << "; dropped from the queue";
    store.drop_processing(me, entry);
    return true;
  }
  if (claim == JobStore::Claim::kOwnedElsewhere) {
    store.reject_unattributable(me, entry, "duplicate job id " + spec.id + " (running on coordinator " + detail + ")",
                                "duplicateId");
    return true;
  }
  if (claim == JobStore::Claim::kDuplicate) {
    ZKLOG_PEER(kWarning, kSubmissions) << "rejected a second submission of job id " << spec.id << " (the job is "
                                       << detail << ")";
    store.reject_unattributable(me, entry,
                                "job id " + spec.id + ", which belongs to another submission (" +
                                    detail + "): this duplicate was not run and that job was not touched",
                                "duplicateId");
    return true;
  }
  if (redis.command({"HGET", keys.job(spec.id), JobStore::kCancelRequested}).str == "1") {
    const std::string cancelled(error_name(ErrorCode::kCancelled));
    JobStore::Finish f{kStateCancelled, cancelled, "cancelled", "", entry, me, config_.terminal_ttl_seconds};
    store.finish(spec.id, f);
    metrics_->jobs_failed(spec_circuit, spec_priority, cancelled, split.tenant).Increment();
    return true;
  }
  if (verdict.kind == AdmissionVerdict::Kind::kRefuse) {
    fail(spec.id, verdict.code, verdict.message);
    return true;
  }
  if (!circuit_error.empty()) {
    fail(spec.id, ErrorCode::kUnknownCircuit, circuit_error);
    return true;
  }
  if (auto failure = check_job_before_reads(spec, circuit, unix_now())) {
    fail(spec.id, failure->code, failure->message);
    return true;
  }
  // Each witness is read only as far as its header and public inputs (the
  // worker that proves it checks its sha256 and size), on the job's own
  // threads: collect_reads() finishes the job.
  Reading job;
  job.raw = entry;
  job.digest = entry_sha256;
  job.tenant = split.tenant;
  job.keys = keys;
  job.spec = std::make_shared<const JobSpec>(std::move(spec));
  job.circuit = std::move(*circuit);
  job.resume = claim == JobStore::Claim::kResume;
  job.submitted_at = std::min(submitted_at, intake_time);
  job.deadline = Clock::now() + config_.intake_deadline;
  job.held_bytes = estimate_held_bytes(entry.size(), job.spec->partitions.size(),
                                       std::size_t(job.circuit.num_public) * scalar_field_bytes(job.circuit.curve));
  WitnessReads::Options options;
  options.num_public = job.circuit.num_public;
  // Each read is capped at the circuit's witness size and counts against
  // --memory-budget-mib while it lasts.
  options.max_bytes = witness_max_bytes(job.circuit.num_vars);
  options.budget = ReadBudget{&held_bytes_, config_.memory_budget_bytes};
  // A tenant's file:// witnesses only under its directory of each root,
  // its redis:// ones only from its own namespace (the workers apply the
  // same policy from the Task's tenant).
  options.policy = witness_policy_.tenant_policy(job.tenant);
  options.redis_url = config_.redis_url;
  options.deadline = job.deadline;
  options.readers = coordinator::kWitnessReadersPerJob;
  try {
    job.reads = std::make_unique<WitnessReads>(job.spec, std::move(options),
                                               [mailbox = read_ended_] { mailbox->push(0); });
  } catch (const std::system_error& e) {
    fail(job.spec->id, ErrorCode::kInternal, std::string("cannot start reading the job's witnesses: ") + e.what());
    return true;
  }
  if (job.reads->settled()) read_ended_->push(0);  // nothing to read (inputs only): no reader wakes us
  reading_.push_back(std::move(job));
  return false;
}

void Intake::collect_reads(JobStore& store) {
  // Deadline-failed jobs whose last reads ended: their threads join at once.
  std::erase_if(expired_reads_, [](const std::unique_ptr<WitnessReads>& reads) { return reads->idle(); });
  const auto now = Clock::now();
  for (std::size_t i = 0; i < reading_.size();) {
    if (!reading_[i].reads->settled() && now < reading_[i].deadline) {
      ++i;
      continue;
    }
    // Out of the list before anything can throw: a Redis error below leaves
    // the entry in the processing list for the next recovery pass.
    Reading job = std::move(reading_[i]);
    reading_.erase(reading_.begin() + static_cast<std::ptrdiff_t>(i));
    job.reads->stop();
    // Reads still in flight (a missed deadline) end by themselves; until then
    // they hold a slot (reading_slots) and their threads are joined later.
    const WitnessReads* reads = job.reads.get();
    if (!reads->idle()) expired_reads_.push_back(std::move(job.reads));
    try {
      finish_reading(store, job, *reads);
    } catch (const RedisError& e) {
      if (!is_wrong_type(e)) throw;
      ZKLOG(kWarning) << "rejected a queue entry whose job keys have the wrong type: " << e.what();
      store.reject_unattributable(config_.coordinator_id, job.raw,
                                  std::string("the job's Redis keys have the wrong type: ") + e.what());
      store.end_intake(config_.coordinator_id, job.digest);
      counted_.erase(job.digest);
    }
  }
}

void Intake::finish_reading(JobStore& farm_store, const Reading& job, const WitnessReads& reads) {
  const JobSpec& spec = *job.spec;
  JobStore store(farm_store.redis(), job.keys);
  if (const std::string error = reads.redis_error(); !error.empty())
    throw RedisError(RedisError::Kind::kConnection, "reading a witness of job " + spec.id + ": " + error);
  const std::string deadline_ms = std::to_string(config_.intake_deadline.count());
  // Every witness not read by now missed the deadline (check_job reports
  // the first failing partition).
  const WitnessReader read = [&](std::size_t partition, const WitnessRef& ref, std::uint32_t) -> WitnessRead {
    if (auto result = reads.result(partition)) return std::move(*result);
    return JobCheckFailure{ErrorCode::kWitnessUnavailable,
                           "witness " + ref.describe() + " not read within the intake deadline of " + deadline_ms +
                               " ms (--intake-deadline-ms): intake reads each witness's first bytes and gave up"};
  };
  auto checked = check_job(spec, job.circuit, unix_now(), read);
  const std::string me = config_.coordinator_id;
  if (auto* failure = std::get_if<JobCheckFailure>(&checked)) {
    fail_job(store, job.raw, spec.id, spec.circuit, priority_name(spec.priority), failure->code, failure->message);
  } else {
    PreparedJob prepared = std::move(std::get<PreparedJob>(checked));
    prepared.raw = job.raw;
    prepared.tenant = job.tenant;
    prepared.job_id = spec.id;
    prepared.spec.id = scheduled_job_id(job.tenant, spec.id);
    prepared.submitted_at = job.submitted_at;
    if (job.resume) prepared.stored_proofs = store.proofs(spec.id);
    prepared.held_bytes = estimate_held_bytes(prepared);
    ++active_jobs_;
    held_bytes_ += prepared.held_bytes;
    load_.delivered(job.tenant, prepared.spec.partitions.size());
    deliver_(std::move(prepared));
  }
  store.end_intake(me, job.digest);
  counted_.erase(job.digest);
}

void Intake::refresh_tenants(RedisClient& redis) {
  if (Clock::now() < tenants_read_) return;
  tenants_.clear();
  quotas_.clear();
  weights_.clear();
  for (const TenantRecord& r : load_tenants(redis, keys_)) {
    tenants_.push_back(r.name);
    quotas_[r.name] = TenantQuota{r.max_queued_jobs, r.max_active_partitions, r.max_job_bytes};
    weights_[r.name] = r.weight;
    metrics_->tenant_registered(r.name);  // its jobs' series carry its name from now on
  }
  tenants_read_ = Clock::now() + kTenantsRefresh;
}

std::uint64_t Intake::active_partitions(const std::string& tenant) const {
  std::uint64_t partitions = load_.usage(tenant).active_partitions;
  for (const auto& job : reading_)
    if (job.tenant == tenant) partitions += job.spec->partitions.size();
  return partitions;
}

std::uint32_t Intake::held_jobs(const std::string& tenant) const {
  std::uint32_t jobs = load_.usage(tenant).jobs;
  for (const auto& job : reading_)
    if (job.tenant == tenant) ++jobs;
  return jobs;
}

void Intake::count_tenant_queues(RedisClient& redis, JobStore& store) {
  refresh_tenants(redis);
  if (tenants_.empty()) return;  // the default tenant alone: as before tenants
  std::vector<std::string> names = {""};
  names.insert(names.end(), tenants_.begin(), tenants_.end());
  std::vector<std::uint64_t> counts;
  try {
    counts = store.queued_jobs(names);
  } catch (const RedisError& e) {
    // A tenant may give its own queue key another type: the counts wait
    // (its takes fail the same way), the others' jobs go on.
    if (e.kind() != RedisError::Kind::kReply) throw;
    ZKLOG_PEER(kWarning, kSubmissions) << "cannot count the tenants' queued jobs: " << e.what();
    return;
  }
  for (std::size_t i = 0; i < names.size(); ++i) queued_[names[i]] = counts[i];
  for (std::size_t i = 1; i < names.size(); ++i) {
    const TenantQuota& quota = quotas_[names[i]];
    if (quota.max_queued_jobs == 0 || counts[i] <= quota.max_queued_jobs) continue;
    // The newest beyond the limit leave the queue and fail (admission.h).
    for (const JobStore::Beyond& beyond :
         store.take_newest_beyond(config_.coordinator_id, names[i], quota.max_queued_jobs, kRefusalsPerPass)) {
      refusing_[beyond.entry] = beyond.queued_ahead;
      if (queued_[names[i]] > 0) --queued_[names[i]];
      handle_raw(redis, store, beyond.entry, /*may_hold=*/false);
    }
  }
}

void Intake::release_holds() {
  for (auto it = held_.begin(); it != held_.end();) {
    const auto quota = quotas_.find(it->first);
    bool release = quota == quotas_.end();  // no longer a tenant, or no longer limited
    if (!release) {
      TenantUsage usage;
      usage.active_partitions = active_partitions(it->first);
      release = admit_job(it->first, quota->second, usage, it->second).kind != AdmissionVerdict::Kind::kHold;
    }
    if (release) {
      ZKLOG(kInfo) << "tenant " << it->first << ": " << active_partitions(it->first)
                   << " active partitions; its held job is taken again";
      it = held_.erase(it);
    } else {
      ++it;
    }
  }
}

std::vector<std::string> Intake::tenants_to_take(RedisClient& redis, bool& default_tenant) {
  const std::vector<std::string>& turn = tenants_in_turn(redis);
  default_tenant = true;
  if (turn.empty()) return {};  // a farm without tenants: every slot is the default tenant's, as before
  // The slots' shares (intake.h): the default tenant first, then the turn.
  std::vector<TenantSlots> slots;
  slots.push_back(TenantSlots{TenantRecord::kDefaultWeight, held_jobs(""), queued_[""] > 0});
  for (const auto& name : turn) {
    const auto weight = weights_.find(name);
    slots.push_back(TenantSlots{weight == weights_.end() ? TenantRecord::kDefaultWeight : weight->second,
                                held_jobs(name), queued_[name] > 0});
  }
  const std::vector<std::uint32_t> caps = intake_slot_caps(config_.max_active_jobs, slots);
  default_tenant = slots[0].held < caps[0];
  std::vector<std::string> out;
  for (std::size_t i = 0; i < turn.size(); ++i)
    if (slots[i + 1].held < caps[i + 1] && !held_.count(turn[i])) out.push_back(turn[i]);
  return out;
}

const std::vector<std::string>& Intake::tenants_in_turn(RedisClient& redis) {
  refresh_tenants(redis);
  if (tenants_.size() > 1) {
    tenant_turn_ = (tenant_turn_ + 1) % tenants_.size();
    std::rotate(tenants_.begin(), tenants_.begin() + 1, tenants_.end());
  }
  return tenants_;
}

void Intake::sample_queue_depth(RedisClient& redis) {
  refresh_tenants(redis);
  // The default tenant's queues, then each registered tenant's; a tenant
  // no longer registered has its series set to 0 once.
  std::vector<std::string> tenants = {""};
  tenants.insert(tenants.end(), tenants_.begin(), tenants_.end());
  std::vector<std::vector<std::string>> commands;
  for (const auto& tenant : tenants) {
    const KeyLayout keys = tenant.empty() ? keys_ : keys_.for_tenant(tenant);
    for (Priority p : kAllPriorities) commands.push_back({"LLEN", keys.queue(p)});
  }
  const RedisReply lengths = redis.transaction(commands);
  const auto& replies = lengths.as_array();
  std::size_t index = 0;
  for (const auto& tenant : tenants)
    for (Priority p : kAllPriorities)
      if (index < replies.size())
        metrics_->queue_depth(priority_name(p), tenant).Set(static_cast<double>(replies[index++].as_integer()));
  for (const auto& gone : depth_tenants_)
    if (std::find(tenants_.begin(), tenants_.end(), gone) == tenants_.end())
      for (Priority p : kAllPriorities) metrics_->queue_depth(priority_name(p), gone).Set(0);
  depth_tenants_.assign(tenants_.begin(), tenants_.end());
}

}  // namespace zkfarm
