// job_store.cc -- see job_store.h. The Lua scripts are the contract: read
// them first ($kName in a script is the job hash field JobStore::kName).
#include "cluster/job_store.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>

#include "base/digest.h"
#include "cluster/artifacts.h"
#include "schema/error_code.h"

namespace zkfarm {
namespace {

// The script `text` with every $kName replaced by JobStore::kName as a Lua
// string: the scripts name job hash fields through the constants only.
// Throws std::logic_error for a $kName that is not a field (a typo fails the
// script's first use, in every test that runs it).
std::string with_fields(std::string_view text) {
  static const std::pair<std::string_view, const char*> kFields[] = {
      {"kState", JobStore::kState},
      {"kOwner", JobStore::kOwner},
      {"kCircuit", JobStore::kCircuit},
      {"kPriority", JobStore::kPriority},
      {"kPartitions", JobStore::kPartitions},
      {"kSpec", JobStore::kSpec},
      {"kEntrySha256", JobStore::kEntrySha256},
      {"kSubmittedAt", JobStore::kSubmittedAt},
      {"kStartedAt", JobStore::kStartedAt},
      {"kDeadline", JobStore::kDeadline},
      {"kFinishedAt", JobStore::kFinishedAt},
      {"kProved", JobStore::kProved},
      {"kAttempts", JobStore::kAttempts},
      {"kCancelRequested", JobStore::kCancelRequested},
      {"kErrorCode", JobStore::kErrorCode},
      {"kError", JobStore::kError},
  };
  std::string out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t dollar = text.find('$', pos);
    out += text.substr(pos, dollar - pos);
    if (dollar == std::string_view::npos) return out;
    std::size_t end = dollar + 1;
    while (end < text.size() && std::isalnum(static_cast<unsigned char>(text[end]))) ++end;
    const std::string_view name = text.substr(dollar + 1, end - dollar - 1);
    const char* field = nullptr;
    for (const auto& [constant, value] : kFields)
      if (constant == name) field = value;
    if (!field) throw std::logic_error("job store script names an unknown field $" + std::string(name));
    out += '\'';
    out += field;
    out += '\'';
    pos = end;
  }
}

// KEYS: the queues to take from, best first (each priority's, critical
// first, with every tenant's queue of that priority in the caller's order),
// the processing list last. ARGV: the number of tenants n, then each
// tenant's name in the order of its queues within a priority ("" for the
// default tenant, whose entries go into the processing list as they are).
const std::string kTakeNextScript = with_fields(R"lua(
local n = tonumber(ARGV[1])
for i = 1, #KEYS - 1 do
  local item = redis.call('RPOP', KEYS[i])
  if item then
    local tenant = ARGV[2 + (i - 1) % n]
    if tenant ~= '' then item = '\31' .. tenant .. '\31' .. item end
    redis.call('LPUSH', KEYS[#KEYS], item)
    return item
  end
end
return false
)lua");

// KEYS: a tenant's queues in take order (critical first), the processing
// list. ARGV: the limit, the most to take, the tenant. Returns a flat
// array: entry, jobs queued ahead of it, entry, ... (the newest first).
const std::string kTakeNewestBeyondScript = R"lua(
local total = 0
for i = 1, #KEYS - 1 do total = total + redis.call('LLEN', KEYS[i]) end
local out = {}
local limit, most = tonumber(ARGV[1]), tonumber(ARGV[2])
local taken = 0
for i = #KEYS - 1, 1, -1 do
  while total - taken > limit and taken < most do
    local item = redis.call('LPOP', KEYS[i])
    if not item then break end
    taken = taken + 1
    item = '\31' .. ARGV[3] .. '\31' .. item
    redis.call('LPUSH', KEYS[#KEYS], item)
    out[#out + 1] = item
    out[#out + 1] = total - taken
  end
end
return out
)lua";

// KEYS: the processing list, the queue. ARGV: the processing entry, the
// queue entry.
const std::string kReturnToQueueScript = R"lua(
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[2])
return 1
)lua";

// KEYS: dead's lease, processing:<dead>, processing:<me>, cancels:<dead>,
// cancels:<me>. ARGV: key prefix, dead, me, then every registered tenant's
// name (whose cancels:<dead> move too). Job hashes are named from the
// prefix, the entry's tenant and each job's id (standalone Redis only, like
// the rest).
const std::string kTakeOverScript = with_fields(R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local moved = 0
while true do
  local raw = redis.call('LMOVE', KEYS[2], KEYS[3], 'RIGHT', 'LEFT')
  if not raw then break end
  moved = moved + 1
  local prefix = ARGV[1]
  if string.byte(raw, 1) == 31 then
    local sep = string.find(raw, '\31', 2, true)
    if sep then
      prefix = prefix .. 't:' .. string.sub(raw, 2, sep - 1) .. ':'
      raw = string.sub(raw, sep + 1)
    end
  end
  local ok, job = pcall(cjson.decode, raw)
  if ok and type(job) == 'table' and type(job.id) == 'string' then
    local key = prefix .. 'job:' .. job.id
    if redis.call('HGET', key, $kOwner) == ARGV[2] then redis.call('HSET', key, $kOwner, ARGV[3]) end
  end
end
local function move_cancels(from, to)
  for _, id in ipairs(redis.call('SMEMBERS', from)) do redis.call('SADD', to, id) end
  redis.call('DEL', from)
end
move_cancels(KEYS[4], KEYS[5])
for i = 4, #ARGV do
  local tenant = ARGV[1] .. 't:' .. ARGV[i] .. ':cancels:'
  move_cancels(tenant .. ARGV[2], tenant .. ARGV[3])
end
return moved
)lua");

// KEYS: job hash, index:running, the four index:queued (critical first).
// ARGV: owner, now, circuit, priority, partitions, spec, entry digest ("":
// no check), id, deadline ("": none). Returns {"new"} | {"resume"} | {"terminal", state} |
// {"elsewhere", owner} | {"duplicate", state}. A record without
// entry_sha256 (written before it existed) matches any entry. Whatever the
// outcome but a duplicate, the job leaves the queued index; a job this
// owner runs is in the running index (a resume adds one that ran before the
// index existed).
const std::string kClaimScript = with_fields(R"lua(
local state, owner, digest, started =
  unpack(redis.call('HMGET', KEYS[1], $kState, $kOwner, $kEntrySha256, $kStartedAt))
if state and ARGV[7] ~= '' and digest and digest ~= ARGV[7] then
  return {'duplicate', state}
end
for i = 3, 6 do redis.call('ZREM', KEYS[i], ARGV[8]) end
if state == 'done' or state == 'failed' or state == 'cancelled' then
  return {'terminal', state}
end
if owner and owner ~= '' then
  if owner == ARGV[1] then
    redis.call('ZADD', KEYS[2], 'NX', tonumber(started or '') or tonumber(ARGV[2]), ARGV[8])
    return {'resume'}
  end
  return {'elsewhere', owner}
end
redis.call('HSET', KEYS[1], $kState, 'running', $kOwner, ARGV[1], $kStartedAt, ARGV[2],
           $kCircuit, ARGV[3], $kPriority, ARGV[4], $kPartitions, ARGV[5], $kSpec, ARGV[6],
           $kProved, '0', $kAttempts, '0')
if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], $kEntrySha256, ARGV[7]) end
if ARGV[9] ~= '' then redis.call('HSET', KEYS[1], $kDeadline, ARGV[9]) end
redis.call('HSETNX', KEYS[1], $kSubmittedAt, ARGV[2])
redis.call('ZADD', KEYS[2], tonumber(ARGV[2]), ARGV[8])
return {'new'}
)lua");

// KEYS: processing, setaside list, intake attempts, job ("" for none), done,
// events list, index:running, the four index:queued, recent:failed:setAside.
// ARGV: raw, digest, set-aside entry, now, ttl, error, event, channel, owner,
// id, failed ids kept per code, the digest job:<id> records for this entry.
// Returns 1 when the job was failed.
const std::string kSetAsideScript = with_fields(R"lua(
redis.call('LREM', KEYS[1], 1, ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[2])
redis.call('RPUSH', KEYS[2], ARGV[3])
redis.call('LTRIM', KEYS[2], -1000, -1)
if KEYS[4] == '' then return 0 end
local state, owner, digest = unpack(redis.call('HMGET', KEYS[4], $kState, $kOwner, $kEntrySha256))
if state == 'done' or state == 'failed' or state == 'cancelled' then return 0 end
if state and digest and digest ~= ARGV[12] then return 0 end
if owner and owner ~= '' and owner ~= ARGV[9] then return 0 end
redis.call('HSET', KEYS[4], $kState, 'failed', $kFinishedAt, ARGV[4], $kErrorCode, 'setAside',
           $kError, ARGV[6], $kEntrySha256, ARGV[12])
redis.call('HSETNX', KEYS[4], $kSubmittedAt, ARGV[4])
for i = 7, 11 do redis.call('ZREM', KEYS[i], ARGV[10]) end
redis.call('ZADD', KEYS[12], tonumber(ARGV[4]), ARGV[10])
redis.call('ZREMRANGEBYRANK', KEYS[12], 0, -1 - tonumber(ARGV[11]))
redis.call('RPUSH', KEYS[5], 'failed')
redis.call('RPUSH', KEYS[6], ARGV[7])
local ttl = tonumber(ARGV[5])
if ttl > 0 then
  for _, k in ipairs({KEYS[4], KEYS[5], KEYS[6]}) do redis.call('EXPIRE', k, ttl) end
end
redis.call('PUBLISH', ARGV[8], ARGV[7])
return 1
)lua");

// KEYS: job, processing, done, events list, result, proofs, recent:done,
// recent:failed:<its code>, stats:<this minute>, index:running, the four
// index:queued.
// ARGV: state, error_code, error, now, ttl, raw, result_json, event, channel,
// id, failed ids kept per code, the tenant's stats field prefix ("" for the
// default tenant: tenant_stats_field).
// Besides the job's own keys it records the job in the recent list of its
// outcome (the failed ones per code) and counts it (with its latency when
// done) in the minute's stats, the farm's fields and its tenant's, once: a
// repeated finish returns before. The job leaves the indexes of queued and
// running jobs in any case.
const std::string kFinishScript = with_fields(R"lua(
local cur = redis.call('HGET', KEYS[1], $kState)
if KEYS[2] ~= '' and ARGV[6] ~= '' then redis.call('LREM', KEYS[2], 1, ARGV[6]) end
for i = 10, 14 do redis.call('ZREM', KEYS[i], ARGV[10]) end
if cur == 'done' or cur == 'failed' or cur == 'cancelled' then return 0 end
redis.call('HSET', KEYS[1], $kState, ARGV[1], $kFinishedAt, ARGV[4], $kErrorCode, ARGV[2],
           $kError, ARGV[3])
local now = tonumber(ARGV[4])
local recent = KEYS[8]
local prefixes = {''}
if ARGV[12] ~= '' then prefixes[2] = ARGV[12] end
local submitted = tonumber(redis.call('HGET', KEYS[1], $kSubmittedAt) or '')
if ARGV[1] == 'done' then recent = KEYS[7] end
for _, p in ipairs(prefixes) do
  if ARGV[1] == 'done' then
    redis.call('HINCRBY', KEYS[9], p .. 'jobs_done', 1)
    if submitted then
      local latency = math.max(now - submitted, 0)
      redis.call('HINCRBYFLOAT', KEYS[9], p .. 'latency_sum', latency)
      redis.call('HINCRBY', KEYS[9], p .. 'latency_count', 1)
      local max = tonumber(redis.call('HGET', KEYS[9], p .. 'latency_max') or '0')
      if latency > max then redis.call('HSET', KEYS[9], p .. 'latency_max', latency) end
    end
  else
    redis.call('HINCRBY', KEYS[9], p .. 'jobs_failed', 1)
  end
end
redis.call('EXPIRE', KEYS[9], 7200)
redis.call('ZADD', recent, now, ARGV[10])
redis.call('ZREMRANGEBYRANK', recent, 0, ARGV[1] == 'done' and -1001 or -1 - tonumber(ARGV[11]))
if ARGV[7] ~= '' then redis.call('SET', KEYS[5], ARGV[7]) end
redis.call('RPUSH', KEYS[3], ARGV[1])
redis.call('RPUSH', KEYS[4], ARGV[8])
local ttl = tonumber(ARGV[5])
if ttl > 0 then
  for _, k in ipairs({KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[6]}) do
    redis.call('EXPIRE', k, ttl)
  end
end
redis.call('PUBLISH', ARGV[9], ARGV[8])
return 1
)lua");

// KEYS: job, queue, index:queued of its priority. ARGV: now, circuit,
// priority, partitions, json, digest, id, deadline ("": none). Returns ""
// when queued, else the existing job's state.
const std::string kSubmitScript = with_fields(R"lua(
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.call('HGET', KEYS[1], $kState) or 'unknown'
end
redis.call('HSET', KEYS[1], $kState, 'queued', $kSubmittedAt, ARGV[1], $kCircuit, ARGV[2],
           $kPriority, ARGV[3], $kPartitions, ARGV[4], $kEntrySha256, ARGV[6])
if ARGV[8] ~= '' then redis.call('HSET', KEYS[1], $kDeadline, ARGV[8]) end
redis.call('LPUSH', KEYS[2], ARGV[5])
redis.call('ZADD', KEYS[3], tonumber(ARGV[1]), ARGV[7])
return ''
)lua");

// KEYS: job, done, events list, recent:failed:cancelled, the four
// index:queued.
// ARGV: now, ttl, event, channel, cancels prefix, job key prefix, failed ids
// kept per code.
const std::string kCancelScript = with_fields(R"lua(
local state = redis.call('HGET', KEYS[1], $kState)
if not state then return 'unknown' end
if state == 'done' or state == 'failed' or state == 'cancelled' then return 'terminal:' .. state end
local owner = redis.call('HGET', KEYS[1], $kOwner)
if owner and owner ~= '' then
  redis.call('HSET', KEYS[1], $kCancelRequested, '1')
  redis.call('SADD', ARGV[5] .. owner, string.sub(KEYS[1], string.len(ARGV[6]) + 1))
  return 'requested'
end
redis.call('HSET', KEYS[1], $kState, 'cancelled', $kFinishedAt, ARGV[1], $kErrorCode, 'cancelled',
           $kError, 'cancelled before a coordinator took it')
redis.call('RPUSH', KEYS[2], 'cancelled')
redis.call('RPUSH', KEYS[3], ARGV[3])
local ttl = tonumber(ARGV[2])
if ttl > 0 then
  for i = 1, 3 do redis.call('EXPIRE', KEYS[i], ttl) end
end
local id = string.sub(KEYS[1], string.len(ARGV[6]) + 1)
for i = 5, 8 do redis.call('ZREM', KEYS[i], id) end
redis.call('ZADD', KEYS[4], tonumber(ARGV[1]), id)
redis.call('ZREMRANGEBYRANK', KEYS[4], 0, -1 - tonumber(ARGV[7]))
redis.call('PUBLISH', ARGV[4], ARGV[3])
return 'cancelled'
)lua");

// KEYS: job, events list. ARGV: partition, proof json, event, channel, proofs
// key, stats:<this minute> (counts the partition and its worker seconds
// once, in the farm's fields and, when ARGV[7] is a tenant's field prefix,
// in its tenant's), worker seconds.
const std::string kStoreProofScript = with_fields(R"lua(
local added = redis.call('HSET', ARGV[5], ARGV[1], ARGV[2])
if added == 1 then
  redis.call('HINCRBY', KEYS[1], $kProved, 1)
  local prefixes = {''}
  if ARGV[7] ~= '' then prefixes[2] = ARGV[7] end
  local seconds = tonumber(ARGV[8]) or 0
  for _, p in ipairs(prefixes) do
    redis.call('HINCRBY', ARGV[6], p .. 'partitions', 1)
    if seconds > 0 then redis.call('HINCRBYFLOAT', ARGV[6], p .. 'worker_seconds', seconds) end
  end
  redis.call('EXPIRE', ARGV[6], 7200)
end
redis.call('RPUSH', KEYS[2], ARGV[3])
redis.call('PUBLISH', ARGV[4], ARGV[3])
return added
)lua");

// The client functions a tenant calls (FCALL): tenants may run no script
// of their own (EVAL is refused them), only these, which are the submit
// and cancel scripts above, and which Redis runs with the tenant's ACL (so
// they reach its own namespace only). The version in the names changes
// with the scripts' contract.
constexpr const char* kFunctionLibrary = "zkfarm_jobs_1";
constexpr const char* kSubmitFunction = "zkfarm_submit_1";
constexpr const char* kCancelFunction = "zkfarm_cancel_1";

std::string format_time(double t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", t);
  return buf;
}

}  // namespace

std::string entry_digest(std::string_view raw) {
  return sha256_hex(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(raw.data()), raw.size()));
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

long long unix_minute(double unix_seconds) { return static_cast<long long>(unix_seconds / 60); }

std::string event_json(const std::string& id, const std::string& type, const std::string& extra) {
  nlohmann::json e = {{"job", id}, {"type", type}, {"time", unix_now()}};
  std::string s = e.dump();
  if (!extra.empty()) {
    s.pop_back();
    s += "," + extra + "}";
  }
  return s;
}

std::optional<std::string> JobStore::take_next(const std::string& owner, const std::vector<std::string>& tenants,
                                               bool default_tenant) {
  if (tenants.empty() && !default_tenant) return std::nullopt;
  std::vector<std::string> keys;
  std::vector<std::string> args = {std::to_string(tenants.size() + (default_tenant ? 1 : 0))};
  std::vector<KeyLayout> layouts;
  if (default_tenant) {
    layouts.push_back(keys_);
    args.push_back("");
  }
  for (const auto& tenant : tenants) {
    layouts.push_back(keys_.for_tenant(tenant));
    args.push_back(tenant);
  }
  for (Priority p : kAllPriorities)
    for (const auto& layout : layouts) keys.push_back(layout.queue(p));
  keys.push_back(keys_.processing(owner));
  RedisReply r = redis_.eval(kTakeNextScript, keys, args);
  if (r.is_nil()) return std::nullopt;
  return r.as_string();
}

std::vector<std::uint64_t> JobStore::queued_jobs(const std::vector<std::string>& tenants) {
  std::vector<std::vector<std::string>> commands;
  for (const auto& tenant : tenants) {
    const KeyLayout layout = tenant.empty() ? keys_ : keys_.for_tenant(tenant);
    for (Priority p : kAllPriorities) commands.push_back({"LLEN", layout.queue(p)});
  }
  std::vector<std::uint64_t> out(tenants.size(), 0);
  if (commands.empty()) return out;
  const std::vector<RedisReply> lengths = redis_.pipeline(commands);
  for (std::size_t i = 0; i < lengths.size() && i / kAllPriorities.size() < out.size(); ++i)
    out[i / kAllPriorities.size()] += static_cast<std::uint64_t>(lengths[i].as_integer());
  return out;
}

std::vector<JobStore::Beyond> JobStore::take_newest_beyond(const std::string& owner, const std::string& tenant,
                                                           std::uint64_t limit, std::uint64_t most) {
  const KeyLayout layout = keys_.for_tenant(tenant);
  std::vector<std::string> keys;
  for (Priority p : kAllPriorities) keys.push_back(layout.queue(p));
  keys.push_back(keys_.processing(owner));
  const RedisReply r =
      redis_.eval(kTakeNewestBeyondScript, keys, {std::to_string(limit), std::to_string(most), tenant});
  std::vector<Beyond> out;
  const auto& a = r.as_array();
  for (std::size_t i = 0; i + 1 < a.size(); i += 2)
    out.push_back(Beyond{a[i].as_string(), static_cast<std::uint64_t>(a[i + 1].as_integer())});
  return out;
}

bool JobStore::return_to_queue(const std::string& owner, const std::string& entry, Priority priority) {
  const ProcessingEntry split = split_processing_entry(entry);
  const KeyLayout layout = split.tenant.empty() ? keys_ : keys_.for_tenant(split.tenant);
  return redis_.eval(kReturnToQueueScript, {keys_.processing(owner), layout.queue(priority)}, {entry, split.raw})
             .as_integer() == 1;
}

std::optional<std::string> JobStore::wait_critical(const std::string& owner,
                                                   std::chrono::milliseconds timeout) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.3f", timeout.count() / 1000.0);
  RedisReply r = redis_.blocking_command(
      {"BLMOVE", keys_.queue(Priority::kCritical), keys_.processing(owner), "RIGHT", "LEFT", seconds},
      timeout);
  if (r.is_nil()) return std::nullopt;
  return r.as_string();
}

