// status_page.cc -- see status_page.h. The page itself (HTML, script,
// style) lives in coordinator/status/ and is compiled in (status_assets.h).
#include "coordinator/status_page.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <span>
#include <stdexcept>
#include <vector>

#include "base/digest.h"
#include "cluster/job_store.h"
#include "cluster/tenants.h"
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

// The token an Authorization header carries: a bearer token, or a basic
// auth password (any user name); "" for neither.
std::string presented_token(const std::string& authorization) {
  if (authorization.rfind("Bearer ", 0) == 0) return authorization.substr(7);
  if (authorization.rfind("Basic ", 0) == 0) {
    std::string decoded;
    try {
      const auto bytes = base64_decode(authorization.substr(6));
      decoded.assign(bytes.begin(), bytes.end());
    } catch (const std::exception&) {
      return "";
    }
    const auto colon = decoded.find(':');
    return colon == std::string::npos ? "" : decoded.substr(colon + 1);
  }
  return "";
}

std::string sha256_of(const std::string& text) {
  return sha256_hex(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

double as_number(const json& value) { return value.is_number() ? value.get<double>() : 0.0; }

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

std::optional<StatusPage::Viewer> StatusPage::authorize(const std::string& authorization) {
  const std::string token = presented_token(authorization);
  // A tenant's token: the sha256 in its record, read now (a rotated or
  // removed tenant's token stops at once).
  if (const std::string tenant = status_token_tenant(token); !tenant.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto replies = batch(redis_, {{"SISMEMBER", keys_.tenants(), tenant},
                                        {"HGET", keys_.tenant_record(tenant), TenantRecord::kStatusTokenSha256}});
    const std::string expected = field(replies[1]);
    if (replies[0].as_integer() == 1 && !expected.empty() && constant_time_equal(sha256_of(token), expected))
      return Viewer{tenant};
    return std::nullopt;
  }
  if (config_.access_token.empty()) return admin();
  if (!token.empty() && constant_time_equal(token, config_.access_token)) return admin();
  return std::nullopt;
}

json StatusPage::envelope(const Viewer& viewer) const {
  return {{"time", unix_now()},
          {"served_by", config_.coordinator_id},
          {"viewer", viewer.admin() ? json{{"role", "admin"}, {"tenant", nullptr}}
                                    : json{{"role", "tenant"}, {"tenant", viewer.tenant}}}};
}

std::vector<std::pair<std::string, KeyLayout>> StatusPage::layouts(const Viewer& viewer) {
  std::vector<std::pair<std::string, KeyLayout>> out;
  if (!viewer.admin()) {
    out.emplace_back(viewer.tenant, keys_.for_tenant(viewer.tenant));
    return out;
  }
  out.emplace_back(kDefaultTenant, keys_);
  for (const std::string& name : tenant_names(redis_, keys_)) out.emplace_back(name, keys_.for_tenant(name));
  return out;
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
  std::optional<Viewer> viewer;
  try {
    viewer = authorize(request.authorization);
  } catch (const std::exception& e) {
    json_response(response, 503, {{"error", std::string("cannot read Redis: ") + e.what()}});
    return true;
  }
  if (!viewer) {
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
    if (path == "/api/v1/jobs") json_response(response, 200, jobs(*viewer));
    else if (path == "/api/v1/workers") json_response(response, 200, workers(*viewer));
    else if (path == "/api/v1/circuits") json_response(response, 200, circuits(*viewer));
    else if (path == "/api/v1/stats") json_response(response, 200, stats(*viewer));
    else if (path == "/api/v1/tenants") json_response(response, 200, tenants(*viewer));
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
json job_row(const std::string& id, const std::string& tenant, const RedisReply& reply) {
  const auto& v = reply.as_array();
  auto text = [&](std::size_t i) { return field(v[i]); };
  if (text(0).empty()) return nullptr;
  json job = {{"id", id},
              {"tenant", tenant},
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

// The ids of a ZRANGE-like reply.
std::vector<std::string> ids_of(const RedisReply& reply) {
  std::vector<std::string> ids;
  for (const auto& r : reply.as_array()) ids.push_back(r.as_string());
  return ids;
}

// Rows sorted by a time field (missing ones last), at most `limit`.
void sort_and_keep(std::vector<json>& rows, const char* time_field, bool newest_first, std::size_t limit) {
  auto at = [&](const json& j) {
    return j[time_field].is_number() ? j[time_field].get<double>() : (newest_first ? 0.0 : 1e300);
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const json& a, const json& b) {
    return newest_first ? at(a) > at(b) : at(a) < at(b);
  });
  if (rows.size() > limit) rows.resize(limit);
}

}  // namespace

json StatusPage::jobs(const Viewer& viewer) {
  std::lock_guard<std::mutex> lock(mutex_);
  json out = envelope(viewer);
  const auto spaces = layouts(viewer);
  // (tenant index, id) lists -> rows, in one MULTI.
  auto hmget_rows = [&](const std::vector<std::pair<std::size_t, std::string>>& ids) {
    std::vector<std::vector<std::string>> commands;
    for (const auto& [space, id] : ids) {
      std::vector<std::string> cmd = {"HMGET", spaces[space].second.job(id)};
      cmd.insert(cmd.end(), job_fields().begin(), job_fields().end());
      commands.push_back(std::move(cmd));
    }
    auto replies = batch(redis_, commands);
    std::vector<json> rows;
    for (std::size_t i = 0; i < ids.size(); ++i)
      rows.push_back(job_row(ids[i].second, spaces[ids[i].first].first, replies[i]));
    return rows;
  };

  // Queued: each queue's length (summed over the tenants shown), and the
  // oldest jobs submitted through the API (index:queued; entries pushed
  // onto a queue directly are counted only).
  std::vector<std::vector<std::string>> commands;
  const std::string last_queued = std::to_string(static_cast<long>(config_.queued_jobs) - 1);
  for (const auto& [name, keys] : spaces)
    for (Priority p : kAllPriorities) {
      commands.push_back({"LLEN", keys.queue(p)});
      commands.push_back({"ZRANGE", keys.queued_index(p), "0", last_queued});
    }
  auto replies = batch(redis_, commands);
  json queued = json::object();
  for (std::size_t i = 0; i < kAllPriorities.size(); ++i) {
    long long count = 0;
    std::vector<std::pair<std::size_t, std::string>> ids;
    for (std::size_t t = 0; t < spaces.size(); ++t) {
      const std::size_t at = 2 * (t * kAllPriorities.size() + i);
      count += replies[at].as_integer();
      for (auto& id : ids_of(replies[at + 1])) ids.emplace_back(t, std::move(id));
    }
    std::vector<json> rows;
    for (json& row : hmget_rows(ids)) {
      if (row.is_null() || row["state"] != kStateQueued) continue;  // taken in a moment ago
      rows.push_back({{"id", row["id"]},
                      {"tenant", row["tenant"]},
                      {"circuit", row["circuit"]},
                      {"priority", row["priority"]},
                      {"partitions", row["partitions"]},
                      {"deadline", row["deadline"]},
                      {"submitted_at", row["submitted_at"]}});
    }
    sort_and_keep(rows, "submitted_at", false, config_.queued_jobs);
    queued[priority_name(kAllPriorities[i])] = {{"count", count}, {"jobs", rows}};
  }
  out["queued"] = std::move(queued);

  // Coordinators and how many entries each holds (LLEN: the entries
  // themselves are never read). The admin's only: the counts are every
  // tenant's.
  if (viewer.admin()) {
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
  }

  // Running: the oldest kMaxRunning of index:running, of the tenants shown.
  commands.clear();
  for (const auto& [name, keys] : spaces)
    commands.push_back({"ZRANGE", keys.running_index(), "0", std::to_string(kMaxRunning - 1)});
  replies = batch(redis_, commands);
  std::vector<std::pair<std::size_t, std::string>> ids;
  for (std::size_t t = 0; t < spaces.size(); ++t)
    for (auto& id : ids_of(replies[t])) ids.emplace_back(t, std::move(id));
  std::vector<json> running;
  for (const json& row : hmget_rows(ids)) {
    if (row.is_null() || is_terminal_state(row["state"].get<std::string>())) continue;  // ending now
    running.push_back({{"id", row["id"]},
                       {"tenant", row["tenant"]},
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
  sort_and_keep(running, "started_at", false, kMaxRunning);
  out["running"] = running;

  // Recently done.
  commands.clear();
  for (const auto& [name, keys] : spaces)
    commands.push_back(
        {"ZREVRANGE", keys.recent_done(), "0", std::to_string(static_cast<long>(config_.recent_jobs) - 1)});
  replies = batch(redis_, commands);
  ids.clear();
  for (std::size_t t = 0; t < spaces.size(); ++t)
    for (auto& id : ids_of(replies[t])) ids.emplace_back(t, std::move(id));
  std::vector<json> done;
  for (const json& row : hmget_rows(ids)) {
    if (row.is_null()) continue;  // expired
    done.push_back({{"id", row["id"]},
                    {"tenant", row["tenant"]},
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
  sort_and_keep(done, "finished_at", true, config_.recent_jobs);
  out["done"] = done;

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
  for (const auto& [name, keys] : spaces)
    for (const auto& code : codes) {
      commands.push_back({"ZCARD", keys.recent_failed(code)});
      commands.push_back({"ZREVRANGE", keys.recent_failed(code), "0", last_failed});
    }
  replies = batch(redis_, commands);
  std::vector<json> failed;
  json failed_codes = json::array();
  for (std::size_t c = 0; c < codes.size(); ++c) {
    long long kept = 0;
    ids.clear();
    for (std::size_t t = 0; t < spaces.size(); ++t) {
      const std::size_t at = 2 * (t * codes.size() + c);
      kept += replies[at].as_integer();
      for (auto& id : ids_of(replies[at + 1])) ids.emplace_back(t, std::move(id));
    }
    if (kept == 0) continue;
    std::vector<json> rows;
    for (json& row : hmget_rows(ids)) {
      if (row.is_null()) continue;  // expired
      rows.push_back({{"id", row["id"]},
                      {"tenant", row["tenant"]},
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
    sort_and_keep(rows, "finished_at", true, config_.failed_per_code);
    double newest = 0;
    for (const json& row : rows) newest = std::max(newest, as_number(row["finished_at"]));
    failed_codes.push_back({{"code", codes[c]}, {"kept", kept}, {"shown", rows.size()}, {"newest", newest}});
    failed.insert(failed.end(), rows.begin(), rows.end());
  }
  auto finished = [](const json& j) { return as_number(j["finished_at"]); };
  std::stable_sort(failed.begin(), failed.end(), [&](const json& a, const json& b) { return finished(a) > finished(b); });
  std::stable_sort(failed_codes.begin(), failed_codes.end(),
                   [](const json& a, const json& b) { return a["newest"].get<double>() > b["newest"].get<double>(); });
  out["failed"] = failed;
  out["failed_codes"] = std::move(failed_codes);
  return out;
}

json StatusPage::workers(const Viewer& viewer) {
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
  // The farm's capacity, which is all a tenant sees of the workers: how
  // many have a live record and how many of them are alive (not
  // quarantined), by device model.
  long long alive = 0;
  json devices = json::object();
  for (const json& w : list)
    if (w["state"] == "alive" && !w["quarantined"].get<bool>()) {
      ++alive;
      const std::string model = clip(w["device"].get<std::string>(), 64);
      devices[model] = devices.value(model, 0) + 1;
    }
  json out = envelope(viewer);
  out["capacity"] = {{"workers", list.size()}, {"alive", alive}, {"devices", std::move(devices)}};
  out["workers"] = viewer.admin() ? std::move(list) : json::array();
  return out;
}

json StatusPage::circuits(const Viewer& viewer) {
  const json farm_workers = workers(admin());
  std::lock_guard<std::mutex> lock(mutex_);
  // (owner tenant, layout whose circuit records to read, ids): the admin's
  // view is the farm's circuits and every tenant's own; a tenant's is its
  // own and the farm's circuits shared with it (or with every tenant).
  struct Source {
    std::string owner;  // "" for the farm's
    KeyLayout keys;
    std::set<std::string> ids;
  };
  std::vector<Source> sources;
  const auto spaces = layouts(viewer);
  std::vector<std::vector<std::string>> commands = {{"SMEMBERS", keys_.circuits()}};
  for (const auto& [name, keys] : spaces)
    if (!keys.tenant().empty()) commands.push_back({"SMEMBERS", keys.tenant_circuits()});
  auto sets = batch(redis_, commands);
  std::set<std::string> farm_ids;
  for (const auto& r : sets[0].as_array()) farm_ids.insert(r.as_string());
  if (!viewer.admin()) {
    // Which of the farm's circuits are shared with this tenant.
    std::vector<std::string> listed(farm_ids.begin(), farm_ids.end());
    commands.clear();
    for (const auto& id : listed) {
      commands.push_back({"SISMEMBER", keys_.circuit_tenants(id), viewer.tenant});
      commands.push_back({"SISMEMBER", keys_.circuit_tenants(id), "*"});
    }
    auto shared = batch(redis_, commands);
    farm_ids.clear();
    for (std::size_t i = 0; i < listed.size(); ++i)
      if (shared[2 * i].as_integer() == 1 || shared[2 * i + 1].as_integer() == 1) farm_ids.insert(listed[i]);
  }
  sources.push_back({"", keys_, std::move(farm_ids)});
  std::size_t set_index = 1;
  for (const auto& [name, keys] : spaces) {
    if (keys.tenant().empty()) continue;
    std::set<std::string> own;
    for (const auto& r : sets[set_index++].as_array()) own.insert(r.as_string());
    sources.push_back({name, keys, std::move(own)});
  }
  commands.clear();
  for (const auto& source : sources)
    for (const auto& id : source.ids)
      commands.push_back({"HGETALL", source.owner.empty() ? keys_.circuit(id) : source.keys.tenant_circuit(id)});
  auto records = batch(redis_, commands);
  json list = json::array();
  std::size_t index = 0;
  for (const auto& source : sources)
    for (const auto& id : source.ids) {
      auto h = as_map(records[index++]);
      if (h.empty()) continue;
      json resident = json::array();
      for (const auto& w : farm_workers["workers"])
        if (w["state"] == "alive" && std::find(w["resident"].begin(), w["resident"].end(), id) != w["resident"].end())
          resident.push_back(w["id"]);
      // Sizes only: artifact paths stay out of the page. A tenant learns
      // where its circuits are resident as a count, never the workers.
      list.push_back({{"id", id},
                      {"tenant", source.owner.empty() ? json(nullptr) : json(source.owner)},
                      {"curve", clip(h["curve"], 16)},
                      {"num_vars", number(h["num_vars"])},
                      {"num_public", number(h["num_public"])},
                      {"domain_size", number(h["domain_size"])},
                      {"zkey_bytes", number(h["zkey_bytes"])},
                      {"checks_constraints", h["pce_has_c"] == "1"},
                      {"resident_count", resident.size()},
                      {"resident_on", viewer.admin() ? std::move(resident) : json::array()}});
    }
  json out = envelope(viewer);
  out["circuits"] = std::move(list);
  return out;
}

namespace {

// The last hour of per-minute stats hashes, as the stats API shows them,
// for the farm's fields (prefix "") or one tenant's (tenant_stats_field).
json minute_stats(const std::vector<RedisReply>& records, long long first_minute, const std::string& prefix) {
  json minutes = json::array();
  double partitions = 0, done = 0, failed = 0, latency_sum = 0, latency_count = 0, latency_max = 0, worker = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    auto h = as_map(records[i]);
    auto value = [&](const char* name) {
      json v = number(h[prefix + name]);
      return v.is_number() ? v.get<double>() : 0.0;
    };
    const double count = value("latency_count");
    minutes.push_back({{"minute", (first_minute + static_cast<long long>(i)) * 60},
                       {"partitions", value("partitions")},
                       {"jobs_done", value("jobs_done")},
                       {"jobs_failed", value("jobs_failed")},
                       {"worker_seconds", value("worker_seconds")},
                       {"latency_avg_s", count > 0 ? json(value("latency_sum") / count) : json(nullptr)},
                       {"latency_max_s", count > 0 ? json(value("latency_max")) : json(nullptr)}});
    partitions += value("partitions");
    done += value("jobs_done");
    failed += value("jobs_failed");
    worker += value("worker_seconds");
    latency_sum += value("latency_sum");
    latency_count += count;
    latency_max = std::max(latency_max, value("latency_max"));
  }
  json hour = {{"partitions", partitions},
               {"jobs_done", done},
               {"jobs_failed", failed},
               {"worker_seconds", worker},
               {"latency_avg_s", latency_count > 0 ? json(latency_sum / latency_count) : json(nullptr)},
               {"latency_max_s", latency_count > 0 ? json(latency_max) : json(nullptr)}};
  return {{"minutes", std::move(minutes)}, {"last_hour", std::move(hour)}};
}

}  // namespace

json StatusPage::stats(const Viewer& viewer) {
  std::lock_guard<std::mutex> lock(mutex_);
  const long long current = unix_minute(unix_now());
  std::vector<std::vector<std::string>> commands;
  for (long long m = current - 59; m <= current; ++m) commands.push_back({"HGETALL", keys_.stats_minute(m)});
  const auto records = batch(redis_, commands);
  json out = envelope(viewer);
  json figures = minute_stats(records, current - 59, viewer.admin() ? "" : tenant_stats_field(viewer.tenant, ""));
  out["minutes"] = std::move(figures["minutes"]);
  out["last_hour"] = std::move(figures["last_hour"]);
  return out;
}

json StatusPage::tenants(const Viewer& viewer) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto spaces = layouts(viewer);
  std::vector<TenantRecord> records;
  if (viewer.admin()) {
    records = load_tenants(redis_, keys_);
  } else if (auto record = load_tenant(redis_, keys_, viewer.tenant)) {
    records.push_back(std::move(*record));
  }
  std::map<std::string, TenantRecord> by_name;
  for (auto& r : records) by_name[r.name] = std::move(r);
  // Queued (every priority's queue) and running jobs per tenant, then the
  // last hour of stats, in two MULTIs.
  std::vector<std::vector<std::string>> commands;
  for (const auto& [name, keys] : spaces) {
    for (Priority p : kAllPriorities) commands.push_back({"LLEN", keys.queue(p)});
    commands.push_back({"ZCARD", keys.running_index()});
  }
  const auto counts = batch(redis_, commands);
  const long long current = unix_minute(unix_now());
  commands.clear();
  for (long long m = current - 59; m <= current; ++m) commands.push_back({"HGETALL", keys_.stats_minute(m)});
  const auto minutes = batch(redis_, commands);
  const json farm = minute_stats(minutes, current - 59, "")["last_hour"];
  json list = json::array();
  json tenants_hour = json::object();
  for (std::size_t t = 0; t < spaces.size(); ++t) {
    const std::string& name = spaces[t].first;
    const bool is_default = spaces[t].second.tenant().empty();
    long long queued = 0;
    for (std::size_t p = 0; p < kAllPriorities.size(); ++p) queued += counts[t * 5 + p].as_integer();
    const long long running = counts[t * 5 + 4].as_integer();
    json hour = is_default ? json::object() : minute_stats(minutes, current - 59, tenant_stats_field(name, ""))["last_hour"];
    tenants_hour[name] = hour;
    const TenantRecord record = is_default ? default_tenant_record() : (by_name.count(name) ? by_name[name] : TenantRecord{});
    json row = {{"name", name},
                {"queued", queued},
                {"running", running},
                {"last_hour", hour},
                {"weight", record.weight},
                {"reserved_workers", record.reserved_workers},
                {"max_queued_jobs", record.max_queued_jobs},
                {"max_active_partitions", record.max_active_partitions},
                {"max_job_bytes", record.max_job_bytes}};
    list.push_back(std::move(row));
  }
  if (viewer.admin()) {
    // The default tenant's hour is the farm's less the tenants'; each
    // tenant's share of the worker time is of the farm's.
    json rest = farm;
    for (auto& row : list) {
      if (row["name"] == kDefaultTenant) continue;
      for (const char* key : {"partitions", "jobs_done", "jobs_failed", "worker_seconds"})
        rest[key] = std::max(0.0, as_number(rest[key]) - as_number(row["last_hour"][key]));
    }
    rest["latency_avg_s"] = nullptr;  // not kept apart for the default tenant
    rest["latency_max_s"] = nullptr;
    const double total = as_number(farm["worker_seconds"]);
    for (auto& row : list) {
      if (row["name"] == kDefaultTenant) row["last_hour"] = rest;
      row["worker_share"] = total > 0 ? json(as_number(row["last_hour"]["worker_seconds"]) / total) : json(nullptr);
    }
  }
  json out = envelope(viewer);
  out["tenants"] = std::move(list);
  return out;
}

}  // namespace zkfarm
