// tenants.cc -- see tenants.h.
#include "cluster/tenants.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <span>

#include "base/digest.h"
#include "base/hex.h"
#include "cluster/job_store.h"

namespace zkfarm {
namespace {

// What a tenant's client runs, and why (cluster/farm_api.h is that client):
//   connection: auth, hello, ping, select, echo, quit, reset, acl whoami (the
//     client asks which tenant it is);
//   submit and cancel: fcall (the farm's client functions; Redis runs them
//     with this user's ACL, so each command they run is listed here too:
//     exists, hget, hset, lpush, zadd; sadd, rpush, expire, zrem,
//     zremrangebyrank, publish);
//   status, result, list: hget, hmget, hgetall, get, llen, lrange, zrange,
//     zrevrange, zcard, smembers, sismember;
//   wait: blpop, and rpush + expire in multi/exec (the done marker put back);
//   the raw queue push: lpush;
//   the job events: subscribe, unsubscribe;
//   its own circuits (`zkfarm circuit add`): watch, unwatch, multi, exec,
//     discard, hdel, hsetnx, hset, sadd.
// Everything else is refused: eval, evalsha, script, function (no code of
// its own on the server), keys, scan (no listing beyond its namespace: they
// ignore key patterns), config, flushall, flushdb, del, set, acl other than
// whoami, client, debug, shutdown, ...
constexpr const char* kTenantCommands[] = {
    "+auth",   "+hello",     "+ping",    "+select",  "+echo",     "+quit",            "+reset", "+acl|whoami",
    "+fcall",  "+exists",    "+hget",    "+hmget",   "+hgetall",  "+get",             "+llen",  "+lrange",
    "+zrange", "+zrevrange", "+zcard",   "+smembers", "+sismember", "+blpop",         "+rpush", "+lpush",
    "+expire", "+multi",     "+exec",    "+discard", "+watch",    "+unwatch",         "+hset",  "+hsetnx",
    "+hdel",   "+sadd",      "+zadd",    "+zrem",    "+zremrangebyrank", "+publish", "+subscribe",
    "+unsubscribe",
};

std::uint64_t parse_count(const std::string& name, const std::string& field, const std::string& text) {
  try {
    std::size_t used = 0;
    const unsigned long long v = std::stoull(text, &used);
    if (used != text.size() || text.empty() || text[0] == '-') throw std::invalid_argument(text);
    return v;
  } catch (const std::exception&) {
    throw TenantError("tenant record " + name + ": " + field + " is not a count ('" + text + "')");
  }
}

TenantRecord parse_record(const std::string& name, const RedisReply& hash) {
  TenantRecord record;
  record.name = name;
  const auto& a = hash.as_array();
  for (std::size_t i = 0; i + 1 < a.size(); i += 2) {
    const std::string& k = a[i].as_string();
    const std::string& v = a[i + 1].as_string();
    if (k == TenantRecord::kWeight) {
      try {
        record.weight = std::stod(v);
      } catch (const std::exception&) {
        throw TenantError("tenant record " + name + ": weight is not a number ('" + v + "')");
      }
    } else if (k == TenantRecord::kReservedWorkers) {
      record.reserved_workers = static_cast<std::uint32_t>(parse_count(name, k, v));
    } else if (k == TenantRecord::kMaxQueuedJobs) {
      record.max_queued_jobs = parse_count(name, k, v);
    } else if (k == TenantRecord::kMaxActivePartitions) {
      record.max_active_partitions = parse_count(name, k, v);
    } else if (k == TenantRecord::kMaxJobBytes) {
      record.max_job_bytes = parse_count(name, k, v);
    } else if (k == TenantRecord::kUser) {
      record.user = v;
    } else if (k == TenantRecord::kStatusTokenSha256) {
      record.status_token_sha256 = v;
    } else if (k == TenantRecord::kCreatedAt) {
      try {
        record.created_at = std::stod(v);
      } catch (const std::exception&) {
        record.created_at = 0;
      }
    }
  }
  record.check();
  return record;
}

std::string format_weight(double w) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", w);
  return buf;
}

std::vector<std::string> record_fields(const TenantRecord& r) {
  return {TenantRecord::kWeight,
          format_weight(r.weight),
          TenantRecord::kReservedWorkers,
          std::to_string(r.reserved_workers),
          TenantRecord::kMaxQueuedJobs,
          std::to_string(r.max_queued_jobs),
          TenantRecord::kMaxActivePartitions,
          std::to_string(r.max_active_partitions),
          TenantRecord::kMaxJobBytes,
          std::to_string(r.max_job_bytes)};
}

// 32 random bytes as hex: a password no one guesses.
std::string random_password() {
  std::random_device rd;
  std::array<std::uint8_t, 32> bytes;
  for (auto& b : bytes) b = static_cast<std::uint8_t>(rd());
  return to_hex(bytes);
}

// ACL SETUSER for the tenant with this password (Redis keeps only its sha256).
void set_user(RedisClient& redis, const KeyLayout& keys, const std::string& name, const std::string& password) {
  std::vector<std::string> command = {"ACL", "SETUSER", tenant_user_name(keys, name)};
  for (auto& rule : tenant_acl_rules(keys, name)) command.push_back(std::move(rule));
  command.push_back("#" + sha256_hex(std::span<const std::uint8_t>(
                              reinterpret_cast<const std::uint8_t*>(password.data()), password.size())));
  redis.command(command);
}

// A status page token for tenant `name`: its name, '.', 32 random bytes
// as hex (the name lets the page read one record, not all of them).
std::string new_status_token(const std::string& name) { return name + "." + random_password(); }

std::string token_sha256(const std::string& token) {
  return sha256_hex(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(token.data()), token.size()));
}