std::vector<std::string> JobStore::processing(const std::string& owner) {
  std::vector<std::string> out;
  RedisReply reply = redis_.command({"LRANGE", keys_.processing(owner), "0", "-1"});
  for (const auto& e : reply.as_array()) out.push_back(e.as_string());
  return out;
}

JobStore::Claim JobStore::claim(const JobSpec& spec, const std::string& owner, std::string* detail,
                                const std::string& digest) {
  std::vector<std::string> keys = {keys_.job(spec.id), keys_.running_index()};
  for (Priority p : kAllPriorities) keys.push_back(keys_.queued_index(p));
  RedisReply r = redis_.eval(kClaimScript, keys,
                             {owner, format_time(unix_now()), spec.circuit, priority_name(spec.priority),
                              std::to_string(spec.partitions.size()), spec.to_json(), digest, spec.id,
                              spec.deadline_unix ? format_time(*spec.deadline_unix) : std::string()});
  const auto& a = r.as_array();
  if (a.empty()) throw RedisError(RedisError::Kind::kProtocol, "claim script returned nothing");
  const std::string& what = a[0].as_string();
  if (detail && a.size() > 1) *detail = a[1].as_string();
  if (what == "new") return Claim::kNew;
  if (what == "resume") return Claim::kResume;
  if (what == "terminal") return Claim::kTerminal;
  if (what == "duplicate") return Claim::kDuplicate;
  return Claim::kOwnedElsewhere;
}

