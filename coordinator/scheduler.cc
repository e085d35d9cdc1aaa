// scheduler.cc -- see scheduler.h.
#include "coordinator/scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "cluster/log.h"
#include "coordinator/result_assembly.h"

namespace zkfarm {

namespace {

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string label(ErrorCode code) { return std::string(error_name(code)); }

}  // namespace

Scheduler::Scheduler(SchedulerConfig config, SchedulerEffects& effects, metrics::CoordinatorMetrics& metrics)
    : config_(config), effects_(effects), metrics_(metrics) {}

// ---------------------------------------------------------------------------
// Jobs

bool Scheduler::add_job(ScheduledJob scheduled) {
  const std::string id = scheduled.id();
  if (jobs_.count(id)) return false;
  Job job;
  job.tenant = &tenant(scheduled.tenant);
  job.seq = next_seq_++;
  job.started = unix_seconds();
  job.partitions.resize(scheduled.spec->partitions.size());
  for (auto& [index, result] : scheduled.proved) {
    if (index >= job.partitions.size()) continue;
    job.partitions[index].phase = Phase::kProved;
    job.partitions[index].result = std::move(result);
    ++job.proved;
  }
  scheduled.proved.clear();
  job.scheduled = std::move(scheduled);
  const bool resumed = job.proved > 0;
  std::uint64_t rounds_ahead = 0;
  for (std::uint32_t i = 0; i < job.partitions.size(); ++i)
    if (job.partitions[i].phase == Phase::kPending) {
      make_pending(job, i, rounds_ahead++);
      if (resumed) metrics_.partitions_requeued("recovered", job.scheduled.tenant).Increment();
    }
  ZKLOG(kInfo) << "job " << id << " started: " << job.partitions.size() << " partitions, circuit "
               << job.spec().circuit.substr(0, 12) << ", priority " << priority_name(job.spec().priority)
               << (job.scheduled.tenant.empty() ? "" : ", tenant " + job.scheduled.tenant)
               << (job.proved ? ", " + std::to_string(job.proved) + " already proved" : "");
  seq_to_job_[job.seq] = id;
  job.tenant->active_partitions += job.partitions.size() - job.proved;
  const bool all = job.proved == job.partitions.size();
  auto [it, inserted] = jobs_.emplace(id, std::move(job));
  effects_.job_started(it->second.scheduled);
  if (all) complete_job(id);
  return true;
}

bool Scheduler::end_job(const std::string& id, ErrorCode code, const std::string& message) {
  if (!jobs_.count(id)) return false;
  fail_job(id, code, message);
  return true;
}

void Scheduler::expire(double unix_now, Clock::time_point now) {
  std::vector<std::string> expired;
  for (const auto& [id, job] : jobs_)
    if (job.spec().deadline_unix && *job.spec().deadline_unix < unix_now) expired.push_back(id);
  for (const auto& id : expired) fail_job(id, ErrorCode::kDeadlineExceeded, "deadline exceeded");
  // Proving past the task timeout is the device's; held past the witness
  // timeout before proving began is the witness's (file comment).
  std::vector<std::uint64_t> stalled, unfetched, unstarted;
  const bool witness_limit = config_.witness_timeout.count() > 0;
  for (const auto& [task_id, t] : tasks_) {
    auto j = jobs_.find(t.job_id);
    if (j == jobs_.end()) continue;
    if (t.ready) {
      const auto limit = task_timeout(j->second.spec().circuit);
      if (limit && now - *t.ready > *limit) stalled.push_back(task_id);
    } else if (t.witness) {
      if (witness_limit && now - *t.witness > config_.witness_timeout) unfetched.push_back(task_id);
    } else if (witness_limit && now - t.sent > config_.witness_timeout) {
      unstarted.push_back(task_id);
    }
  }
  auto take_back = [&](std::uint64_t task_id) -> std::optional<Task> {
    auto t = tasks_.find(task_id);
    if (t == tasks_.end()) return std::nullopt;
    Task task = t->second;
    settle(task);
    tasks_.erase(t);
    if (auto w = workers_.find(task.peer); w != workers_.end()) w->second.tasks.erase(task_id);
    effects_.send_cancel(task.peer, task_id, task.job_id);
    return task;
  };
  for (auto task_id : stalled) {
    const auto task = take_back(task_id);
    if (!task) continue;
    count_fault(task->identity, task->worker_id, "task timed out");
    auto j = jobs_.find(task->job_id);
    if (j != jobs_.end())
      partition_failed(j->second, task->partition, task->identity, ErrorCode::kTaskTimeout,
                       "worker " + task->worker_id + " did not finish within the task timeout");
  }
  for (auto task_id : unstarted) {
    // Never begun: the worker is stuck on another task (a slow witness), or
    // holds it without working on it. Neither is this partition's fault.
    const auto task = take_back(task_id);
    if (!task) continue;
    auto j = jobs_.find(task->job_id);
    if (j == jobs_.end()) continue;
    ZKLOG_PEER(kWarning, task->worker_id) << "task " << task_id << " (job " << task->job_id << " partition " << task->partition
                    << ") goes back to the queue: worker " << peer_text(task->worker_id) << " had not begun it after "
                    << config_.witness_timeout.count() / 1000 << " s";
    j->second.partitions[task->partition].avoid.insert(task->identity);
    requeue(task->job_id, task->partition, "notStarted");
  }
  for (auto task_id : unfetched) {
    const auto task = take_back(task_id);
    if (!task) continue;
    auto j = jobs_.find(task->job_id);
    if (j != jobs_.end())
      witness_failed(j->second, *task,
                     "worker " + task->worker_id + " was still reading the witness after " +
                         std::to_string(config_.witness_timeout.count() / 1000) + " s (witness timeout)");
  }
}

void Scheduler::fail_job(const std::string& job_id, ErrorCode code, const std::string& message) {
  auto j = jobs_.find(job_id);
  if (j == jobs_.end()) return;
  release_tasks(j->second);
  const std::string state = code == ErrorCode::kCancelled ? kStateCancelled : kStateFailed;
  ZKLOG(kWarning) << "job " << job_id << " " << state << ": " << message;
  const ScheduledJob ended = std::move(j->second.scheduled);
  jobs_.erase(j);
  metrics_.jobs_failed(ended.spec->circuit, priority_name(ended.spec->priority), error_name(code), ended.tenant)
      .Increment();
  effects_.job_finished(ended, JobEnd{state, code, message, std::nullopt});
}

void Scheduler::complete_job(const std::string& job_id) {
  auto j = jobs_.find(job_id);
  if (j == jobs_.end()) return;
  Job& job = j->second;
  std::vector<PartitionResult> partitions;
  partitions.reserve(job.partitions.size());
  for (auto& p : job.partitions) partitions.push_back(std::move(*p.result));
  JobResult result = assemble_job_result(job_id, job.spec().circuit, job.scheduled.curve, unix_seconds() - job.started,
                                         std::move(partitions));
  release_tasks(job);
  const ScheduledJob ended = std::move(job.scheduled);
  const std::size_t count = job.partitions.size();
  jobs_.erase(j);
  effects_.job_finished(ended, JobEnd{kStateDone, std::nullopt, "", std::move(result)});
  ZKLOG(kInfo) << "job " << job_id << " done: " << count << " partitions verified";
  const std::string priority = priority_name(ended.spec->priority);
  metrics_.jobs_completed(ended.spec->circuit, priority, ended.tenant).Increment();
  metrics_.job_latency(ended.spec->circuit, priority, ended.tenant)
      .Observe(std::max(0.0, unix_seconds() - ended.submitted_at));
}

void Scheduler::release_tasks(Job& job) {
  const std::string& id = job.spec().id;
  for (std::uint32_t i = 0; i < job.partitions.size(); ++i) {
    Partition& p = job.partitions[i];
    if (p.phase == Phase::kPending) pending_set(job, p.pending_key).erase(p.pending_key);
    if (p.phase != Phase::kAssigned) continue;
    auto t = tasks_.find(p.task_id);
    if (t == tasks_.end()) continue;
    effects_.send_cancel(t->second.peer, p.task_id, id);
    if (auto w = workers_.find(t->second.peer); w != workers_.end()) w->second.tasks.erase(p.task_id);
    settle(t->second);
    tasks_.erase(t);
  }
  seq_to_job_.erase(job.seq);
  job.tenant->active_partitions -= job.partitions.size() - job.proved;  // the job ends
}

void Scheduler::make_pending(Job& job, std::uint32_t partition, std::uint64_t rounds_ahead) {
  Partition& p = job.partitions[partition];
  p.pending_since = now();
  const int priority = static_cast<int>(job.spec().priority);
  const double deadline = job.spec().deadline_unix.value_or(std::numeric_limits<double>::infinity());
  if (job.spec().priority == Priority::kCritical) {
    p.pending_key = {priority, deadline, critical_round_ + rounds_ahead, job.seq, partition};
    critical_pending_.insert(p.pending_key);
    return;
  }
  Tenant& t = *job.tenant;
  p.pending_key = {priority, deadline, t.current_round[static_cast<std::size_t>(priority)] + rounds_ahead, job.seq,
                   partition};
  if (t.pending.empty()) {
    // Its work arrives: at the farm's virtual time, not below (idle time
    // earns no credit), and the aging clock starts.
    t.virtual_time = std::max(t.virtual_time, virtual_now_);
    t.served_at = p.pending_since;
  }
  t.pending.insert(p.pending_key);
}

std::set<Scheduler::PendingKey>& Scheduler::pending_set(const Job& job, const PendingKey& key) {
  return std::get<0>(key) == static_cast<int>(Priority::kCritical) ? critical_pending_ : job.tenant->pending;
}

// ---------------------------------------------------------------------------
// Tenants

Scheduler::Tenant& Scheduler::tenant(const std::string& name) {
  auto [it, inserted] = tenants_.try_emplace(name);
  if (inserted) {
    it->second.name = name;
    if (auto p = policy_.tenants.find(name); p != policy_.tenants.end()) it->second.policy = p->second;
    it->second.cursor = it->second.pending.end();
  }
  return it->second;
}

void Scheduler::set_tenants(FairSharePolicy policy) {
  for (const auto& [name, p] : policy.tenants)
    if (!std::isfinite(p.weight) || p.weight < 0)
      throw std::invalid_argument("tenant " + (name.empty() ? std::string("(default)") : name) + ": weight " +
                                  std::to_string(p.weight) + " is not a finite number >= 0");
  policy_ = std::move(policy);
  for (auto& [name, t] : tenants_) {
    auto p = policy_.tenants.find(name);
    t.policy = p == policy_.tenants.end() ? TenantPolicy{} : p->second;
  }
}

double Scheduler::dispatch_charge(const std::string& circuit) const {
  auto it = fastest_task_.find(circuit);
  return std::max(kMinTaskCharge, it == fastest_task_.end() ? kUnmeasuredTaskCharge : it->second);
}

void Scheduler::settle(const Task& task) {
  if (!task.tenant) return;
  Tenant& t = *task.tenant;
  const double held = std::chrono::duration<double>(now() - task.sent).count();
  const double rest = std::max(0.0, held - task.charged);  // never negative: virtual time only grows
  t.worker_seconds += rest;
  if (t.in_flight > 0) --t.in_flight;
  if (task.reserved) {
    t.reserved_seconds += rest;
    if (t.reserved_in_flight > 0) --t.reserved_in_flight;
  } else {
    t.virtual_time += rest / (t.policy.weight > 0 ? t.policy.weight : 1.0);
  }
}

Scheduler::Pick Scheduler::pick_tenant(const std::vector<Tenant*>& candidates, Clock::time_point now) const {
  const Tenant* reserve = nullptr;   // 2a
  const Tenant* starved = nullptr;   // 2a's aging
  const Tenant* weighted = nullptr;  // 2b
  const Tenant* leftover = nullptr;  // 2c
  const auto limit = policy_.starvation_limit;
  for (const Tenant* t : candidates) {
    if (t->cursor == t->pending.end()) continue;  // nothing a worker can take now
    if (t->reserved_in_flight < t->policy.reserved_workers) {
      // Smallest fraction of the reservation in use (cross-multiplied), then
      // virtual time, then the name (candidates are in name order).
      auto in_use = [](const Tenant& x, const Tenant& y) {
        return std::uint64_t{x.reserved_in_flight} * y.policy.reserved_workers;
      };
      if (!reserve || in_use(*t, *reserve) < in_use(*reserve, *t) ||
          (in_use(*t, *reserve) == in_use(*reserve, *t) && t->virtual_time < reserve->virtual_time))
        reserve = t;
    }
    if (t->policy.weight > 0) {
      if (limit.count() > 0 && now - t->served_at > limit && (!starved || t->served_at < starved->served_at))
        starved = t;
      if (!weighted || t->virtual_time < weighted->virtual_time ||
          (t->virtual_time == weighted->virtual_time && t->in_flight < weighted->in_flight))
        weighted = t;
    } else if (!leftover || t->virtual_time < leftover->virtual_time) {
      leftover = t;
    }
  }
  auto mut = [](const Tenant* t) { return const_cast<Tenant*>(t); };
  if (reserve) {
    if (starved) return {mut(starved), starved->reserved_in_flight < starved->policy.reserved_workers, false};
    return {mut(reserve), true, false};
  }
  if (weighted) return {mut(weighted), false, true};
  return {mut(leftover), false, false};
}

void Scheduler::requeue(const std::string& job_id, std::uint32_t partition, std::string_view reason) {
  auto j = jobs_.find(job_id);
  if (j == jobs_.end()) return;
  Partition& p = j->second.partitions[partition];
  if (p.phase != Phase::kAssigned) return;
  p.phase = Phase::kPending;
  p.task_id = 0;
  make_pending(j->second, partition);
  metrics_.partitions_requeued(reason, j->second.scheduled.tenant).Increment();
}

// ---------------------------------------------------------------------------
// Workers

std::string Scheduler::identity(const std::string& worker_id, const std::string& curve_key) {
  return curve_key.empty() ? worker_id : "key:" + curve_key;
}

void Scheduler::add_worker(const std::string& peer, WorkerOffer offer, const std::string& carry_from) {
  Worker w;
  w.peer = peer;
  w.worker_id = std::move(offer.worker_id);
  w.identity = identity(w.worker_id, offer.curve_key);
  w.curves = std::move(offer.curves);
  w.loaded = std::move(offer.loaded);
  // What the device holds, as the worker said (a worker that did not say is
  // held to its first grant), within the coordinator's policy.
  w.max_tasks = std::min(offer.max_tasks > 0 ? offer.max_tasks : offer.credits, config_.max_tasks_per_worker);
  w.curve_key = std::move(offer.curve_key);
  // The same process saying hello again keeps what it holds, clocks and all:
  // a re-sent Hello neither requeues a task nor restarts its timeout.
  if (auto old = workers_.find(carry_from); !carry_from.empty() && old != workers_.end()) {
    if (old->second.identity == w.identity) {
      w.tasks.swap(old->second.tasks);
      w.quarantined = old->second.quarantined;
      for (std::uint64_t task_id : w.tasks)
        if (auto t = tasks_.find(task_id); t != tasks_.end()) t->second.peer = peer;
    }
    if (carry_from != peer) remove_worker(carry_from, "workerRestarted");
  }
  const std::uint32_t room = w.max_tasks > w.tasks.size() ? w.max_tasks - static_cast<std::uint32_t>(w.tasks.size()) : 0;
  w.credits = std::min(offer.credits, room);
  workers_[peer] = std::move(w);
}

std::optional<std::chrono::milliseconds> Scheduler::task_timeout(const std::string& circuit) const {
  if (config_.task_timeout) {
    if (config_.task_timeout->count() <= 0) return std::nullopt;
    return *config_.task_timeout;
  }
  auto it = slowest_task_.find(circuit);
  if (it == slowest_task_.end()) return coordinator::kTaskTimeoutBeforeMeasurement;
  const auto derived = std::chrono::milliseconds(
      static_cast<std::int64_t>(it->second * coordinator::kTaskTimeoutMultiplier * 1000.0));
  return std::max(derived, config_.task_timeout_floor);
}

void Scheduler::remove_worker(const std::string& peer, std::string_view reason) {
  auto it = workers_.find(peer);
  if (it == workers_.end()) return;
  const Worker& w = it->second;
  // A session lost while holding tasks (a death, a restart) requeues them
  // without an attempt; done again and again it is a fault (a worker must
  // not hold tasks across endless hellos for free), and the requeued
  // partitions go elsewhere first.
  if (!w.tasks.empty())
    note_failure(w.identity, w.worker_id, "lostTasks",
                 "its session ended holding " + std::to_string(w.tasks.size()) + " task(s)");
  for (std::uint64_t task_id : w.tasks) {
    auto t = tasks_.find(task_id);
    if (t == tasks_.end()) continue;
    ZKLOG_PEER(kInfo, w.worker_id) << "task " << task_id << " (job " << t->second.job_id << " partition " << t->second.partition
                 << ") goes back to the queue: worker " << peer_text(w.worker_id) << " "
                 << (reason == "workerDead" ? "died" : "replaced by a new hello");
    const std::string job_id = t->second.job_id;
    const std::uint32_t partition = t->second.partition;
    settle(t->second);
    tasks_.erase(t);
    if (auto j = jobs_.find(job_id); j != jobs_.end()) j->second.partitions[partition].avoid.insert(w.identity);
    requeue(job_id, partition, reason);
  }
  workers_.erase(it);
}

void Scheduler::grant_credits(const std::string& peer, std::uint32_t credits) {
  auto it = workers_.find(peer);
  if (it == workers_.end()) return;
  // Credits and tasks in flight never exceed what the device holds. Sum in
  // 64 bits: a hostile grant must not wrap around the cap.
  Worker& w = it->second;
  const std::uint64_t room = w.max_tasks > w.tasks.size() ? w.max_tasks - w.tasks.size() : 0;
  w.credits = static_cast<std::uint32_t>(std::min<std::uint64_t>(std::uint64_t{w.credits} + credits, room));
}

void Scheduler::withdraw_credits(const std::string& peer, std::uint32_t credits) {
  if (auto it = workers_.find(peer); it != workers_.end()) it->second.credits -= std::min(it->second.credits, credits);
}

void Scheduler::set_loaded(const std::string& peer, std::set<std::string> loaded) {
  if (auto it = workers_.find(peer); it != workers_.end()) it->second.loaded = std::move(loaded);
}

void Scheduler::set_witness_pending(const std::string& peer, const std::set<std::uint64_t>& task_ids) {
  auto w = workers_.find(peer);
  if (w == workers_.end()) return;
  std::set<std::string> touched;
  for (std::uint64_t id : w->second.tasks) {
    auto t = tasks_.find(id);
    if (t == tasks_.end()) continue;
    const bool pending = task_ids.count(id) > 0;
    if (t->second.witness_pending != pending) touched.insert(t->second.job_id);
    t->second.witness_pending = pending;
  }
  for (auto it = witness_pending_reported_.begin(); it != witness_pending_reported_.end();) {
    if (!jobs_.count(it->first)) it = witness_pending_reported_.erase(it);
    else touched.insert((it++)->first);
  }
  for (const auto& job_id : touched) {
    auto j = jobs_.find(job_id);
    if (j == jobs_.end()) continue;
    std::uint32_t count = 0;
    for (const auto& [id, task] : tasks_)
      if (task.job_id == job_id && task.witness_pending) ++count;
    auto [it, inserted] = witness_pending_reported_.try_emplace(job_id, 0);
    if (!inserted && it->second == count) continue;
    if (inserted && count == 0) continue;
    it->second = count;
    effects_.witness_pending_changed(j->second.scheduled, count);
  }
}

void Scheduler::set_draining(const std::string& peer) {
  if (auto it = workers_.find(peer); it != workers_.end()) it->second.draining = true;
}

std::optional<Scheduler::WorkerView> Scheduler::worker(const std::string& peer) const {
  auto it = workers_.find(peer);
  if (it == workers_.end()) return std::nullopt;
  return WorkerView{it->second.credits, it->second.tasks.size(), &it->second.loaded, it->second.quarantined};
}

std::uint64_t Scheduler::active_partitions(const std::string& tenant) const {
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? 0 : it->second.active_partitions;
}

std::uint32_t Scheduler::faults(const std::string& identity) const {
  auto it = faults_.find(identity);
  return it == faults_.end() ? 0 : it->second;
}

void Scheduler::count_fault(const std::string& identity, const std::string& worker_id, const std::string& why) {
  const std::uint32_t n = ++faults_[identity];
  metrics_.worker_faults(worker_id).Increment();
  effects_.faults_changed(worker_id, +1);
  if (n < config_.quarantine_after) return;
  const std::string curve_key = identity.rfind("key:", 0) == 0 ? identity.substr(4) : "";
  ZKLOG(kError) << "worker " << peer_text(worker_id) << (curve_key.empty() ? "" : " (CURVE key " + curve_key + ")")
                << " quarantined after " << n << " faults (last: " << peer_text(why) << ")";
  // Every session of the identity stops getting tasks, and what it holds
  // goes back to pending (cancelled at the worker): a rogue must not keep
  // its partitions until they time out.
  std::set<std::string> ids = {worker_id};
  std::vector<std::uint64_t> held;
  for (auto& [peer, w] : workers_)
    if (w.identity == identity) {
      w.quarantined = true;
      ids.insert(w.worker_id);
      held.insert(held.end(), w.tasks.begin(), w.tasks.end());
      w.tasks.clear();
    }
  for (const auto& id : ids) {
    effects_.worker_quarantined(id, curve_key);
    metrics_.worker_quarantined(id).Set(1);
  }
  for (std::uint64_t task_id : held) {
    auto t = tasks_.find(task_id);
    if (t == tasks_.end()) continue;
    const Task task = t->second;
    settle(task);
    tasks_.erase(t);
    effects_.send_cancel(task.peer, task_id, task.job_id);
    if (auto j = jobs_.find(task.job_id); j != jobs_.end()) j->second.partitions[task.partition].avoid.insert(identity);
    requeue(task.job_id, task.partition, "workerQuarantined");
  }
}

void Scheduler::refund_fault(const std::string& identity, const std::string& worker_id) {
  if (faults_[identity] > 0) --faults_[identity];
  effects_.faults_changed(worker_id, -1);
}

void Scheduler::note_failure(const std::string& identity, const std::string& worker_id, std::string_view kind,
                             const std::string& what) {
  const auto now = this->now();
  auto [it, first] = last_failure_.try_emplace({identity, std::string(kind)}, now);
  const bool repeated = !first && now - it->second < coordinator::kRepeatedErrorWindow;
  it->second = now;
  // Old entries go once the map grows (one per identity and kind seen).
  if (last_failure_.size() > 4096)
    std::erase_if(last_failure_,
                  [&](const auto& entry) { return now - entry.second >= coordinator::kRepeatedErrorWindow; });
  if (repeated) count_fault(identity, worker_id, "repeated " + std::string(kind) + ": " + what);
}

void Scheduler::witness_failed(Job& job, const Task& task, const std::string& message) {
  Partition& p = job.partitions[task.partition];
  p.witness_failed[task.identity] = task.worker_id;
  if (p.witness_failed.size() >= coordinator::kWitnessFailuresToFailJob) {
    std::string workers;
    for (const auto& [identity, worker_id] : p.witness_failed) workers += (workers.empty() ? "" : ", ") + worker_id;
    fail_job(job.spec().id, ErrorCode::kWitnessUnavailable,
             "partition " + std::to_string(task.partition) + ": the witness could not be read on " +
                 std::to_string(p.witness_failed.size()) + " different workers (" + workers + "); last: " + message);
    return;
  }
  p.phase = Phase::kAssigned;
  partition_failed(job, task.partition, task.identity, ErrorCode::kWitnessUnavailable, message);
}

// ---------------------------------------------------------------------------
// Tasks

std::uint64_t Scheduler::free_credits() const {
  std::uint64_t free = 0;
  for (const auto& [peer, w] : workers_)
    if (!w.draining && !w.quarantined) free += w.credits;
  return free;
}

Scheduler::Placement Scheduler::place(const PendingKey& key, const Pick& pick, std::vector<std::string>& unverifiable) {
  const auto [priority, deadline, round, seq, partition] = key;
  auto seq_it = seq_to_job_.find(seq);
  if (seq_it == seq_to_job_.end()) return Placement::kGone;
  auto job_it = jobs_.find(seq_it->second);
  if (job_it == jobs_.end()) return Placement::kGone;
  Job& job = job_it->second;
  Partition& p = job.partitions[partition];
  const std::string& circuit = job.spec().circuit;
  Worker* best = nullptr;
  bool any_capable_unavoided = false;
  auto score = [&](const Worker& w) {
    return std::make_tuple(!p.avoid.count(w.identity), w.loaded.count(circuit) > 0, w.credits);
  };
  bool any_checker = false;
  for (auto& [peer, w] : workers_) {
    if (w.draining || w.quarantined || !w.curves.count(job.scheduled.curve)) continue;
    if (!p.claims.empty() && !can_check_claims(p, w)) continue;
    any_checker = true;
    if (!p.avoid.count(w.identity)) any_capable_unavoided = true;
    if (w.credits == 0) continue;
    if (!best || score(w) > score(*best)) best = &w;
  }
  if (!p.claims.empty() && !any_checker) {
    unverifiable.push_back(job.spec().id);
    return Placement::kSkipped;
  }
  // A worker that failed this partition gets it again only when no other
  // capable worker exists at all (a farm of one must still retry).
  if (!best || (p.avoid.count(best->identity) && any_capable_unavoided)) return Placement::kSkipped;
  const std::uint64_t task_id = next_task_id_++;
  const Clock::time_point sent = now();
  if (p.pending_since != Clock::time_point{})
    metrics_.partition_dispatch_wait(priority_name(job.spec().priority), job.scheduled.tenant)
        .Observe(std::chrono::duration<double>(sent - p.pending_since).count());
  effects_.send_task(TaskOrder{task_id, best->peer, best->worker_id, &job.scheduled, partition, p.attempts});
  --best->credits;
  best->tasks.insert(task_id);
  best->loaded.insert(circuit);  // it will load it: prefer it for the rest of the job
  Task task{job.spec().id, partition, best->peer, best->worker_id, best->identity, sent};
  // The tenant pays for it (file comment, "virtual time").
  Tenant& t = *job.tenant;
  task.tenant = &t;
  task.charged = dispatch_charge(circuit);
  task.reserved = pick.reserved;
  ++t.in_flight;
  t.served_at = sent;
  t.worker_seconds += task.charged;
  if (task.reserved) {
    ++t.reserved_in_flight;
    t.reserved_seconds += task.charged;
  } else {
    if (pick.weighted) virtual_now_ = std::max(virtual_now_, t.virtual_time);
    t.virtual_time += task.charged / (t.policy.weight > 0 ? t.policy.weight : 1.0);
  }
  tasks_[task_id] = std::move(task);
  p.phase = Phase::kAssigned;
  p.task_id = task_id;
  ZKLOG(kDebug) << "task " << task_id << ": job " << job.spec().id << " partition " << partition << " -> "
                << peer_text(best->worker_id);
  auto& current =
      priority == static_cast<int>(Priority::kCritical) ? critical_round_ : t.current_round[static_cast<std::size_t>(priority)];
  current = std::max(current, round);
  return Placement::kPlaced;
}

void Scheduler::dispatch() {
  // Nothing below changes a credit but the ones it spends: counted once.
  std::uint64_t free = free_credits();
  if (free == 0) return;
  std::vector<std::string> unverifiable;  // jobs with a claim no connected worker can check
  // 1. Critical partitions of every tenant.
  for (auto it = critical_pending_.begin(); it != critical_pending_.end() && free > 0;) {
    switch (place(*it, Pick{}, unverifiable)) {
      case Placement::kGone: it = critical_pending_.erase(it); break;
      case Placement::kPlaced:
        it = critical_pending_.erase(it);
        --free;
        break;
      case Placement::kSkipped: ++it; break;
    }
  }
  // 2. A tenant per free slot; each one's partitions in order, those no
  // worker can take passed over for the rest of this call (credits only
  // go down in it, so they stay so).
  std::vector<Tenant*> candidates;
  if (free > 0)
    for (auto& [name, t] : tenants_)
      if (!t.pending.empty()) {
        t.cursor = t.pending.begin();
        candidates.push_back(&t);
      }
  const Clock::time_point now = this->now();
  while (free > 0) {
    const Pick pick = pick_tenant(candidates, now);
    if (!pick.tenant) break;
    Tenant& t = *pick.tenant;
    while (t.cursor != t.pending.end()) {
      const Placement placed = place(*t.cursor, pick, unverifiable);
      if (placed == Placement::kSkipped) {
        ++t.cursor;
        continue;
      }
      t.cursor = t.pending.erase(t.cursor);
      if (placed == Placement::kPlaced) {
        --free;
        break;
      }
    }
  }
  for (const auto& id : unverifiable) {
    auto j = jobs_.find(id);
    if (j == jobs_.end()) continue;
    for (std::uint32_t i = 0; i < j->second.partitions.size(); ++i) {
      const Partition& p = j->second.partitions[i];
      if (p.phase != Phase::kPending || p.claims.empty()) continue;
      const Claim& claim = p.claims.begin()->second;
      fail_job(id, claim.code,
               "partition " + std::to_string(i) + ": " + claim.message + " (reported by worker " + claim.worker_id +
                   "; no other worker connected to confirm it)");
      break;
    }
  }
}

bool Scheduler::can_check_claims(const Partition& p, const Worker& w) { return !p.claims.count(w.identity); }

void Scheduler::on_bad_input_claim(Job& job, std::uint32_t partition, const Task& task, ErrorCode code,
                                   const std::string& message) {
  Partition& p = job.partitions[partition];
  for (const auto& [identity, claim] : p.claims) {
    if (identity == task.identity) continue;
    // A distinct second worker agrees: the input is bad.
    fail_job(job.spec().id, code,
             "partition " + std::to_string(partition) + ": " + message + " (confirmed by worker " + task.worker_id +
                 " after worker " + claim.worker_id + " reported " + std::string(error_name(claim.code)) + ")");
    return;
  }
  ZKLOG_PEER(kWarning, task.worker_id) << "job " << job.spec().id << " partition " << partition << ": worker " << peer_text(task.worker_id)
                  << " says the input is bad (" << error_name(code)
                  << "); checking it on another worker before failing the job";
  p.claims[task.identity] = Claim{code, message, task.worker_id};
  p.avoid.insert(task.identity);
  p.phase = Phase::kPending;
  p.task_id = 0;
  make_pending(job, partition);
  metrics_.partitions_requeued("badInputClaim", job.scheduled.tenant).Increment();
}

std::optional<AcceptedResult> Scheduler::on_result(const std::string& peer, std::uint64_t task_id) {
  auto t = tasks_.find(task_id);
  if (t == tasks_.end() || t->second.peer != peer) return std::nullopt;
  Task task = t->second;
  settle(task);
  tasks_.erase(t);
  if (auto w = workers_.find(peer); w != workers_.end()) w->second.tasks.erase(task_id);
  auto j = jobs_.find(task.job_id);
  if (j == jobs_.end()) return std::nullopt;
  Job& job = j->second;
  Partition& p = job.partitions[task.partition];
  p.phase = Phase::kVerifying;
  metrics_.partitions_proved(job.spec().circuit, job.scheduled.tenant).Increment();
  AcceptedResult accepted;
  accepted.job_id = task.job_id;
  accepted.partition = task.partition;
  accepted.worker_id = task.worker_id;
  accepted.identity = task.identity;
  accepted.attempt = p.attempts;
  accepted.prepared = job.scheduled.prepared;
  accepted.received = now();
  accepted.worker_seconds = std::chrono::duration<double>(accepted.received - task.sent).count();
  if (task.proving) accepted.proving_seconds = std::chrono::duration<double>(accepted.received - *task.proving).count();
  if (p.pending_since != Clock::time_point{})
    accepted.wait_seconds = std::chrono::duration<double>(task.sent - p.pending_since).count();
  return accepted;
}

void Scheduler::on_verified(const AcceptedResult& r, bool valid, const std::string& reason, PartitionResult result) {
  auto j = jobs_.find(r.job_id);
  if (j == jobs_.end()) return;  // failed or cancelled meanwhile
  Job& job = j->second;
  Partition& p = job.partitions[r.partition];
  if (p.phase != Phase::kVerifying) return;
  if (!valid) {
    ZKLOG_PEER(kWarning, r.worker_id) << "job " << r.job_id << " partition " << r.partition << ": proof from worker " << peer_text(r.worker_id)
                    << " is invalid: " << peer_text(reason);
    p.invalid_by[r.identity] = r.worker_id;
    metrics_.partitions_invalid(job.spec().circuit, r.worker_id, job.scheduled.tenant).Increment();
    count_fault(r.identity, r.worker_id, "invalid proof");
    if (p.invalid_by.size() >= coordinator::kInvalidProofsToBlameWitness) {
      // Different devices (identities) agree: the witness, not the devices.
      for (const auto& [identity, worker_id] : p.invalid_by) refund_fault(identity, worker_id);
      fail_job(r.job_id, ErrorCode::kUnsatisfied,
               "partition " + std::to_string(r.partition) + ": proofs from " + std::to_string(p.invalid_by.size()) +
                   " different workers failed verification: the witness does not satisfy the circuit");
      return;
    }
    partition_failed(job, r.partition, r.identity, ErrorCode::kInvalidProof, "proof failed verification");
    return;
  }
  // Proving to result, the task timeout's measure (never the fetch).
  if (r.proving_seconds) {
    double& slowest = slowest_task_[job.spec().circuit];
    slowest = std::max(slowest, *r.proving_seconds);
  }
  // Dispatch to result, the fair share's charge at dispatch (a verified
  // result only: a forged instant one must not lower it).
  if (auto [fastest, first] = fastest_task_.try_emplace(job.spec().circuit, r.worker_seconds); !first)
    fastest->second = std::min(fastest->second, r.worker_seconds);
  for (const auto& [identity, claim] : p.claims)
    count_fault(identity, claim.worker_id, "said the input of job " + r.job_id + " partition " + std::to_string(r.partition) +
                               " was bad (" + std::string(error_name(claim.code)) + "), but worker " +
                               r.worker_id + " proved it");
  p.claims.clear();
  p.phase = Phase::kProved;
  p.result = std::move(result);
  ++job.proved;
  --job.tenant->active_partitions;
  metrics_.partitions_verified(job.spec().circuit, job.scheduled.tenant).Increment();
  effects_.partition_proved(job.scheduled, *p.result);
  ZKLOG(kInfo) << "job " << r.job_id << " partition " << r.partition << " verified (" << job.proved << "/"
               << job.partitions.size() << ")";
  if (job.proved == job.partitions.size()) complete_job(r.job_id);
}

void Scheduler::partition_failed(Job& job, std::uint32_t partition, const std::string& identity, ErrorCode code,
                                 const std::string& message) {
  Partition& p = job.partitions[partition];
  ++p.attempts;
  p.avoid.insert(identity);
  effects_.attempt_failed(job.scheduled, partition);
  // A job may ask for fewer attempts than the farm allows, never more.
  const std::uint32_t max_attempts =
      std::min(config_.max_attempts, job.spec().max_attempts.value_or(config_.max_attempts));
  if (p.attempts >= max_attempts) {
    // Refund faults for invalid proofs: with every attempt invalid we cannot
    // tell a bad witness from bad devices.
    for (const auto& [invalid_identity, worker_id] : p.invalid_by) refund_fault(invalid_identity, worker_id);
    fail_job(job.spec().id, code,
             "partition " + std::to_string(partition) + " failed " + std::to_string(p.attempts) +
                 " attempts; last error: " + message);
    return;
  }
  p.phase = Phase::kPending;
  p.task_id = 0;
  make_pending(job, partition);
  metrics_.partitions_retried(job.spec().circuit, label(code), job.scheduled.tenant).Increment();
}

void Scheduler::on_task_error(const std::string& peer, std::uint64_t task_id, ErrorCode code,
                              const std::string& worker_message) {
  auto t = tasks_.find(task_id);
  if (t == tasks_.end() || t->second.peer != peer) return;
  // The worker's words go into the job's error as one line of printable
  // text, bounded; into the log escaped and capped (peer_text).
  const std::string message = printable(std::string_view(worker_message).substr(0, coordinator::kMaxWorkerMessageBytes));
  Task task = t->second;
  settle(task);
  tasks_.erase(t);
  if (auto w = workers_.find(peer); w != workers_.end()) w->second.tasks.erase(task_id);
  auto j = jobs_.find(task.job_id);
  if (j == jobs_.end()) return;
  ZKLOG_PEER(kWarning, task.worker_id) << "job " << task.job_id << " partition " << task.partition << ": worker " << peer_text(task.worker_id)
                  << " reported " << error_name(code) << ": " << peer_text(worker_message);
  // The ErrorCode table (schema/error_code.h) decides: a claim that the
  // input is bad, the worker's own failure (retried elsewhere), or neither
  // (cancelled: requeued without counting an attempt).
  if (claims_bad_input(code)) {
    on_bad_input_claim(j->second, task.partition, task, code, message);
    return;
  }
  if (code == ErrorCode::kWitnessUnavailable) {
    witness_failed(j->second, task, message);
    return;
  }
  // Any other error is the worker's own: repeated, it is a fault. (A task
  // the coordinator cancelled is no longer held, so a "cancelled" answer
  // for a held one is the worker's own too.) Not so the circuit's artifacts:
  // a store missing a file or holding another one (or a generator changed
  // under its record) fails on every honest worker alike, and counting it
  // would quarantine them all; such a task is still retried elsewhere and
  // its attempts counted.
  const bool about_the_circuit = code == ErrorCode::kUnknownCircuit || code == ErrorCode::kBadCircuit ||
                                 code == ErrorCode::kArtifactChecksum;
  if (!about_the_circuit)
    note_failure(task.identity, task.worker_id, error_name(code),
                 "job " + task.job_id + " partition " + std::to_string(task.partition));
  if (!retried_elsewhere(code)) {
    j->second.partitions[task.partition].avoid.insert(task.identity);
    requeue(task.job_id, task.partition, error_name(code));
    return;
  }
  j->second.partitions[task.partition].phase = Phase::kAssigned;
  partition_failed(j->second, task.partition, task.identity, code, message);
}

void Scheduler::on_witness_started(const std::string& peer, std::uint64_t task_id) {
  auto t = tasks_.find(task_id);
  if (t == tasks_.end() || t->second.peer != peer || t->second.witness) return;
  t->second.witness = now();
}

void Scheduler::on_witness_ready(const std::string& peer, std::uint64_t task_id) {
  auto t = tasks_.find(task_id);
  if (t == tasks_.end() || t->second.peer != peer || t->second.ready) return;
  t->second.ready = now();
  if (!t->second.witness) t->second.witness = t->second.ready;
}

void Scheduler::on_proving(const std::string& peer, std::uint64_t task_id) {
  auto t = tasks_.find(task_id);
  if (t == tasks_.end() || t->second.peer != peer || t->second.proving) return;
  t->second.proving = now();
  if (!t->second.ready) t->second.ready = t->second.proving;
  if (!t->second.witness) t->second.witness = t->second.proving;
}

// ---------------------------------------------------------------------------
// State for gauges and status

void Scheduler::update_gauges() {
  std::array<double, 4> active{}, pending{};
  auto slot = [](Priority priority) {
    const auto index = static_cast<std::size_t>(priority);
    return index < 4 ? index : 3;
  };
  for (const auto& [id, job] : jobs_) ++active[slot(job.spec().priority)];
  pending[slot(Priority::kCritical)] += static_cast<double>(critical_pending_.size());
  for (const auto& [name, t] : tenants_)
    for (const auto& key : t.pending) ++pending[slot(static_cast<Priority>(std::get<0>(key)))];
  for (std::size_t i = 0; i < 4; ++i) {
    const std::string name = priority_name(static_cast<Priority>(i));
    metrics_.jobs_active(name).Set(active[i]);
    metrics_.partitions_pending(name).Set(pending[i]);
  }
  metrics_.partitions_in_flight().Set(static_cast<double>(tasks_.size()));
}

SchedulerSnapshot Scheduler::snapshot() const {
  SchedulerSnapshot s;
  for (const auto& [id, job] : jobs_) {
    SchedulerSnapshot::Job j;
    j.id = id;
    j.circuit = job.spec().circuit;
    j.tenant = job.scheduled.tenant;
    j.priority = job.spec().priority;
    j.deadline_unix = job.spec().deadline_unix;
    j.partitions = static_cast<std::uint32_t>(job.partitions.size());
    for (const auto& p : job.partitions) {
      switch (p.phase) {
        case Phase::kPending: ++j.pending; break;
        case Phase::kAssigned: ++j.assigned; break;
        case Phase::kVerifying: ++j.verifying; break;
        case Phase::kProved: ++j.proved; break;
      }
    }
    s.jobs.push_back(std::move(j));
  }
  for (const auto& [peer, w] : workers_)
    s.workers.push_back({peer, w.worker_id, w.credits, static_cast<std::uint32_t>(w.tasks.size()), faults(w.identity),
                         w.draining, w.quarantined});
  for (const auto& [name, t] : tenants_)
    s.tenants.push_back({name, t.policy, static_cast<std::uint32_t>(t.pending.size()), t.in_flight,
                         t.reserved_in_flight, t.active_partitions, t.worker_seconds, t.reserved_seconds,
                         t.virtual_time});
  s.tasks_in_flight = tasks_.size();
  return s;
}

}  // namespace zkfarm
