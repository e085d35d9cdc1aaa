// status_page.h -- the operators' status page and its JSON API, served by
// the coordinator on its own HTTP server (--status-listen, loopback by
// default; /metrics has a server of its own), docs in cluster/README.md,
// "Status page".
//
//   /                  the page (HTML; /status.js and /status.css beside it)
//   /api/v1/jobs       queued (per priority), running, recently done, failed
//   /api/v1/workers    every worker with a live record
//   /api/v1/circuits   registered circuits and where they are resident
//   /api/v1/stats      per-minute throughput and latency, last hour
//   /api/v1/tenants    per tenant: queued and running jobs, last hour's
//                      partitions and worker time, weight and quotas
//
// Viewers. Every answer says who asked ("viewer": role admin or tenant).
// The admin -- the bearer of --http-token-file's token, or anyone when the
// page has no token -- sees the whole farm: every tenant's jobs (each row
// names its tenant; the default tenant's are "default"), every worker and
// circuit, and a summary row per tenant. A tenant -- the bearer of the
// status page token `zkfarm tenant add|rotate` printed for it (checked
// against the sha256 in its record at every request, so a rotated or
// removed tenant's old token is refused at once) -- sees only what is its
// own: its jobs (read from its namespace alone, so no other tenant's job
// id, circuit or count is ever read for it), its own summary row (no share
// of the farm), its circuits (its own and those shared with it; where they
// are resident as a count of workers), its own per-minute stats, and of
// the workers only how many are alive, by device model: no worker ids,
// hosts, coordinators' lists, proof or fault counts, resident circuits.
// A token of a tenant's form that does not match is refused (401), as is
// any other token when the page has one.
//
// Everything is read from Redis, never from this coordinator's memory, so
// every coordinator sharing one Redis shows the whole farm. Read-only: it
// never writes to Redis. It reads jobs through the summary JobStore keeps
// (index:queued, index:running, recent:*, then HMGET of job:<id>'s small
// fields), never a raw queue or processing-list entry nor the job's spec: a
// page load costs the same with 8 MiB jobs as with small ones. It shows no
// job inputs (witness references, inline witnesses, metadata) and no error
// text, which may quote them: a failure shows its code and the partition at
// fault. Failures are listed per code (the newest few of each), so a flood
// of one kind cannot hide another. The page renders every value as text
// (DOM textContent, no markup from data) under a Content-Security-Policy
// that allows only our own script.
//
// Threading: handle() runs on the HTTP server's threads; one Redis
// connection, used under a mutex (a page refresh is a few round trips).
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/defaults.h"
#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "monitoring/metrics/http_endpoint.h"

namespace zkfarm {

// The page's server: a refresh is 4 requests every 5 s per open browser, each
// a few Redis round trips under one connection; 4 threads serve several
// viewers, and 5 s per read or write is plenty for a browser on a slow link
// while a client that trickles its request loses its thread within 5 s.
inline constexpr metrics::HttpServerLimits kStatusPageServerLimits{4, std::chrono::milliseconds(5000)};

struct StatusPageConfig {
  std::string redis_url = kDefaultRedisUrl;
  std::string key_prefix = kDefaultKeyPrefix;
  std::string coordinator_id;  // shown as "served by"
  // Non-empty: every request needs "Authorization: Bearer <token>" or HTTP
  // basic auth with the token as password (any user name), this token (the
  // admin's view) or a tenant's status page token (its view); else 401.
  // Empty: the admin's view for everyone but the bearer of a tenant's token.
  std::string access_token;
  std::size_t recent_jobs = 50;     // done jobs listed
  std::size_t failed_per_code = 10;  // failed jobs listed per error code (newest)
  std::size_t queued_jobs = 20;  // queued jobs listed per priority (oldest first)
};

// Reads an access token file (--http-token-file): the first line, trimmed.
// Throws std::runtime_error if it cannot be read or the token is shorter
// than 16 characters.
std::string read_access_token_file(const std::string& path);

class StatusPage {
 public:
  explicit StatusPage(StatusPageConfig config);

  // A metrics::HttpHandler: answers /, /status.js, /status.css and
  // /api/v1/*; returns false for other paths. GET and HEAD only (else 405);
  // 401 without the token when one is configured; 503 with a JSON error
  // when Redis cannot be read.
  bool handle(const metrics::HttpRequest& request, metrics::HttpResponse& response);

  // Who a request is: the admin, or one tenant.
  struct Viewer {
    std::string tenant;  // "" for the admin
    bool admin() const { return tenant.empty(); }
  };
  static Viewer admin() { return Viewer{}; }

  // The API documents as `viewer` sees them (throw RedisError when Redis
  // fails).
  nlohmann::json jobs(const Viewer& viewer);
  nlohmann::json workers(const Viewer& viewer);
  nlohmann::json circuits(const Viewer& viewer);
  nlohmann::json stats(const Viewer& viewer);
  nlohmann::json tenants(const Viewer& viewer);

 private:
  // The viewer an Authorization header makes, or nullopt (401). Reads the
  // tenant's record for a tenant's token (throws RedisError).
  std::optional<Viewer> authorize(const std::string& authorization);
  // The tenants whose jobs `viewer` sees, as (name, layout): the admin the
  // default tenant ("default") and every registered one, a tenant itself.
  std::vector<std::pair<std::string, KeyLayout>> layouts(const Viewer& viewer);
  nlohmann::json envelope(const Viewer& viewer) const;

  StatusPageConfig config_;
  KeyLayout keys_;
  std::mutex mutex_;   // guards redis_
  RedisClient redis_;
};

}  // namespace zkfarm