bool JobStore::renew_lease(const std::string& owner, std::chrono::milliseconds ttl, bool first) {
  const std::string ms = std::to_string(std::max<long long>(ttl.count(), 1));
  RedisReply r = redis_.transaction({{"SET", keys_.coordinator_lease(owner), format_time(unix_now()), "PX", ms,
                                      "XX"},
                                     {"SET", keys_.coordinator_lease(owner), format_time(unix_now()), "PX", ms},
                                     {"SADD", keys_.coordinators(), owner}});
  return first || !r.as_array().at(0).is_nil();
}

std::vector<std::string> JobStore::expired_coordinators(const std::string& me) {
  std::vector<std::string> out;
  RedisReply ids = redis_.command({"SMEMBERS", keys_.coordinators()});
  for (const auto& id : ids.as_array()) {
    const std::string& other = id.as_string();
    if (other == me) continue;
    if (redis_.command({"EXISTS", keys_.coordinator_lease(other)}).as_integer() == 1) continue;
    if (redis_.command({"LLEN", keys_.processing(other)}).as_integer() == 0) continue;
    out.push_back(other);
  }
  return out;
}

std::size_t JobStore::take_over(const std::string& dead, const std::string& me,
                                const std::vector<std::string>& tenants) {
  std::vector<std::string> args = {keys_.prefix(), dead, me};
  args.insert(args.end(), tenants.begin(), tenants.end());
  RedisReply r = redis_.eval(kTakeOverScript,
                             {keys_.coordinator_lease(dead), keys_.processing(dead), keys_.processing(me),
                              keys_.cancels(dead), keys_.cancels(me)},
                             args);
  return static_cast<std::size_t>(r.as_integer());
}

