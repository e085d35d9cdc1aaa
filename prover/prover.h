// prover.h -- the prover service: the one Groth16 prove pipeline, used by
// `zkfarm prove` (cli/local_commands.cc) and by the worker (worker/task_stages.cc),
// on the CPU or on one CUDA device.
//
//   auto prover = Prover::cpu();                         // or Prover::cuda(ordinal)
//   auto circuit = prover->load({.zkey_path = "c.zkey", .pce_path = "c.pce"});
//   Proof proof = prover->prove(*circuit, Prover::open_witness("w.wtns"), {}, &timings);
//
// load() reads the circuit once: the zkey, and the PCE from a .pce file, from
// the .r1cs, or from the zkey's coefficient section; it checks they agree,
// and on a CUDA device uploads key and PCE into the device's resident cache
// (kernels/cuda/resident_cache.h), where they stay across proofs until
// evicted for another circuit (re-uploaded from the host copy when needed)
// or until the Circuit is dropped. prove() checks the witness against the
// circuit once (field, length, values, witness[0] = 1), proves, and
// optionally verifies the proof; only the witness moves to the device.
//
// prepare() does prove()'s first half on its own, outside the prove lock:
// parse and check a witness into host memory the engine reads fastest (on a
// CUDA device a reused page-locked buffer, so the upload is one DMA at full
// PCIe speed). The worker prepares the next partition's witness this way
// while the current one proves (worker.h, --prefetch).
//
// Every failure is a prover::Error with a typed kind (prover_error.h), decided
// from the type of what failed; the message names the file and what was
// expected and found.
//
// Threading: load(), prepare() and prove() may be called from several threads. Proofs
// run one at a time per Prover (one proof saturates the cores), except on an
// engine that keeps concurrent proofs apart itself (Engine::concurrent_proofs:
// the CUDA engine with lanes > 1); loading a circuit onto the engine waits
// for the proofs in progress; parsing a circuit runs outside that lock. A
// Circuit is immutable once returned.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <variant>
#include <vector>

#include "formats/binfile.h"
#include "formats/curve_id.h"
#include "prover/device_config.h"
#include "kernels/curves.h"
#include "kernels/groth16_types.h"
#include "prover/prover_error.h"

