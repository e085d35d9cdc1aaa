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
#include "schema/job.h"

namespace zkfarm {
namespace {

using json = nlohmann::json;

constexpr std::size_t kMaxText = 512;   // longest string field shown (error messages)
constexpr std::size_t kMaxRunning = 500;  // running jobs listed

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

// What the page may show of a raw job JSON from a queue or processing list:
// id, circuit, priority, partition count, deadline. Never the partitions
// themselves (witness references, inline witnesses) or metadata.
json raw_job_summary(const std::string& raw) {
  json out = {{"id", nullptr}};
  json j = json::parse(raw, nullptr, false);
  if (!j.is_object()) {
    out["unreadable"] = true;
    return out;
  }
  if (j.contains("id") && j["id"].is_string()) out["id"] = clip(j["id"].get<std::string>(), 160);
  if (j.contains("circuit") && j["circuit"].is_string()) out["circuit"] = clip(j["circuit"].get<std::string>(), 80);
  if (j.contains("priority") && j["priority"].is_string())
    out["priority"] = clip(j["priority"].get<std::string>(), 16);
  if (j.contains("partitions") && j["partitions"].is_array()) out["partitions"] = j["partitions"].size();
  if (j.contains("deadline") && j["deadline"].is_number()) out["deadline"] = j["deadline"];
  return out;
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

std::string redact_url_queries(const std::string& text) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t scheme = text.find("://", i);
    if (scheme == std::string::npos) break;
    std::size_t end = scheme + 3;
    while (end < text.size() && text[end] != ' ' && text[end] != '\'' && text[end] != '"' && text[end] != '\n' &&
           text[end] != '?')
      ++end;
    out.append(text, i, end - i);
    i = end;
    if (i < text.size() && text[i] == '?') {
      out += "?...";
      while (i < text.size() && text[i] != ' ' && text[i] != '\'' && text[i] != '"' && text[i] != '\n') ++i;
    }
  }
  out.append(text, i, std::string::npos);
  return out;
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

json StatusPage::jobs() {
  std::lock_guard<std::mutex> lock(mutex_);
  const double now = unix_now();
  json out = {{"time", now}, {"served_by", config_.coordinator_id}};

  // Queued: the oldest of each priority queue (coordinators pop the right end).
  std::vector<std::vector<std::string>> commands;
  const long n = static_cast<long>(config_.queued_jobs);
  for (Priority p : kAllPriorities) {
    commands.push_back({"LLEN", keys_.queue(p)});
    commands.push_back({"LRANGE", keys_.queue(p), std::to_string(-n), "-1"});
  }
  auto replies = batch(redis_, commands);
  json queued = json::object();
  for (std::size_t i = 0; i < kAllPriorities.size(); ++i) {
    json entry = {{"count", replies[2 * i].as_integer()}, {"jobs", json::array()}};
    const auto& items = replies[2 * i + 1].as_array();
    for (auto it = items.rbegin(); it != items.rend(); ++it) entry["jobs"].push_back(raw_job_summary(it->as_string()));
    queued[priority_name(kAllPriorities[i])] = std::move(entry);
  }
  // When each was submitted (jobs submitted through the API have a record).
  commands.clear();
  std::vector<json*> targets;
  for (auto& entry : queued)
    for (auto& job : entry["jobs"])
      if (job["id"].is_string() && is_valid_job_id(job["id"].get<std::string>())) {
        commands.push_back({"HGET", keys_.job(job["id"].get<std::string>()), JobStore::kSubmittedAt});
        targets.push_back(&job);
      }
  replies = batch(redis_, commands);
  for (std::size_t i = 0; i < targets.size(); ++i) (*targets[i])["submitted_at"] = number(field(replies[i]));
  out["queued"] = std::move(queued);

  // Running: every coordinator's processing list.
  std::set<std::string> coordinators;
  replies = batch(redis_, {{"SMEMBERS", keys_.coordinators_seen()}, {"SMEMBERS", keys_.coordinators()}});
  for (const auto& r : replies)
    for (const auto& id : r.as_array()) coordinators.insert(id.as_string());
  commands.clear();
  for (const auto& c : coordinators) commands.push_back({"LRANGE", keys_.processing(c), "0", "-1"});
  replies = batch(redis_, commands);
  std::vector<std::pair<std::string, std::string>> held;  // coordinator, job id
  json coordinator_list = json::array();
  std::size_t index = 0;
  for (const auto& c : coordinators) {
    const auto& items = replies[index++].as_array();
    coordinator_list.push_back({{"id", c}, {"held", items.size()}});
    for (const auto& item : items) {
      json summary = raw_job_summary(item.as_string());
      if (summary["id"].is_string() && held.size() < kMaxRunning) held.emplace_back(c, summary["id"]);
    }
  }
  out["coordinators"] = std::move(coordinator_list);
  static const std::vector<std::string> kRunningFields = {
      JobStore::kState,     JobStore::kOwner,       JobStore::kCircuit,     JobStore::kPriority,
      JobStore::kPartitions, JobStore::kProved,     JobStore::kStartedAt,   JobStore::kSubmittedAt,
      JobStore::kAttempts,  JobStore::kCancelRequested};
  commands.clear();
  for (const auto& [c, id] : held) {
    std::vector<std::string> cmd = {"HMGET", keys_.job(id)};
    cmd.insert(cmd.end(), kRunningFields.begin(), kRunningFields.end());
    commands.push_back(std::move(cmd));
  }
  replies = batch(redis_, commands);
  json running = json::array();
  for (std::size_t i = 0; i < held.size(); ++i) {
    const auto& v = replies[i].as_array();
    const std::string state = field(v[0]);
    if (is_terminal_state(state)) continue;  // its list entry is about to go
    running.push_back({{"id", held[i].second},
                       {"coordinator", held[i].first},
                       {"state", state.empty() ? "taken" : state},
                       {"circuit", field(v[2])},
                       {"priority", field(v[3])},
                       {"partitions", number(field(v[4]))},
                       {"proved", number(field(v[5]))},
                       {"started_at", number(field(v[6]))},
                       {"submitted_at", number(field(v[7]))},
                       {"cancel_requested", field(v[9]) == "1"}});
  }
  out["running"] = std::move(running);

  // Recently ended.
  const std::string last = std::to_string(static_cast<long>(config_.recent_jobs) - 1);
  replies = batch(redis_, {{"ZREVRANGE", keys_.recent_done(), "0", last},
                           {"ZREVRANGE", keys_.recent_failed(), "0", last}});
  static const std::vector<std::string> kEndedFields = {
      JobStore::kState,      JobStore::kOwner,       JobStore::kCircuit,    JobStore::kPriority,
      JobStore::kPartitions, JobStore::kSubmittedAt, JobStore::kStartedAt,  JobStore::kFinishedAt,
      JobStore::kErrorCode,  JobStore::kError};
  for (int outcome = 0; outcome < 2; ++outcome) {
    std::vector<std::string> ids;
    for (const auto& r : replies[outcome].as_array()) ids.push_back(r.as_string());
    commands.clear();
    for (const auto& id : ids) {
      std::vector<std::string> cmd = {"HMGET", keys_.job(id)};
      cmd.insert(cmd.end(), kEndedFields.begin(), kEndedFields.end());
      commands.push_back(std::move(cmd));
    }
    auto records = batch(redis_, commands);
    json list = json::array();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const auto& v = records[i].as_array();
      const std::string state = field(v[0]);
      if (state.empty()) continue;  // expired
      json job = {{"id", ids[i]},
                  {"state", state},
                  {"coordinator", field(v[1])},
                  {"circuit", field(v[2])},
                  {"priority", field(v[3])},
                  {"partitions", number(field(v[4]))},
                  {"submitted_at", number(field(v[5]))},
                  {"started_at", number(field(v[6]))},
                  {"finished_at", number(field(v[7]))}};
      if (job["submitted_at"].is_number() && job["finished_at"].is_number())
        job["latency_s"] = job["finished_at"].get<double>() - job["submitted_at"].get<double>();
      if (outcome == 1) {
        job["error_code"] = clip(field(v[8]), 64);
        job["error"] = clip(redact_url_queries(field(v[9])));
      }
      list.push_back(std::move(job));
    }
    out[outcome == 0 ? "done" : "failed"] = std::move(list);
  }
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