void JobStore::drop_processing(const std::string& owner, const std::string& raw) {
  redis_.command({"LREM", keys_.processing(owner), "1", raw});
}

namespace {
// A queue entry as recorded in <p>rejected or <p>setaside: its first 4 KiB,
// as a string (it need not be valid UTF-8 or JSON).
nlohmann::json entry_record(const std::string& owner, const std::string& raw, const std::string& error_code,
                            const std::string& error) {
  return {{"time", unix_now()}, {"error_code", error_code}, {"error", error},
          {"job", raw.substr(0, 4096)}, {"coordinator", owner}};
}
}  // namespace

void JobStore::reject_unattributable(const std::string& owner, const std::string& raw, const std::string& error,
                                     const std::string& error_code) {
  const std::string entry =
      entry_record(owner, raw, error_code, error).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  redis_.transaction({{"RPUSH", keys_.rejected(), entry},
                      {"LTRIM", keys_.rejected(), "-1000", "-1"},
                      {"LREM", keys_.processing(owner), "1", raw}});
}

long JobStore::begin_intake(const std::string& owner, const std::string& digest) {
  return static_cast<long>(redis_.command({"HINCRBY", keys_.intake_attempts(owner), digest, "1"}).as_integer());
}

void JobStore::end_intake(const std::string& owner, const std::string& digest) {
  redis_.command({"HDEL", keys_.intake_attempts(owner), digest});
}

