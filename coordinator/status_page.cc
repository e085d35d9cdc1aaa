// status_page.cc -- see status_page.h. The page itself (HTML, script,
// style) lives in coordinator/status/ and is compiled in (status_assets.h).
#include "coordinator/status_page.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <vector>

#include "cluster/job_store.h"
#include "coordinator/status_assets.h"
#include "schema/error_code.h"
#include "schema/job.h"

namespace zkfarm {
namespace {

using json = nlohmann::json;

constexpr std::size_t kMaxText = 512;   // longest string field shown
constexpr long kMaxRunning = 500;  // running jobs listed

// Runs commands in one MULTI/EXEC (a consistent snapshot); their replies.
std::vector<RedisReply> batch(RedisClient& redis, const std::vector<std::vector<std::string>>& commands) {
  if (commands.empty()) return {};
  return redis.transaction(commands).as_array();
}

// A hash reply (HGETALL) as a map.
std::map<std::string, std::string> as_map(const RedisReply& reply) {
  std::map<std::string, std::string> out;
  const auto& a = reply.as_array();
  for (std::size_t i = 0; i + 1 < a.size(); i += 2) out[a[i].as_string()] = a[i + 1].as_string();
  return out;
}

std::string field(const RedisReply& reply) { return reply.is_nil() ? std::string() : reply.as_string(); }

std::string clip(std::string text, std::size_t limit = kMaxText) {
  if (text.size() > limit) {
    text.resize(limit);
    text += "...";
  }
  return text;
}

// A number field as JSON (null when empty or not a number).
json number(const std::string& text) {
  if (text.empty()) return nullptr;
  try {
    std::size_t used = 0;
    const double value = std::stod(text, &used);
    if (used != text.size() || !std::isfinite(value)) return nullptr;
    return value;
  } catch (const std::exception&) {
    return nullptr;
  }
}

// The partition an error message names, or null. Every message about one
// partition starts "partition <index>" (coordinator/scheduler.cc,
// coordinator/job_check.cc); the rest of the message is never shown, as it
// may quote the witness reference.
json error_partition(const std::string& message) {
  static constexpr std::string_view kPrefix = "partition ";
  if (message.rfind(kPrefix, 0) != 0) return nullptr;
  std::size_t end = kPrefix.size();
  std::uint64_t index = 0;
  while (end < message.size() && end < kPrefix.size() + 9 && message[end] >= '0' && message[end] <= '9')
    index = index * 10 + static_cast<std::uint64_t>(message[end++] - '0');
  if (end == kPrefix.size()) return nullptr;
  if (end < message.size() && message[end] != ':' && message[end] != ' ') return nullptr;
  return index;
}

// An error code as the page shows it: one of the table's names, else "unknown".
std::string code_or_unknown(const std::string& code) {
  return parse_error_code(code) ? code : std::string(error_name(ErrorCode::kUnknown));
}

bool constant_time_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

void json_response(metrics::HttpResponse& response, int status, const json& body) {
  response.status = status;
  response.content_type = "application/json";
  response.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
}

const char kContentSecurityPolicy[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

}  // namespace

std::string read_access_token_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read the access token file '" + path + "'");
  std::string line;
  std::getline(in, line);
  const auto first = line.find_first_not_of(" \t\r");
  const auto last = line.find_last_not_of(" \t\r");
  const std::string token = first == std::string::npos ? "" : line.substr(first, last - first + 1);
  if (token.size() < 16)
    throw std::runtime_error("access token file '" + path + "': the token (first line) must have at least 16 "
                             "characters, got " + std::to_string(token.size()));
  return token;
}

StatusPage::StatusPage(StatusPageConfig config)
    : config_(std::move(config)), keys_(config_.key_prefix), redis_(config_.redis_url) {}

bool StatusPage::authorized(const std::string& authorization) const {
  if (config_.access_token.empty()) return true;
  if (authorization.rfind("Bearer ", 0) == 0)
    return constant_time_equal(authorization.substr(7), config_.access_token);
  if (authorization.rfind("Basic ", 0) == 0) {
    std::string decoded;
    try {
      const auto bytes = base64_decode(authorization.substr(6));
      decoded.assign(bytes.begin(), bytes.end());
    } catch (const std::exception&) {
      return false;
    }
    const auto colon = decoded.find(':');
    return colon != std::string::npos && constant_time_equal(decoded.substr(colon + 1), config_.access_token);
  }
  return false;
}

bool StatusPage::handle(const metrics::HttpRequest& request, metrics::HttpResponse& response) {
  const std::string& path = request.path;
  const bool api = path.rfind("/api/v1/", 0) == 0;
  const status_assets::Asset* asset = nullptr;
  if (!api) {
    asset = status_assets::find(path == "/" ? "/index.html" : path);
    if (asset == nullptr) return false;
  }
  response.headers = {{"Cache-Control", "no-store"},
                      {"Content-Security-Policy", kContentSecurityPolicy},
                      {"X-Frame-Options", "DENY"},
                      {"Referrer-Policy", "no-referrer"}};
  if (request.method != "GET" && request.method != "HEAD") {
    response.headers.push_back({"Allow", "GET, HEAD"});
    json_response(response, 405, {{"error", "read-only: GET or HEAD only"}});
    return true;
  }
  if (!authorized(request.authorization)) {
    response.headers.push_back({"WWW-Authenticate", "Basic realm=\"zkfarm\", charset=\"UTF-8\""});
    json_response(response, 401, {{"error", "access token required"}});
    return true;
  }
  if (asset != nullptr) {
    response.content_type = asset->content_type;
    response.body = asset->body;
    return true;
  }
  try {
    if (path == "/api/v1/jobs") json_response(response, 200, jobs());
    else if (path == "/api/v1/workers") json_response(response, 200, workers());
    else if (path == "/api/v1/circuits") json_response(response, 200, circuits());
    else if (path == "/api/v1/stats") json_response(response, 200, stats());
    else json_response(response, 404, {{"error", "unknown API path"}});
  } catch (const std::exception& e) {
    json_response(response, 503, {{"error", std::string("cannot read Redis: ") + e.what()}});
  }
  return true;
}

namespace {

// The fields a job row shows, read with HMGET from job:<id> (never kSpec,
// never a raw queue or processing-list entry: a job JSON may be 8 MiB).
const std::vector<std::string>& job_fields() {
  static const std::vector<std::string> kFields = {
      JobStore::kState,      JobStore::kOwner,     JobStore::kCircuit,    JobStore::kPriority,
      JobStore::kPartitions, JobStore::kProved,    JobStore::kSubmittedAt, JobStore::kStartedAt,
      JobStore::kFinishedAt, JobStore::kDeadline,  JobStore::kCancelRequested, JobStore::kErrorCode,
      JobStore::kError};
  return kFields;
}

// One job row from an HMGET of job_fields(); null when the record is gone.
json job_row(const std::string& id, const RedisReply& reply) {
  const auto& v = reply.as_array();
  auto text = [&](std::size_t i) { return field(v[i]); };
  if (text(0).empty()) return nullptr;
  json job = {{"id", id},
              {"state", text(0)},
              {"coordinator", text(1)},
              {"circuit", clip(text(2), 80)},
              {"priority", clip(text(3), 16)},
              {"partitions", number(text(4))},
              {"proved", number(text(5))},
              {"submitted_at", number(text(6))},
              {"started_at", number(text(7))},
              {"finished_at", number(text(8))},
              {"deadline", number(text(9))},
              {"cancel_requested", text(10) == "1"}};
  if (job["submitted_at"].is_number() && job["finished_at"].is_number())
    job["latency_s"] = job["finished_at"].get<double>() - job["submitted_at"].get<double>();
  if (!text(11).empty()) {
    job["error_code"] = code_or_unknown(text(11));
    job["error_partition"] = error_partition(text(12));
  }
  return job;
}

}  // namespace

json StatusPage::jobs() {
  std::lock_guard<std::mutex> lock(mutex_);
  const double now = unix_now();
  json out = {{"time", now}, {"served_by", config_.coordinator_id}};
  auto hmget_rows = [&](const std::vector<std::string>& ids) {
    std::vector<std::vector<std::string>> commands;
    for (const auto& id : ids) {
      std::vector<std::string> cmd = {"HMGET", keys_.job(id)};
      cmd.insert(cmd.end(), job_fields().begin(), job_fields().end());
      commands.push_back(std::move(cmd));
    }
    auto replies = batch(redis_, commands);
    std::vector<json> rows;
    for (std::size_t i = 0; i < ids.size(); ++i) rows.push_back(job_row(ids[i], replies[i]));
    return rows;
  };
  auto ids_of = [](const RedisReply& reply) {
    std::vector<std::string> ids;
    for (const auto& r : reply.as_array()) ids.push_back(r.as_string());
    return ids;
  };

  // Queued: each queue's length, and the oldest jobs submitted through the
  // API (index:queued; entries pushed onto a queue directly are counted only).
  std::vector<std::vector<std::string>> commands;
  const std::string last_queued = std::to_string(static_cast<long>(config_.queued_jobs) - 1);
  for (Priority p : kAllPriorities) {
    commands.push_back({"LLEN", keys_.queue(p)});
    commands.push_back({"ZRANGE", keys_.queued_index(p), "0", last_queued});
  }
  auto replies = batch(redis_, commands);
  json queued = json::object();
  for (std::size_t i = 0; i < kAllPriorities.size(); ++i) {
    json entry = {{"count", replies[2 * i].as_integer()}, {"jobs", json::array()}};
    for (const json& row : hmget_rows(ids_of(replies[2 * i + 1]))) {
      if (row.is_null() || row["state"] != kStateQueued) continue;  // taken in a moment ago
      entry["jobs"].push_back({{"id", row["id"]},
                               {"circuit", row["circuit"]},
                               {"priority", row["priority"]},
                               {"partitions", row["partitions"]},
                               {"deadline", row["deadline"]},
                               {"submitted_at", row["submitted_at"]}});
    }
    queued[priority_name(kAllPriorities[i])] = std::move(entry);
  }
  out["queued"] = std::move(queued);

  // Coordinators and how many entries each holds (LLEN: the entries
  // themselves are never read).
  std::set<std::string> coordinators;
  replies = batch(redis_, {{"SMEMBERS", keys_.coordinators_seen()}, {"SMEMBERS", keys_.coordinators()}});
  for (const auto& r : replies)
    for (const auto& id : r.as_array()) coordinators.insert(id.as_string());
  commands.clear();
  for (const auto& c : coordinators) commands.push_back({"LLEN", keys_.processing(c)});
  replies = batch(redis_, commands);
  json coordinator_list = json::array();
  std::size_t index = 0;
  for (const auto& c : coordinators) coordinator_list.push_back({{"id", c}, {"held", replies[index++].as_integer()}});
  out["coordinators"] = std::move(coordinator_list);

  // Running: the oldest kMaxRunning of index:running.
  const RedisReply running_ids =
      redis_.command({"ZRANGE", keys_.running_index(), "0", std::to_string(kMaxRunning - 1)});
  json running = json::array();
  for (const json& row : hmget_rows(ids_of(running_ids))) {
    if (row.is_null() || is_terminal_state(row["state"].get<std::string>())) continue;  // ending now
    running.push_back({{"id", row["id"]},
                       {"coordinator", row["coordinator"]},
                       {"state", row["state"]},
                       {"circuit", row["circuit"]},
                       {"priority", row["priority"]},
                       {"partitions", row["partitions"]},
                       {"proved", row["proved"]},
                       {"started_at", row["started_at"]},
                       {"submitted_at", row["submitted_at"]},
                       {"cancel_requested", row["cancel_requested"]}});
  }
  out["running"] = std::move(running);

  // Recently done.
  const RedisReply done_ids = redis_.command(
      {"ZREVRANGE", keys_.recent_done(), "0", std::to_string(static_cast<long>(config_.recent_jobs) - 1)});
  json done = json::array();
  for (const json& row : hmget_rows(ids_of(done_ids))) {
    if (row.is_null()) continue;  // expired
    done.push_back({{"id", row["id"]},
                    {"state", row["state"]},
                    {"coordinator", row["coordinator"]},
                    {"circuit", row["circuit"]},
                    {"priority", row["priority"]},
                    {"partitions", row["partitions"]},
                    {"submitted_at", row["submitted_at"]},
                    {"started_at", row["started_at"]},
                    {"finished_at", row["finished_at"]},
                    {"latency_s", row.value("latency_s", json())}});
  }
  out["done"] = std::move(done);

  // Recently failed, per error code: the newest failed_per_code of each, so
  // a flood of one code (junk submissions failing invalidJob, say) never
  // pushes another code's failures (the farm's own: taskTimeout, internal,
  // ...) off the page. The error text is not shown: it may quote a witness
  // reference; the code and the partition at fault are.
  std::vector<std::string> codes;
  for (int c = 0; c <= static_cast<int>(ErrorCode::kUnknown); ++c)
    codes.emplace_back(error_name(static_cast<ErrorCode>(c)));
  commands.clear();
  const std::string last_failed = std::to_string(static_cast<long>(config_.failed_per_code) - 1);
  for (const auto& code : codes) {
    commands.push_back({"ZCARD", keys_.recent_failed(code)});
    commands.push_back({"ZREVRANGE", keys_.recent_failed(code), "0", last_failed});
  }
  replies = batch(redis_, commands);
  std::vector<json> failed;
  json failed_codes = json::array();
  for (std::size_t c = 0; c < codes.size(); ++c) {
    const long long kept = replies[2 * c].as_integer();
    if (kept == 0) continue;
    std::size_t shown = 0;
    double newest = 0;
    for (json& row : hmget_rows(ids_of(replies[2 * c + 1]))) {
      if (row.is_null()) continue;  // expired
      ++shown;
      if (row["finished_at"].is_number()) newest = std::max(newest, row["finished_at"].get<double>());
      failed.push_back({{"id", row["id"]},
                        {"state", row["state"]},
                        {"coordinator", row["coordinator"]},
                        {"circuit", row["circuit"]},
                        {"priority", row["priority"]},
                        {"partitions", row["partitions"]},
                        {"submitted_at", row["submitted_at"]},
                        {"started_at", row["started_at"]},
                        {"finished_at", row["finished_at"]},
                        {"latency_s", row.value("latency_s", json())},
                        {"error_code", row.value("error_code", json(codes[c]))},
                        {"error_partition", row.value("error_partition", json())}});
    }
    failed_codes.push_back({{"code", codes[c]}, {"kept", kept}, {"shown", shown}, {"newest", newest}});
  }
  auto finished = [](const json& j) { return j["finished_at"].is_number() ? j["finished_at"].get<double>() : 0.0; };
  std::stable_sort(failed.begin(), failed.end(), [&](const json& a, const json& b) { return finished(a) > finished(b); });
  std::stable_sort(failed_codes.begin(), failed_codes.end(),
                   [](const json& a, const json& b) { return a["newest"].get<double>() > b["newest"].get<double>(); });
  out["failed"] = std::move(failed);
  out["failed_codes"] = std::move(failed_codes);
  return out;
}

json StatusPage::workers() {
  std::lock_guard<std::mutex> lock(mutex_);
  auto sets = batch(redis_, {{"SMEMBERS", keys_.workers()}, {"SMEMBERS", keys_.quarantine()}});
  std::set<std::string> ids, quarantined;
  for (const auto& r : sets[0].as_array()) ids.insert(r.as_string());
  for (const auto& r : sets[1].as_array()) quarantined.insert(r.as_string());
  std::vector<std::vector<std::string>> commands;
  for (const auto& id : ids) commands.push_back({"HGETALL", keys_.worker(id)});
  auto records = batch(redis_, commands);
  json list = json::array();
  std::size_t index = 0;
  for (const auto& id : ids) {
    auto h = as_map(records[index++]);
    if (h.empty()) continue;  // its record expired: gone for a while
    json loaded = json::array();
    std::string circuits = h[WorkerRecord::kLoaded];
    for (std::size_t start = 0; start < circuits.size();) {
      std::size_t comma = circuits.find(',', start);
      if (comma == std::string::npos) comma = circuits.size();
      if (comma > start) loaded.push_back(circuits.substr(start, comma - start));
      start = comma + 1;
    }
    list.push_back({{"id", id},
                    {"host", h[WorkerRecord::kHost]},
                    {"device", h[WorkerRecord::kDevice]},
                    {"device_ordinal", number(h[WorkerRecord::kDeviceOrdinal])},
                    {"state", h[WorkerRecord::kState]},
                    {"coordinator", h[WorkerRecord::kCoordinator]},
                    {"busy", number(h[WorkerRecord::kBusy])},
                    {"tasks", number(h[WorkerRecord::kTasks])},
                    {"credits", number(h[WorkerRecord::kCredits])},
                    {"proofs", number(h[WorkerRecord::kProofs].empty() ? "0" : h[WorkerRecord::kProofs])},
                    {"faults", number(h[WorkerRecord::kFaults].empty() ? "0" : h[WorkerRecord::kFaults])},
                    {"quarantined", quarantined.count(id) > 0},
                    {"resident", std::move(loaded)},
                    {"last_seen", number(h[WorkerRecord::kLastSeen])}});
  }
  return {{"time", unix_now()}, {"served_by", config_.coordinator_id}, {"workers", std::move(list)}};
}

json StatusPage::circuits() {
  const json farm_workers = workers();
  std::lock_guard<std::mutex> lock(mutex_);
  auto ids_reply = redis_.command({"SMEMBERS", keys_.circuits()});
  std::set<std::string> ids;
  for (const auto& r : ids_reply.as_array()) ids.insert(r.as_string());
  std::vector<std::vector<std::string>> commands;
  for (const auto& id : ids) commands.push_back({"HGETALL", keys_.circuit(id)});
  auto records = batch(redis_, commands);
  json list = json::array();
  std::size_t index = 0;
  for (const auto& id : ids) {
    auto h = as_map(records[index++]);
    if (h.empty()) continue;
    json resident = json::array();
    for (const auto& w : farm_workers["workers"])
      if (w["state"] == "alive" && std::find(w["resident"].begin(), w["resident"].end(), id) != w["resident"].end())
        resident.push_back(w["id"]);
    // Sizes only: artifact paths stay out of the page.
    list.push_back({{"id", id},
                    {"curve", h["curve"]},
                    {"num_vars", number(h["num_vars"])},
                    {"num_public", number(h["num_public"])},
                    {"domain_size", number(h["domain_size"])},
                    {"zkey_bytes", number(h["zkey_bytes"])},
                    {"checks_constraints", h["pce_has_c"] == "1"},
                    {"resident_on", std::move(resident)}});
  }
  return {{"time", unix_now()}, {"served_by", config_.coordinator_id}, {"circuits", std::move(list)}};
}

json StatusPage::stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  const double now = unix_now();
  const long long current = unix_minute(now);
  std::vector<std::vector<std::string>> commands;
  for (long long m = current - 59; m <= current; ++m) commands.push_back({"HGETALL", keys_.stats_minute(m)});
  auto records = batch(redis_, commands);
  json minutes = json::array();
  double partitions = 0, done = 0, failed = 0, latency_sum = 0, latency_count = 0, latency_max = 0;
  for (long long m = current - 59, i = 0; m <= current; ++m, ++i) {
    auto h = as_map(records[static_cast<std::size_t>(i)]);
    auto value = [&](const char* name) {
      json v = number(h[name]);
      return v.is_number() ? v.get<double>() : 0.0;
    };
    const double count = value("latency_count");
    json minute = {{"minute", m * 60},
                   {"partitions", value("partitions")},
                   {"jobs_done", value("jobs_done")},
                   {"jobs_failed", value("jobs_failed")},
                   {"latency_avg_s", count > 0 ? json(value("latency_sum") / count) : json(nullptr)},
                   {"latency_max_s", count > 0 ? json(value("latency_max")) : json(nullptr)}};
    partitions += value("partitions");
    done += value("jobs_done");
    failed += value("jobs_failed");
    latency_sum += value("latency_sum");
    latency_count += count;
    latency_max = std::max(latency_max, value("latency_max"));
    minutes.push_back(std::move(minute));
  }
  json hour = {{"partitions", partitions},
               {"jobs_done", done},
               {"jobs_failed", failed},
               {"latency_avg_s", latency_count > 0 ? json(latency_sum / latency_count) : json(nullptr)},
               {"latency_max_s", latency_count > 0 ? json(latency_max) : json(nullptr)}};
  return {{"time", now}, {"served_by", config_.coordinator_id}, {"minutes", std::move(minutes)},
          {"last_hour", std::move(hour)}};
}

}  // namespace zkfarm