namespace zkfarm::prover {

class Engine;

// What proves: the CPU or one CUDA device.
struct Device {
  int ordinal = -1;     // CUDA ordinal given at start; -1 for the CPU
  std::string backend;  // "cpu" or "cuda"
  std::string name;     // "NVIDIA H200", "cpu (16 threads)"
  std::string uuid;     // GPU UUID, or "cpu-<machine id>"
  std::uint64_t memory_bytes = 0;
  std::string summary;  // one line for logs
};

// Where a circuit's files are. The PCE comes from pce_path (a .pce written by
// `zkfarm pce`, its checksum verified), else from r1cs_path (built here, with
// the C matrix, so every constraint is checked and the first failing one
// named), else from the zkey's coefficient section (validated).
//
// zkey_file / pce_file, when set, are the bytes to load (a caller that
// hashed them first: worker/circuit_cache.h); the paths then only name
// them in messages, and nothing is read from the paths.
struct CircuitSource {
  std::string zkey_path;
  std::string pce_path;
  std::string r1cs_path;
  std::shared_ptr<const FileBytes> zkey_file = nullptr;
  std::shared_ptr<const FileBytes> pce_file = nullptr;
};

// A loaded circuit; the curve-typed contents are private to the service.
class Circuit {
 public:
  virtual ~Circuit() = default;
  virtual CurveId curve() const = 0;
  virtual std::uint32_t num_vars() const = 0;    // signals, including w[0] = 1
  virtual std::uint32_t num_public() const = 0;  // public signals, excluding w[0]
  std::string name;  // the zkey's path, for logs
  // On a device: bytes of key + PCE uploaded at load, and the seconds the
  // upload took (0 on the CPU).
  std::uint64_t device_bytes = 0;
  double upload_seconds = 0;
  // Under a device memory budget: the key's points kept in page-locked host
  // memory and streamed through the MSMs at every proof (0 when all
  // resident), how much of that is a pinned copy (the rest is the circuit's
  // own memory registered in place), and the placement in words.
  std::uint64_t streamed_bytes = 0;
  std::uint64_t host_pinned_bytes = 0;
  std::uint64_t host_copied_bytes = 0;
  std::string memory_plan;
};

struct ProveRequest {
  // Fixed blinding factors r, s derived from seed. Tests only: a proof with
  // known r, s reveals the witness's private part to whoever knows them.
  std::optional<std::uint64_t> seed;
  // Verify the proof before returning it: an unsatisfied witness whose PCE
  // has no C matrix is caught here (kUnsatisfied) instead of as a bad proof.
  bool verify = false;
  // When set and true before the proof starts: kCancelled.
  const std::atomic<bool>* cancelled = nullptr;
};

// Seconds per stage of one proof.
struct Timings {
  double parse_witness = 0;   // .wtns -> field elements, and the checks
  double witness_check = 0;   // the kernel's (CPU) constraint check; 0 on a device
  double upload_witness = 0;  // host -> device (0 on the CPU)
  double spmv = 0, ntt = 0, msm = 0;
  double prove = 0;  // the kernel's total (includes the stages above from witness_check)
  double verify = 0;
  // A device proof's host time outside its own clock (prove): before it,
  // the engine's circuit and lane lookups (and a wait for a lane when
  // every one is taken, or the upload of a circuit the device had
  // evicted); after it, the proof's device vectors and events released
  // (and, after an out-of-memory retry, the failed attempt). 0 on the CPU.
  double device_queue = 0, device_release = 0;
  std::uint64_t device_scratch_bytes = 0;  // device memory the proof allocated for itself
  std::uint64_t device_streamed_bytes = 0;  // key points copied from host memory during the MSMs
  std::uint64_t device_skipped_bytes = 0;   // streamed key points left on the host (their scalars were zero)
  std::uint64_t device_pce_streamed_bytes = 0;  // PCE bytes copied from host memory for the SpMV
};

// A witness parsed and checked against one circuit (Prover::prepare), ready
// to prove; immutable, its memory released (to the engine's pool) when the
// last reference goes.
class PreparedWitness {
 public:
  virtual ~PreparedWitness() = default;
  std::string name;                  // the witness file's name, for messages
  const Circuit* circuit = nullptr;  // what it was checked against
  const void* data = nullptr;        // where the values are
  double parse_seconds = 0;          // parse, checks and conversion
  bool pinned = false;               // in page-locked host memory (a CUDA engine's)
};

template <class C>
struct ProofOf {
  using Curve = C;
  Groth16Proof<Curve> proof;
  std::vector<typename Curve::Fr> public_signals;  // witness[1 .. num_public]
};
using Proof = std::variant<ProofOf<Bn254>, ProofOf<Bls12381>>;
// witness[1 .. num_public] in the circuit's scalar field (Prover::public_signals).
using PublicSignals = std::variant<std::vector<Bn254::Fr>, std::vector<Bls12381::Fr>>;

// kAutoDeviceBudget, kDeviceBudgetMargin, parse_device_budget and the
// other device flags: prover/device_config.h.

// What a CUDA worker would do with a circuit under a device memory budget
// (kernels/cuda/memory_plan.h's plan, made on any machine: no device
// needed), for operators sizing cards and host memory before deploying.
struct DeviceMemoryPlan {
  std::uint64_t budget = 0;  // bytes (0: no budget)
  bool fits = false;
  // The plan in words (as `zkfarm prove --timings` and the worker's metrics
  // report it), or, when it does not fit, why and how much it needs.
  std::string summary;
  std::uint64_t needed_bytes = 0;       // !fits: the least budget that proves it
  std::uint64_t device_peak_bytes = 0;  // estimated, resident state included
  std::uint64_t resident_bytes = 0;     // key points and PCE kept on the device
  std::uint64_t streamed_bytes = 0;     // key bytes copied to the device at every proof
  std::uint64_t host_pinned_bytes = 0;  // page-locked host memory: the streamed key (+ the PCE when on the host)
};
DeviceMemoryPlan plan_device_memory(const Circuit& circuit, std::uint64_t budget);

class Prover {
 public:
  // On the CPU, all cores (kernels/parallel.h's pool).
  static std::unique_ptr<Prover> cpu();
  // On CUDA device ordinal (cudaSetDevice once, here, before any other CUDA
  // work; CUDA_VISIBLE_DEVICES is neither read nor written).
  // device_budget_bytes: the device memory this process may use, resident
  // circuits and every proof's scratch included (0: no budget, the whole
  // device; kAutoDeviceBudget: the free memory at start minus
  // kDeviceBudgetMargin). Circuits are evicted least recently used first to
  // stay within it, and each circuit's key is placed within it (what does
  // not fit is streamed from pinned host memory; Circuit::memory_plan).
  // Throws Error: kNoDevice for an ordinal this process cannot see or a
  // build without CUDA, kDeviceFault.
  static std::unique_ptr<Prover> cuda(int ordinal, std::size_t device_budget_bytes = 0);
  // The same with every device setting (device_config.h; its
  // memory_budget as device_budget_bytes above). Throws
  // std::invalid_argument when config does not validate, else as above.
  static std::unique_ptr<Prover> cuda(int ordinal, const DeviceConfig& config);
  // CUDA devices this process sees; 0 in a build without CUDA. Never throws.
  static int cuda_device_count();
  // Maps a witness file. Throws Error kBadWitness naming the path.
  static std::shared_ptr<const FileBytes> open_witness(const std::string& path);