void JobStore::set_aside(const std::string& owner, const std::string& raw, const std::string& id, long crashes,
                         const std::string& reason, long ttl_seconds, const std::string& job_digest) {
  nlohmann::json entry = entry_record(owner, raw, "setAside", reason);
  entry["crashes"] = crashes;
  if (!id.empty()) entry["id"] = id;
  const std::string event =
      id.empty() ? std::string()
                 : event_json(id, "finished",
                              "\"state\":\"failed\",\"error_code\":\"setAside\",\"error\":" + nlohmann::json(reason).dump());
  std::vector<std::string> keys = {keys_.processing(owner),
                                   keys_.set_aside(),
                                   keys_.intake_attempts(owner),
                                   id.empty() ? std::string() : keys_.job(id),
                                   id.empty() ? std::string() : keys_.done(id),
                                   id.empty() ? std::string() : keys_.job_events(id),
                                   keys_.running_index()};
  for (Priority p : kAllPriorities) keys.push_back(keys_.queued_index(p));
  keys.push_back(keys_.recent_failed(error_name(ErrorCode::kSetAside)));
  redis_.eval(kSetAsideScript, keys,
              {raw, entry_digest(raw), entry.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
               format_time(unix_now()), std::to_string(ttl_seconds), reason, event, keys_.events_channel(), owner,
               id, std::to_string(kRecentFailedPerCode), job_digest.empty() ? entry_digest(raw) : job_digest});
}

