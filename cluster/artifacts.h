// artifacts.h -- the artifact store and circuit records.
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
// A job's witnesses are read through cluster/witness_access.h, which alone
// brings in HTTP (libcurl): the CLI's farm commands use this file without it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "formats/curve_id.h"
#include "kernels/groth16_types.h"

namespace zkfarm {

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

// Reads <p>circuit:<id> (for a tenant's layout, KeyLayout::for_tenant: the
// tenant's own record, <tp>circuit:<id>). Returns nullopt if it does not
// exist; throws RedisError, or std::runtime_error if the record is corrupt.
std::optional<CircuitInfo> load_circuit_info(RedisClient& redis, const KeyLayout& keys,
                                             const std::string& id);
// Writes <p>circuit:<id> and adds id to <p>circuits (for a tenant's layout:
// <tp>circuit:<id>, <tp>circuits). Throws RedisError.
void store_circuit_info(RedisClient& redis, const KeyLayout& keys, const CircuitInfo& info);
// The circuit `id` as the jobs of the layout's tenant may use it (what the
// coordinator's intake checks jobs against): for the default tenant, the
// farm's record; for a tenant, its own record -- refused (runtime_error)
// when it names a witness generator (registering one is the admin's
// action) or files other than <id>/circuit.zkey, circuit.pce, vk.json --
// or else the farm's record when the admin shared it with the tenant or
// with all (<p>circuit:<id>:tenants). nullopt: none the tenant may use.
std::optional<CircuitInfo> load_visible_circuit(RedisClient& redis, const KeyLayout& keys, const std::string& id);
// The record a worker fetches and checks circuit `id` by for a task of
// `tenant` (the Task's tenant; "" for the default tenant): the record
// load_visible_circuit chose at intake -- the tenant's own, with the same
// checks, else the farm's -- without asking whether the farm's circuit is
// shared with the tenant (the coordinator decided that when it took the job
// in: a share taken back later leaves jobs already taken in running). Every
// file is checked against the record's sha256 and the zkey's is the id, so
// either record is as good for the bytes. Reads only (HGETALL), as the
// workers' Redis user may. nullopt: neither record exists. Throws
// RedisError, std::invalid_argument for a tenant that is not a tenant name,
// std::runtime_error for a corrupt record or a tenant's record that
// load_visible_circuit refuses.
std::optional<CircuitInfo> load_task_circuit(RedisClient& redis, const KeyLayout& farm_keys, const std::string& tenant,
                                             const std::string& id);

}  // namespace zkfarm