void check_name(const std::string& name) {
  if (!is_valid_tenant_name(name))
    throw TenantError("'" + name + "' is not a tenant name (" + kTenantNameRule + ")");
}

}  // namespace

std::string TenantRecord::to_json() const {
  return nlohmann::json({{"name", name},
                         {"weight", weight},
                         {"reserved_workers", reserved_workers},
                         {"max_queued_jobs", max_queued_jobs},
                         {"max_active_partitions", max_active_partitions},
                         {"max_job_bytes", max_job_bytes},
                         {"user", user},
                         {"created_at", created_at},
                         {"status_token", !status_token_sha256.empty()}})
      .dump();
}

void TenantRecord::check() const {
  if (name != kDefaultTenant) check_name(name);
  if (!std::isfinite(weight) || weight <= 0 || weight > kMaxWeight)
    throw TenantError("tenant " + name + ": weight must be a number above 0 and at most 1e6, got " +
                      format_weight(weight));
}

TenantRecord default_tenant_record() {
  TenantRecord r;
  r.name = kDefaultTenant;
  return r;
}

std::vector<std::string> tenant_names(RedisClient& redis, const KeyLayout& keys) {
  std::vector<std::string> names;
  const RedisReply members = redis.command({"SMEMBERS", keys.tenants()});
  for (const auto& e : members.as_array())
    if (is_valid_tenant_name(e.as_string())) names.push_back(e.as_string());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<TenantRecord> load_tenants(RedisClient& redis, const KeyLayout& keys) {
  const std::vector<std::string> names = tenant_names(redis, keys);
  std::vector<TenantRecord> out;
  if (names.empty()) return out;
  std::vector<std::vector<std::string>> commands;
  for (const auto& name : names) commands.push_back({"HGETALL", keys.tenant_record(name)});
  const RedisReply replies = redis.transaction(commands);
  for (std::size_t i = 0; i < names.size(); ++i) {
    try {
      out.push_back(parse_record(names[i], replies.as_array().at(i)));
    } catch (const TenantError&) {
      // Skipped: `zkfarm tenant list` names the problem.
    }
  }
  return out;
}

std::optional<TenantRecord> load_tenant(RedisClient& redis, const KeyLayout& keys, const std::string& name) {
  check_name(name);
  if (redis.command({"SISMEMBER", keys.tenants(), name}).as_integer() != 1) return std::nullopt;
  return parse_record(name, redis.command({"HGETALL", keys.tenant_record(name)}));
}

std::string tenant_user_name(const KeyLayout& keys, const std::string& name) {
  std::string user;
  for (char c : keys.prefix()) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    user += plain ? c : '-';
  }
  return user + "tenant-" + name;
}

std::string tenant_of_user(const KeyLayout& keys, const std::string& user) {
  const std::string head = tenant_user_name(keys, "");
  if (user.size() <= head.size() || user.compare(0, head.size(), head) != 0) return "";
  const std::string name = user.substr(head.size());
  return is_valid_tenant_name(name) ? name : "";
}

std::vector<std::string> tenant_acl_rules(const KeyLayout& keys, const std::string& name) {
  check_name(name);
  if (keys.prefix().find_first_of("*?[]\\") != std::string::npos)
    throw TenantError("the key prefix '" + keys.prefix() +
                      "' holds a glob character (* ? [ ] \\): tenants' ACL patterns would reach other keys");
  const std::string space = keys.tenant_prefix(name);
  std::vector<std::string> rules = {"reset", "on", "~" + space + "*", "&" + space + "*"};
  for (const char* c : kTenantCommands) rules.push_back(c);
  return rules;
}

std::string status_token_tenant(std::string_view token) {
  const auto dot = token.find('.');
  if (dot == std::string_view::npos || token.size() - dot - 1 != 64) return "";
  for (char c : token.substr(dot + 1))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return "";
  const std::string name(token.substr(0, dot));
  return is_valid_tenant_name(name) ? name : "";
}