std::map<std::uint32_t, std::string> JobStore::proofs(const std::string& id) {
  std::map<std::uint32_t, std::string> out;
  RedisReply reply = redis_.command({"HGETALL", keys_.job_proofs(id)});
  const auto& a = reply.as_array();
  for (std::size_t i = 0; i + 1 < a.size(); i += 2) {
    try {
      out[static_cast<std::uint32_t>(std::stoul(a[i].as_string()))] = a[i + 1].as_string();
    } catch (const std::exception&) {
      // A field that is not a partition number was not written by us: ignore.
    }
  }
  return out;
}

void JobStore::store_proof(const std::string& id, std::uint32_t partition, const std::string& proof_json,
                           const std::string& event, const std::vector<std::vector<std::string>>& also,
                           double worker_seconds) {
  const std::vector<std::string> keys = {keys_.job(id), keys_.job_events(id)};
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.6f", std::isfinite(worker_seconds) ? std::max(worker_seconds, 0.0) : 0.0);
  const std::vector<std::string> args = {std::to_string(partition),
                                         proof_json,
                                         event,
                                         keys_.events_channel(),
                                         keys_.job_proofs(id),
                                         keys_.stats_minute(unix_minute(unix_now())),
                                         keys_.tenant().empty() ? std::string() : tenant_stats_field(keys_.tenant(), ""),
                                         seconds};
  if (also.empty()) {
    redis_.eval(kStoreProofScript, keys, args);
    return;
  }
  // EVALSHA and the rest in one round trip; a Redis that lost the script
  // (restart, SCRIPT FLUSH) answers NOSCRIPT and ran only the rest: the
  // store is then made again by eval(), which loads the script.
  std::vector<std::vector<std::string>> commands;
  commands.push_back({"EVALSHA", sha1_hex(kStoreProofScript), std::to_string(keys.size())});
  commands[0].insert(commands[0].end(), keys.begin(), keys.end());
  commands[0].insert(commands[0].end(), args.begin(), args.end());
  commands.insert(commands.end(), also.begin(), also.end());
  try {
    redis_.pipeline(commands);
    return;
  } catch (const RedisError& e) {
    if (e.kind() != RedisError::Kind::kReply || std::string(e.what()).rfind("NOSCRIPT", 0) != 0) throw;
  }
  redis_.eval(kStoreProofScript, keys, args);
}