  ~Prover();
  Device device() const;
  std::vector<CurveId> curves() const { return {CurveId::kBn254, CurveId::kBls12381}; }
  // Memory in use: on a device total minus free (cudaMemGetInfo), on the CPU
  // the process's resident set; 0 if unknown. Cheap; never throws.
  std::uint64_t memory_used_bytes() const;

  // Loads the circuit. Throws Error: kBadCircuit (a file missing, malformed,
  // or disagreeing with the others, named), kOutOfMemory, kDeviceFault.
  std::shared_ptr<const Circuit> load(const CircuitSource& source);
  // Proves with witness (the .wtns bytes) for circuit, which this Prover
  // loaded. Throws Error: kWrongCurve, kWitnessLength, kBadWitness,
  // kUnsatisfied (input errors), kBadCircuit (key and PCE disagree),
  // kOutOfMemory, kDeviceFault, kCancelled, kInternal.
  Proof prove(const Circuit& circuit, const std::shared_ptr<const FileBytes>& witness,
              const ProveRequest& request, Timings* timings);
  // The witness checks of prove(), done now without the prove lock. Throws
  // the input errors prove() throws (kWrongCurve, kWitnessLength,
  // kBadWitness) and kOutOfMemory.
  std::shared_ptr<const PreparedWitness> prepare(const Circuit& circuit,
                                                 const std::shared_ptr<const FileBytes>& witness);
  // The public signals of a witness prepare() made: what prove() returns
  // beside the proof, known before the proof runs (the CLI writes
  // public.json meanwhile). Throws Error kInternal for a witness that
  // prepare() did not make.
  static PublicSignals public_signals(const PreparedWitness& witness);
  // Proves with a witness prepare() made for this circuit (timings->
  // parse_witness is its parse_seconds). Throws as prove(), and kInternal
  // for a witness prepared for another circuit.
  Proof prove(const Circuit& circuit, const PreparedWitness& witness, const ProveRequest& request,
              Timings* timings);
  // The self-check of ProveRequest::verify on a proof of `circuit` that
  // prove() returned without it, so that a caller can overlap it with other
  // work (the CLI writes its files meanwhile). Returns normally when the
  // proof verifies against the circuit's verifying key; throws Error
  // kUnsatisfied naming witness_name (the same error prove() throws) when
  // not, kInternal for a proof of another curve. Sets timings->verify when
  // timings is not null. Needs no prove lock.
  void verify(const Circuit& circuit, const Proof& proof, const std::string& witness_name,
              Timings* timings) const;

 private:
  explicit Prover(std::unique_ptr<Engine> engine);
  template <class Curve>
  std::shared_ptr<const PreparedWitness> prepare_on(const Circuit& circuit,
                                                    const std::shared_ptr<const FileBytes>& witness);
  template <class Curve>
  Proof prove_on(const Circuit& circuit, const PreparedWitness& witness, const ProveRequest& request,
                 Timings* timings);
  template <class Curve>
  static void verify_on(const Circuit& circuit, const ProofOf<Curve>& proof, const std::string& witness_name,
                        Timings* timings);

  std::unique_ptr<Engine> engine_;
  // Exclusive for attach() and for proofs of a serial engine; shared for
  // proofs of a concurrent one.
  std::shared_mutex prove_mutex_;
};

}  // namespace zkfarm::prover