std::string TenantCredentials::url(const std::string& admin_url) const {
  const RedisUrl admin = RedisUrl::parse(admin_url);
  const std::string host = admin.host.find(':') != std::string::npos ? "[" + admin.host + "]" : admin.host;
  return "redis://" + user + ":" + password + "@" + host + ":" + std::to_string(admin.port) + "/" +
         std::to_string(admin.db);
}

namespace {
std::vector<std::string> share_command(RedisClient& redis, const KeyLayout& keys, const char* verb,
                                       const std::string& circuit_id, const std::vector<std::string>& tenants) {
  if (tenants.empty()) throw TenantError("name at least one tenant, or * for all");
  if (redis.command({"EXISTS", keys.circuit(circuit_id)}).as_integer() != 1)
    throw TenantError("the farm has no circuit " + circuit_id + " (`zkfarm circuit add` it with the admin's URL)");
  std::vector<std::string> command = {verb, keys.circuit_tenants(circuit_id)};
  for (const auto& name : tenants) {
    if (name != "*") {
      check_name(name);
      if (redis.command({"SISMEMBER", keys.tenants(), name}).as_integer() != 1) throw TenantError("no tenant " + name);
    }
    command.push_back(name);
  }
  return command;
}
}  // namespace

void share_circuit(RedisClient& redis, const KeyLayout& keys, const std::string& circuit_id,
                   const std::vector<std::string>& tenants) {
  redis.command(share_command(redis, keys, "SADD", circuit_id, tenants));
}

void unshare_circuit(RedisClient& redis, const KeyLayout& keys, const std::string& circuit_id,
                     const std::vector<std::string>& tenants) {
  redis.command(share_command(redis, keys, "SREM", circuit_id, tenants));
}

bool save_acl(RedisClient& redis) {
  const RedisReply reply = redis.command({"CONFIG", "GET", "aclfile"});
  const auto& a = reply.as_array();
  if (a.size() < 2 || a[1].as_string().empty()) return false;
  redis.command({"ACL", "SAVE"});
  return true;
}

TenantCredentials add_tenant(RedisClient& redis, const KeyLayout& keys, TenantRecord record) {
  record.check();
  if (record.name == kDefaultTenant) throw TenantError("\"default\" is the farm's own namespace, not a tenant");
  const std::vector<std::string> rules = tenant_acl_rules(keys, record.name);  // checks the prefix first
  (void)rules;
  if (redis.command({"SISMEMBER", keys.tenants(), record.name}).as_integer() == 1)
    throw TenantError("tenant " + record.name + " exists (`zkfarm tenant set` changes its figures, `zkfarm "
                      "tenant rotate` its password)");
  load_client_functions(redis);
  TenantCredentials credentials{tenant_user_name(keys, record.name), random_password(),
                                new_status_token(record.name)};
  set_user(redis, keys, record.name, credentials.password);
  record.user = credentials.user;
  char created[32];
  std::snprintf(created, sizeof created, "%.3f", unix_now());
  std::vector<std::string> hset = {"HSET", keys.tenant_record(record.name)};
  for (auto& f : record_fields(record)) hset.push_back(std::move(f));
  hset.insert(hset.end(), {TenantRecord::kUser, record.user, TenantRecord::kCreatedAt, created,
                           TenantRecord::kStatusTokenSha256, token_sha256(credentials.status_token)});
  redis.transaction({hset, {"SADD", keys.tenants(), record.name}});
  save_acl(redis);
  return credentials;
}

void set_tenant(RedisClient& redis, const KeyLayout& keys, const TenantRecord& record) {
  record.check();
  if (!load_tenant(redis, keys, record.name)) throw TenantError("no tenant " + record.name);
  std::vector<std::string> hset = {"HSET", keys.tenant_record(record.name)};
  for (auto& f : record_fields(record)) hset.push_back(std::move(f));
  redis.command(hset);
}

TenantCredentials rotate_tenant(RedisClient& redis, const KeyLayout& keys, const std::string& name) {
  if (!load_tenant(redis, keys, name)) throw TenantError("no tenant " + name);
  load_client_functions(redis);
  TenantCredentials credentials{tenant_user_name(keys, name), random_password(), new_status_token(name)};
  set_user(redis, keys, name, credentials.password);
  redis.command({"HSET", keys.tenant_record(name), TenantRecord::kUser, credentials.user,
                 TenantRecord::kStatusTokenSha256, token_sha256(credentials.status_token)});
  save_acl(redis);
  return credentials;
}

void remove_tenant(RedisClient& redis, const KeyLayout& keys, const std::string& name) {
  if (!load_tenant(redis, keys, name)) throw TenantError("no tenant " + name);
  redis.command({"ACL", "DELUSER", tenant_user_name(keys, name)});
  redis.transaction({{"SREM", keys.tenants(), name}, {"DEL", keys.tenant_record(name)}});
  save_acl(redis);
}

}  // namespace zkfarm