void JobStore::event(const std::string& id, const std::string& event) {
  redis_.transaction({{"RPUSH", keys_.job_events(id), event}, {"PUBLISH", keys_.events_channel(), event}});
}

bool JobStore::finish(const std::string& id, const Finish& f) {
  nlohmann::json extra = {{"state", f.state}};
  if (!f.error.empty()) extra["error"] = f.error;
  if (!f.error_code.empty()) extra["error_code"] = f.error_code;
  std::string extra_text = extra.dump();
  extra_text = extra_text.substr(1, extra_text.size() - 2);
  const std::string event = event_json(id, "finished", extra_text);
  const double now = unix_now();
  // Only the table's names make keys: a code from elsewhere is "unknown".
  const std::string code = parse_error_code(f.error_code) ? f.error_code : std::string(error_name(ErrorCode::kUnknown));
  std::vector<std::string> keys = {keys_.job(id),
                                   f.owner.empty() ? std::string() : keys_.processing(f.owner),
                                   keys_.done(id),
                                   keys_.job_events(id),
                                   keys_.job_result(id),
                                   keys_.job_proofs(id),
                                   keys_.recent_done(),
                                   keys_.recent_failed(code),
                                   keys_.stats_minute(unix_minute(now)),
                                   keys_.running_index()};
  for (Priority p : kAllPriorities) keys.push_back(keys_.queued_index(p));
  RedisReply r = redis_.eval(kFinishScript, keys,
                             {f.state, f.error_code, f.error, format_time(now), std::to_string(f.ttl_seconds), f.raw,
                              f.result_json, event, keys_.events_channel(), id, std::to_string(kRecentFailedPerCode),
                              keys_.tenant().empty() ? std::string() : tenant_stats_field(keys_.tenant(), "")});
  return r.as_integer() == 1;
}

