// worker_sessions.h -- the coordinator's side of the worker protocol: one
// session per connected worker, over the router link.
//
// A session starts with a Hello (protocol version, worker id, quarantine
// checked; Welcome or Reject), lives on heartbeats (resident circuits, the
// worker's Redis record refreshed: due records are written together by
// flush_records(), one round trip per tick) and credits, and ends when the worker
// dies (the link reports silence past dead_after), says hello again
// (restart) or is replaced by a new session of the same worker id. Every
// message to a worker is built here (Welcome, Reject, Task, Cancel).
// Scheduling state (credits, tasks, curves) lives in the Scheduler; this
// class tells it about sessions starting and ending and forwards credits,
// results and errors.
//
// Threading: the scheduler thread only (as the Scheduler).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "coordinator/busy_meter.h"
#include "cluster/job_result.h"
#include "cluster/keys.h"
#include "cluster/log_limiter.h"
#include "cluster/redis_client.h"
#include "coordinator/config.h"
#include "coordinator/router_link.h"
#include "coordinator/scheduler.h"
#include "monitoring/metrics/metrics.h"
#include "schema/messages.h"
#include "schema/wire_model.h"

namespace zkfarm {

// The worker's stage timings.
StageSeconds stage_seconds_from_wire(wire::StageTimings::Reader timings);

class WorkerSessions {
 public:
  struct Session {
    std::string peer, worker_id, hostname, device_name, device_uuid, curve_key;
    int device_ordinal = -1;  // -1: CPU backend
    BusyMeter busy;           // from heartbeats (status page)
    std::uint64_t session_id = 0;
    std::chrono::steady_clock::time_point redis_refreshed{};
    // The resident circuit list last reported (capped, as sent) and the
    // registered ids of it: an unchanged list is not looked up again.
    std::vector<std::string> loaded_reported;
    std::set<std::string> loaded_registered;
  };
  // on_result: a Result from a worker with a session (the coordinator takes
  // it to the scheduler and the verifier).
  WorkerSessions(const CoordinatorConfig& config, RouterLink& link, RedisClient& redis, Scheduler& scheduler,
                 metrics::CoordinatorMetrics& metrics, const std::atomic<bool>& stopping,
                 std::function<void(const Session&, wire::Result::Reader)> on_result);

  // Everything the link reports (messages, deaths, missed heartbeats).
  // Throws kj::Exception for a message that fails to read, RedisError when
  // Redis fails for longer than a retry.
  void on_link(const LinkEvent& event);

  // Messages to workers.
  void send_task(const TaskOrder& order);
  void send_cancel(const std::string& peer, std::uint64_t task_id, const std::string& job_id);

  const Session* find(const std::string& peer) const;
  // Reports warnings held back by the rate limit (call periodically).
  void flush_warnings();
  // Writes the worker records that heartbeats made due, all in one round
  // trip (call once per tick). Throws RedisError when Redis fails for longer
  // than a retry (the records stay due).
  void flush_records();
  std::size_t size() const { return sessions_.size(); }
  // Seconds a worker record lives without a refresh: max(kWorkerRecordMinTtl,
  // kWorkerRecordTtlDeadAfters x dead_after).
  std::string record_ttl() const;

 private:
  void on_hello(const std::string& peer, const std::string& curve_key, wire::Hello::Reader hello,
                bool envelope_version_ok);
  // Why worker_id may not start a session from peer with curve_key, or "".
  // Under CURVE a key is one worker: it may say hello only as the ids the
  // allowlist lists for it (ids=), else as the first id it said hello as
  // (<prefix>key_workers; HDEL it there to rebind); and a worker id is bound
  // to the first key it said hello with (<prefix>worker_keys; HDEL it there
  // to rebind); without CURVE a second
  // live session of an id is refused unless it is the same process
  // reconnecting (same session id).
  std::string identity_refusal(const std::string& peer, const std::string& curve_key, const std::string& worker_id,
                               std::uint64_t session_id);
  // Rate-limited warnings per peer (flushed by flush_warnings()).
  bool warn_allowed(const std::string& peer);
  void on_dead(const std::string& peer);
  // Ends a session: its tasks go back to pending (unless tasks_carried: the
  // scheduler hands them to the new session of the same process), its
  // record says "gone".
  void drop(const std::string& peer, const char* why, bool tasks_carried = false);
  void refresh_record(Session& s, const char* state);
  // The commands that rewrite s's record (one MULTI ... EXEC), with its
  // resident circuits' <prefix>pce sets; every key they touch expires.
  std::vector<std::vector<std::string>> record_commands(Session& s, const char* state);
  // The registered circuit ids among the first kMaxLoadedCircuits of list
  // (one SMISMEMBER, skipped when the list is the one s last reported).
  // Throws RedisError as with_redis.
  std::set<std::string> registered_loaded(Session& s, capnp::List<capnp::Text>::Reader list);

  void send_reject(const std::string& peer, wire::ErrorCode code, const std::string& message);
  template <class F>
  auto with_redis(F&& fn) -> decltype(fn());

  const CoordinatorConfig& config_;
  KeyLayout keys_;
  RouterLink& link_;
  RedisClient& redis_;
  Scheduler& scheduler_;
  metrics::CoordinatorMetrics& metrics_;
  const std::atomic<bool>& stopping_;
  std::function<void(const Session&, wire::Result::Reader)> on_result_;
  std::map<std::string, Session> sessions_;  // by peer
  std::set<std::string> records_due_;        // peers whose record flush_records() writes
  LogLimiter warnings_;
};

}  // namespace zkfarm
