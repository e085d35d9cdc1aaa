// status_page.h -- the operators' status page and its JSON API, served by
// the coordinator on its metrics port (docs in cluster/README.md, "Status
// page").
//
//   /                  the page (HTML; /status.js and /status.css beside it)
//   /api/v1/jobs       queued (per priority), running, recently done, failed
//   /api/v1/workers    every worker with a live record
//   /api/v1/circuits   registered circuits and where they are resident
//   /api/v1/stats      per-minute throughput and latency, last hour
//
// Everything is read from Redis, never from this coordinator's memory, so
// every coordinator sharing one Redis shows the whole farm. Read-only: it
// never writes to Redis. It shows no job inputs (witness references, inline
// witnesses, metadata) and cuts query strings out of any URL quoted in an
// error message; the page renders every value as text (DOM textContent, no
// markup from data) under a Content-Security-Policy that allows only our own
// script.
//
// Threading: handle() runs on the HTTP server's threads; one Redis
// connection, used under a mutex (a page refresh is a few round trips).
#pragma once

#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "cluster/defaults.h"
#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "monitoring/metrics/metrics.h"

namespace zkfarm {

struct StatusPageConfig {
  std::string redis_url = kDefaultRedisUrl;
  std::string key_prefix = kDefaultKeyPrefix;
  std::string coordinator_id;  // shown as "served by"
  // Non-empty: every request needs "Authorization: Bearer <token>" or HTTP
  // basic auth with the token as password (any user name); else 401.
  std::string access_token;
  std::size_t recent_jobs = 50;  // done and failed jobs listed (each)
  std::size_t queued_jobs = 20;  // queued jobs listed per priority (oldest first)
};

// Reads an access token file (--http-token-file): the first line, trimmed.
// Throws std::runtime_error if it cannot be read or the token is shorter
// than 16 characters.
std::string read_access_token_file(const std::string& path);

// Cuts the query string out of every URL (scheme://...) in text:
// "file:///a.wtns?sig=x y" -> "file:///a.wtns?... y".
std::string redact_url_queries(const std::string& text);

class StatusPage {
 public:
  explicit StatusPage(StatusPageConfig config);

  // A metrics::HttpHandler: answers /, /status.js, /status.css and
  // /api/v1/*; returns false for other paths. GET and HEAD only (else 405);
  // 401 without the token when one is configured; 503 with a JSON error
  // when Redis cannot be read.
  bool handle(const metrics::HttpRequest& request, metrics::HttpResponse& response);

  // The API documents (throw RedisError when Redis fails).
  nlohmann::json jobs();
  nlohmann::json workers();
  nlohmann::json circuits();
  nlohmann::json stats();

 private:
  bool authorized(const std::string& authorization) const;

  StatusPageConfig config_;
  KeyLayout keys_;
  std::mutex mutex_;   // guards redis_
  RedisClient redis_;
};

}  // namespace zkfarm
