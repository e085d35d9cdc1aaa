// tenants.h -- the farm's tenants: their records, their Redis ACL users,
// and the reader the coordinators call.
//
// A tenant is a client of the farm that sees and touches only its own jobs.
// Each has:
//   * a record, <p>tenant:<name> (hash) listed in <p>tenants (set): its
//     weight, reserved workers and quotas (TenantRecord), which the
//     coordinators read (load_tenants) and the admin writes (`zkfarm tenant
//     add|set`);
//   * a namespace, <p>t:<name>: (KeyLayout::for_tenant), holding its
//     queues, job records, results and events;
//   * a Redis ACL user (tenant_user_name) whose keys and channels are that
//     namespace only, and whose commands are what a client needs for its own
//     jobs (tenant_acl_rules): no script of its own (only the farm's client
//     functions, FCALL), no KEYS/SCAN, no administration. Its password is
//     made here and printed once by the CLI; Redis keeps only its sha256;
//   * a status page token (status_token_of): "<name>.<64 hex digits>",
//     made with the password and printed with it, once; the record keeps
//     only its sha256. A coordinator's status page shows the bearer of it
//     that tenant's own jobs and figures (coordinator/status_page.h).
// A farm without tenants has only the default tenant: the jobs under <p>
// itself, served as before, by the admin's credentials.
//
// Every function throws RedisError for Redis failures (NOPERM: the caller
// is not the admin) and TenantError for a bad name, figure or state.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/keys.h"
#include "cluster/redis_client.h"

namespace zkfarm {

class TenantError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A tenant's figures. The fair-share policy and the admission checks of the
// coordinator use them (0 in a quota: no limit).
struct TenantRecord {
  // The share of workers a tenant with work gets against the others':
  // equal shares unless the admin says otherwise.
  static constexpr double kDefaultWeight = 1;
  static constexpr double kMaxWeight = 1e6;

  std::string name;
  double weight = kDefaultWeight;
  std::uint32_t reserved_workers = 0;
  std::uint64_t max_queued_jobs = 0;
  std::uint64_t max_active_partitions = 0;
  std::uint64_t max_job_bytes = 0;
  std::string user;       // its Redis ACL user
  double created_at = 0;  // unix seconds
  std::string status_token_sha256;  // hex; "" for a tenant made before status tokens (rotate makes one)

  // The hash fields of <p>tenant:<name>, spelled here only.
  static constexpr const char* kWeight = "weight";
  static constexpr const char* kReservedWorkers = "reserved_workers";
  static constexpr const char* kMaxQueuedJobs = "max_queued_jobs";
  static constexpr const char* kMaxActivePartitions = "max_active_partitions";
  static constexpr const char* kMaxJobBytes = "max_job_bytes";
  static constexpr const char* kUser = "user";
  static constexpr const char* kCreatedAt = "created_at";
  static constexpr const char* kStatusTokenSha256 = "status_token_sha256";

  // One line of JSON: name, weight, reserved_workers, the quotas, user,
  // created_at, status_token (whether it has one; never the hash).
  std::string to_json() const;
  // Throws TenantError naming the figure that is out of range (a weight not
  // in (0, kMaxWeight], or a name that is not a tenant name).
  void check() const;
};

// The figures of the default tenant (a farm without tenants, or the jobs
// the admin's credentials push): the defaults above.
TenantRecord default_tenant_record();

// The tenants of the farm, by name (sorted). Cheap: one SMEMBERS and one
// HGETALL per tenant, in one round trip each. A record that does not parse
// is skipped (the admin sees it in `zkfarm tenant list` as an error).
std::vector<TenantRecord> load_tenants(RedisClient& redis, const KeyLayout& keys);
// The names only (SMEMBERS <p>tenants), sorted.
std::vector<std::string> tenant_names(RedisClient& redis, const KeyLayout& keys);
// nullopt when no tenant has that name. Throws TenantError for a record that
// does not parse.
std::optional<TenantRecord> load_tenant(RedisClient& redis, const KeyLayout& keys, const std::string& name);

// The ACL user of tenant `name`: the farm prefix with every character other
// than [A-Za-z0-9_-] made '-', "tenant-", the name ("zkfarm-tenant-acme"
// for the default prefix): one user per farm and tenant, and a name a
// redis:// URL carries without escapes.
std::string tenant_user_name(const KeyLayout& keys, const std::string& name);
// The tenant whose ACL user `user` is ("" for any other user: the admin,
// the default tenant).
std::string tenant_of_user(const KeyLayout& keys, const std::string& user);
// The ACL SETUSER rules of tenant `name`, after the user name and before
// its password: reset, its key and channel patterns, and the commands a
// client needs (cluster/tenants.cc lists them and why). Throws TenantError
// when the farm prefix holds a glob character (* ? [ ] \), which would make
// the patterns reach other keys.
std::vector<std::string> tenant_acl_rules(const KeyLayout& keys, const std::string& name);

struct TenantCredentials {
  std::string user, password;
  std::string status_token;  // the status page token ("<name>.<hex>")
  // A redis:// URL of the same server as admin_url with these credentials.
  std::string url(const std::string& admin_url) const;
};

// The tenant a status page token names ("<name>.<hex>"), or "" when it is
// not of that form. It says nothing of whether the token is valid: compare
// sha256_hex(token) with that tenant's status_token_sha256.
std::string status_token_tenant(std::string_view token);

// Registers a tenant: its ACL user (a new random password), its status page
// token, its record, and
// the farm's client functions; saves the ACL when the server has an ACL
// file (see save_acl). Throws TenantError if the tenant exists.
TenantCredentials add_tenant(RedisClient& redis, const KeyLayout& keys, TenantRecord record);
// Rewrites an existing tenant's figures (record.user and created_at are
// kept). Throws TenantError if there is no such tenant.
void set_tenant(RedisClient& redis, const KeyLayout& keys, const TenantRecord& record);
// A new password for the tenant's user (the old one stops working at once;
// connections already open stay until they close) and a new status page
// token (the old one is refused from the next request on); its ACL rules
// are rewritten too (as add_tenant's, e.g. after an upgrade).
TenantCredentials rotate_tenant(RedisClient& redis, const KeyLayout& keys, const std::string& name);
// Deletes the tenant's user (its open connections are closed) and record.
// Its keys stay (jobs in flight finish; they expire with their TTL).
void remove_tenant(RedisClient& redis, const KeyLayout& keys, const std::string& name);
// Shares the farm's circuit `circuit_id` (registered by the admin) with the
// named tenants, or with every tenant for "*" (<p>circuit:<id>:tenants):
// their jobs may then use it. Throws TenantError for a name that is neither
// "*" nor a registered tenant, or a circuit the farm has no record of.
void share_circuit(RedisClient& redis, const KeyLayout& keys, const std::string& circuit_id,
                   const std::vector<std::string>& tenants);
// Takes the shares back (the names as above); jobs already taken in go on.
void unshare_circuit(RedisClient& redis, const KeyLayout& keys, const std::string& circuit_id,
                     const std::vector<std::string>& tenants);

// ACL SAVE when the server was started with an ACL file (CONFIG GET
// aclfile); returns whether it saved. Without one, users made by ACL
// SETUSER live until the server restarts (docs/OPERATIONS.md, "Tenants").
bool save_acl(RedisClient& redis);

}  // namespace zkfarm
