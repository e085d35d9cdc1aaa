// witness_access.h -- reading a job's witness on a client's behalf.
//
// Witnesses are named by WitnessRef (schema/job.h): a file under the
// operator's witness roots, a Redis key under the farm's prefix, or an
// http(s) URL the policy allows. fetch_witness() returns their bytes (a
// read-only mapping for files), checked against the job's sha256 and size,
// for the worker; read_witness_summary() reads only the header and the
// public inputs -- what the coordinator needs to verify proofs -- without
// reading the rest of a multi-GB witness. The coordinator and the workers
// link this (and through it libcurl, cluster/http_fetch.h); the artifact
// store and circuit records (cluster/artifacts.h) do not need it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cluster/http_fetch.h"
#include "cluster/redis_client.h"
#include "formats/binfile.h"
#include "formats/wtns.h"
#include "schema/job.h"

namespace zkfarm {

// A witness reference that cannot be read (missing file, missing Redis key):
// not the worker's fault, possibly transient.
class WitnessUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A witness whose bytes differ from the sha256 or size its job gives.
class WitnessChecksum : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A witness longer than its circuit's: more bytes than a .wtns of the
// circuit's num_vars values (wtns_file_bytes), found before it is read (a
// file's size, STRLEN, Content-Length) or as soon as a transfer passes it.
// Bad input: the job's witness is not one of this circuit.
class WitnessTooLarge : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A witness transfer stopped because its task was cancelled.
class WitnessCancelled : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Which witnesses a daemon may read on a client's behalf (--witness-root and
// --prefix; docs/OPERATIONS.md, "Security"). A job names its witnesses, so
// without this anyone who can push a job could make the coordinator and
// the workers open any path or read any Redis key they can.
struct WitnessPolicy {
  // file:// witnesses must be regular files whose canonical path (realpath:
  // no `..`, every symlink followed) lies under one of these canonical
  // directories. Empty: every file:// witness is refused.
  std::vector<std::string> roots;
  // The same directories as configured (absolute, lexically normalized),
  // for a quick refusal that touches no file system outside them.
  std::vector<std::string> configured_roots;
  // redis:// witnesses must name a key that starts with this (the farm's
  // key prefix, e.g. "zkfarm:").
  std::string redis_key_prefix;
  // http(s):// witnesses: timeouts, redirects, size cap, TLS (--ca-file),
  // and the URLs they may come from (--witness-url-allow; make_witness_policy
  // sets kDefaultWitnessUrlAllow, cluster/defaults.h).
  HttpLimits http;
  // The registered tenant whose jobs this policy serves (tenant_policy);
  // "" for the default tenant. Named in refusals.
  std::string tenant;

  // Where a registered tenant's file:// witnesses lie below each root:
  // <root>/tenants/<name>/.
  static constexpr const char* kTenantsDir = "tenants";
  // The policy of tenant `tenant`'s jobs, on the coordinator and on the
  // workers alike: file:// witnesses only under <root>/tenants/<tenant>/ of
  // each root (the directory itself must be a directory there: a symlink
  // in its place leads outside it and is refused like any other escape),
  // redis:// witnesses only under the tenant's namespace
  // (KeyLayout::for_tenant's job_prefix); HTTP limits as this one's. For
  // "" (the default tenant) a copy of this policy. Throws
  // std::invalid_argument for a name that is not a tenant name
  // (is_valid_tenant_name), before any path is made of it.
  WitnessPolicy tenant_policy(const std::string& tenant) const;
};

// The policy of a daemon: `roots` are the operator's --witness-root
// directories; none given means the default, the directory that holds the
// artifact store (the parent of `artifacts`: /srv/zkfarm in deploy/, where
// the artifact store and the witnesses share the shared storage), or the
// store itself when its parent is "/". Throws std::invalid_argument naming a
// root that is relative, missing or not a directory.
WitnessPolicy make_witness_policy(const std::vector<std::string>& roots, const std::string& artifacts,
                                  const std::string& redis_key_prefix);

// The bytes of a witness of at most max_bytes (the circuit's exact witness
// size, witness_max_bytes). Files are mapped read-only; Redis keys are read
// with STRLEN, then GETRANGE of at most max_bytes (redis may be null when
// the reference is not redis://); URLs are fetched into one buffer
// (http_get, capped at max_bytes). A reference outside `policy` is refused
// before anything is opened or read. Throws WitnessUnavailable naming the
// reference and the reason; the reason never echoes the file's bytes or a
// URL's query string, a path outside the roots gets the same answer whether
// or not it exists, and a URL outside policy.http.urls the same as one that
// cannot be reached. Throws WitnessTooLarge for more than max_bytes (before
// anything is allocated where the length is known first), WitnessChecksum
// when the bytes differ from the reference's sha256 or size.
// `cancelled`, when given, stops an HTTP transfer within about a second of
// turning true (WitnessCancelled).
std::shared_ptr<const FileBytes> fetch_witness(const WitnessRef& ref, RedisClient* redis,
                                               const WitnessPolicy& policy, std::uint64_t max_bytes,
                                               const std::atomic<bool>* cancelled = nullptr);

// The size of a witness of a circuit of num_vars signals (its .wtns header
// and values, 32 bytes each on every curve zkfarm proves): what
// fetch_witness and read_witness_summary cap every read at.
inline std::uint64_t witness_max_bytes(std::uint32_t num_vars) { return wtns_file_bytes(num_vars); }

// Memory that reads hold, counted in a counter shared with other holders
// against a limit (the coordinator's held jobs and --memory-budget-mib).
struct ReadBudget {
  std::atomic<std::uint64_t>* held = nullptr;  // null: reads are not counted
  std::uint64_t limit = 0;
};

// What intake needs of a job's witness: its curve, length and public inputs,
// from its first max(wtns_prefix_bytes(num_public), kWitnessPrefixMinBytes)
// bytes only (formats/wtns.h, read_wtns_summary): a pread of a file, a
// GETRANGE of a Redis key, one Range request for a URL. Its length is checked
// against the job's size wherever it is known (a file's size, STRLEN, an
// HTTP server's Content-Range), its sha256 never: the worker that proves it
// reads it whole and checks both (fetch_witness). A witness whose header or
// public inputs lie past that first read is read whole (without the checks).
// Every read is at most max_bytes (the circuit's witness size), and counts
// in `budget` while it lasts: the first read always (it is small), the
// whole one only if it fits under the budget's limit now (else
// WitnessUnavailable says so).
// Throws WitnessUnavailable as fetch_witness does, WitnessTooLarge for a
// known length above max_bytes, WitnessChecksum for a length that differs
// from the job's, FormatError for a malformed witness.
inline constexpr std::uint64_t kWitnessPrefixMinBytes = 64 << 10;
WtnsSummary read_witness_summary(const WitnessRef& ref, RedisClient* redis, const WitnessPolicy& policy,
                                 std::uint32_t num_public, std::uint64_t max_bytes, const ReadBudget& budget = {});

}  // namespace zkfarm
