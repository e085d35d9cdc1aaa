// artifacts.h -- the artifact store, circuit records and witness access.
//
// Artifact store: a directory every host can read (local disk for one host,
// NFS for many), content-addressed by circuit id = sha256 of the zkey:
//   <root>/<id>/circuit.zkey   the proving key, byte-identical to what was added
//   <root>/<id>/circuit.pce    the PCE (formats/pce.h), built once at add time
//   <root>/<id>/vk.json        the verifying key (snarkjs JSON) for the coordinator
//   <root>/<id>/witgen/        optional: the circuit's witness generator
//                              (witness-generator + witness-generator.dat, witgen/)
// Files are written to a temp name and renamed, so readers never see a
// partial artifact. Redis records each circuit in <p>circuit:<id> with paths
// relative to the root, so hosts may mount the store at different places,
// and the list of its files with their sha256 and size ("files"), so a
// worker without the store can fetch them over HTTP (any web server serving
// the root) and check each before use.
//
// Witnesses are named by WitnessRef (job.h); fetch_witness() returns their
// bytes (a read-only mapping for files), checked against the job's sha256
// and size, for the worker; read_witness_summary() reads only the header
// and the public inputs -- what the coordinator needs to verify proofs --
// without reading the rest of a multi-GB witness.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "cluster/http_fetch.h"
#include "schema/job.h"
#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "formats/binfile.h"
#include "formats/curve_id.h"
#include "formats/wtns.h"
#include "kernels/groth16_types.h"

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

// One file of a circuit as recorded in Redis.
struct ArtifactFile {
  std::string path;         // relative to the store root
  std::string sha256;       // hex; "" when not recorded
  std::uint64_t bytes = 0;  // 0 when not recorded
  bool executable = false;  // a program (the witness generator): installed 0755
};

// A circuit's record: its key's sizes (num_vars, num_public, domain_size, as
// the zkey's header states them) and where its files are.
struct CircuitInfo : Groth16KeySizes {
  std::string id;  // sha256 of the zkey, hex
  CurveId curve = CurveId::kBn254;
  std::uint64_t zkey_bytes = 0;
  bool pce_has_c = false;         // PCE built from .r1cs: workers check constraints
  std::string zkey_path = "";     // relative to the store root
  std::string pce_path = "";
  std::string vk_path = "";       // snarkjs verification_key.json, relative
  std::string vk_sha256 = "";
  // A witness generator (`zkfarm circuit add --witness-generator`; empty:
  // none, jobs must carry witnesses): circom's C++ program, relative to the
  // root, its .dat beside it, and their sha256s (workers check them).
  std::string witgen_path = "";
  std::string witgen_sha256 = "";
  std::string witgen_dat_sha256 = "";
  // Where each public input's value is in an input.json (witgen::
  // public_input_map_json): the coordinator takes input partitions' public
  // inputs from it, not from the worker. "" for circuits registered without.
  std::string witgen_public_map = "";
  // The Redis user who first registered the circuit (`zkfarm circuit
  // add`): the one who may change its witness generator. "" for records
  // written before it was kept.
  std::string registered_by = "";
  bool has_witness_generator() const { return !witgen_path.empty(); }
  // Every file a worker needs, with its digest ("files" in the record; empty
  // for records written before it: see circuit_files()).
  std::vector<ArtifactFile> files;
};

// The files to fetch for a circuit: info.files, or for an older record the
// zkey (its sha256 is the id), the PCE (checked by its own checksum when
// loaded) and the verifying key (vk_sha256).
std::vector<ArtifactFile> circuit_files(const CircuitInfo& info);

class ArtifactStore {
 public:
  explicit ArtifactStore(std::string root) : root_(std::move(root)) {}
  const std::string& root() const { return root_; }
  std::string absolute(const std::string& relative) const { return root_ + "/" + relative; }
  static std::string zkey_relative(const std::string& id) { return id + "/circuit.zkey"; }
  static std::string pce_relative(const std::string& id) { return id + "/circuit.pce"; }
  static std::string vk_relative(const std::string& id) { return id + "/vk.json"; }
  // <id>/witgen/witness-generator and .dat beside it.
  static std::string witgen_dir_relative(const std::string& id) { return id + "/witgen"; }
  static std::string witgen_relative(const std::string& id) { return id + "/witgen/witness-generator"; }

 private:
  std::string root_;
};

// Reads <p>circuit:<id>. Returns nullopt if it does not exist; throws
// RedisError, or std::runtime_error if the record is corrupt.
std::optional<CircuitInfo> load_circuit_info(RedisClient& redis, const KeyLayout& keys,
                                             const std::string& id);
// Writes <p>circuit:<id> and adds id to <p>circuits. Throws RedisError.
void store_circuit_info(RedisClient& redis, const KeyLayout& keys, const CircuitInfo& info);

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
  // http(s):// witnesses: timeouts, redirects, size cap, TLS (--ca-file).
  HttpLimits http;
};

// The policy of a daemon: `roots` are the operator's --witness-root
// directories; none given means the default, the directory that holds the
// artifact store (the parent of `artifacts`: /srv/zkfarm in deploy/, where
// the artifact store and the witnesses share the shared storage), or the
// store itself when its parent is "/". Throws std::invalid_argument naming a
// root that is relative, missing or not a directory.
WitnessPolicy make_witness_policy(const std::vector<std::string>& roots, const std::string& artifacts,
                                  const std::string& redis_key_prefix);

// The bytes of a witness. Files are mapped read-only; Redis keys are read
// with GET (redis may be null when the reference is not redis://); URLs are
// fetched into one buffer (http_get). A reference outside `policy` is
// refused before anything is opened or read. Throws WitnessUnavailable
// naming the reference and the reason; the reason never echoes the file's
// bytes or a URL's query string, and a path outside the roots gets the same
// answer whether or not it exists. Throws WitnessChecksum when the bytes
// differ from the reference's sha256 or size.
std::shared_ptr<const FileBytes> fetch_witness(const WitnessRef& ref, RedisClient* redis,
                                               const WitnessPolicy& policy);

// What intake needs of a job's witness: its curve, length and public inputs,
// from its first max(wtns_prefix_bytes(num_public), kWitnessPrefixMinBytes)
// bytes only (formats/wtns.h, read_wtns_summary): a pread of a file, a
// GETRANGE of a Redis key, one Range request for a URL. Its length is checked
// against the job's size wherever it is known (a file's size, STRLEN, an
// HTTP server's Content-Range), its sha256 never: the worker that proves it
// reads it whole and checks both (fetch_witness). A witness whose header or
// public inputs lie past that first read is read whole (without the checks).
// Throws WitnessUnavailable as fetch_witness does, WitnessChecksum for a
// length that differs from the job's, FormatError for a malformed witness.
inline constexpr std::uint64_t kWitnessPrefixMinBytes = 64 << 10;
WtnsSummary read_witness_summary(const WitnessRef& ref, RedisClient* redis, const WitnessPolicy& policy,
                                 std::uint32_t num_public);

}  // namespace zkfarm