bool JobStore::submit(const JobSpec& spec, std::string* existing_state) {
  const std::string entry = spec.to_json();
  RedisReply r = run_client_script(
      kSubmitScript, kSubmitFunction,
      {keys_.job(spec.id), keys_.queue(spec.priority), keys_.queued_index(spec.priority)},
      {format_time(unix_now()), spec.circuit, priority_name(spec.priority), std::to_string(spec.partitions.size()),
       entry, entry_digest(entry), spec.id, spec.deadline_unix ? format_time(*spec.deadline_unix) : std::string()});
  const std::string& state = r.as_string();
  if (existing_state) *existing_state = state;
  return state.empty();
}

std::string JobStore::cancel(const std::string& id, long ttl_seconds) {
  const std::string event = event_json(id, "finished", "\"state\":\"cancelled\"");
  std::vector<std::string> keys = {keys_.job(id), keys_.done(id), keys_.job_events(id),
                                   keys_.recent_failed(error_name(ErrorCode::kCancelled))};
  for (Priority p : kAllPriorities) keys.push_back(keys_.queued_index(p));
  RedisReply r = run_client_script(kCancelScript, kCancelFunction, keys,
                                   {format_time(unix_now()), std::to_string(ttl_seconds), event,
                                    keys_.events_channel(), keys_.cancels(""), keys_.job(""),
                                    std::to_string(kRecentFailedPerCode)});
  return r.as_string();
}

RedisReply JobStore::run_client_script(const std::string& script, const char* function,
                                       const std::vector<std::string>& keys, const std::vector<std::string>& args) {
  if (keys_.tenant().empty()) return redis_.eval(script, keys, args);
  std::vector<std::string> command = {"FCALL", function, std::to_string(keys.size())};
  command.insert(command.end(), keys.begin(), keys.end());
  command.insert(command.end(), args.begin(), args.end());
  try {
    return redis_.command(command);
  } catch (const RedisError& e) {
    if (e.kind() != RedisError::Kind::kReply || std::string(e.what()).find("Function not found") == std::string::npos)
      throw;
    throw RedisError(RedisError::Kind::kReply,
                     std::string(e.what()) + ": the farm's client functions are not loaded in this Redis (an "
                                             "admin's `zkfarm tenant add` or a coordinator's start loads them)");
  }
}

std::string client_function_library() {
  auto function = [](const char* name, const std::string& body) {
    return std::string("redis.register_function('") + name + "', function(KEYS, ARGV)\n" + body + "end)\n";
  };
  return std::string("#!lua name=") + kFunctionLibrary + "\n" + function(kSubmitFunction, kSubmitScript) +
         function(kCancelFunction, kCancelScript);
}

void load_client_functions(RedisClient& redis) {
  redis.command({"FUNCTION", "LOAD", "REPLACE", client_function_library()});
}

std::string processing_entry(const std::string& tenant, const std::string& raw) {
  if (tenant.empty()) return raw;
  return std::string(1, kTenantEntryMark) + tenant + kTenantEntryMark + raw;
}

ProcessingEntry split_processing_entry(const std::string& entry) {
  if (entry.empty() || entry[0] != kTenantEntryMark) return {"", entry};
  const std::size_t end = entry.find(kTenantEntryMark, 1);
  if (end == std::string::npos) return {"", entry};
  return {entry.substr(1, end - 1), entry.substr(end + 1)};
}

}  // namespace zkfarm
