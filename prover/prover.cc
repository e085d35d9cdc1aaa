// prover.cc -- the prove pipeline (see prover.h): load, check the witness,
// prove on the engine, verify; every failure classified here by type.
#include "prover/prover.h"

#include <unistd.h>

#include <fstream>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "formats/pce.h"
#include "formats/r1cs.h"
#include "formats/wtns.h"
#include "formats/zkey.h"
#include "kernels/curves.h"
#include "kernels/groth16_prover.h"
#include "kernels/groth16_verifier.h"
#include "kernels/random.h"
#include "kernels/stopwatch.h"
#include "kernels/prng.h"  // splitmix64
#include "prover/cpu_engine.h"
#include "prover/cuda_engine.h"
#include "prover/engine.h"

namespace zkfarm::prover {
namespace {

// Deterministic field elements from a seed (ProveRequest::seed).
template <class Fr>
Fr seeded_element(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t state = seed * 0x9e3779b97f4a7c15ULL + index;
  typename Fr::Int v;
  for (auto& limb : v.limbs) limb = splitmix64(state);
  v.limbs[Fr::N - 1] &= (~std::uint64_t(0)) >> 4;  // below r for both curves
  return Fr::from_canonical(v);
}

// The one witness check: the field, the length, the values, witness[0] = 1;
// the values parsed into storage the engine gave.
template <class Curve>
std::shared_ptr<PreparedOf<Curve>> checked_witness(const CircuitOf<Curve>& circuit,
                                                   const std::shared_ptr<const FileBytes>& file, Engine& engine) {
  using Fr = typename Curve::Fr;
  auto prepared = std::make_shared<PreparedOf<Curve>>();
  prepared->name = file->name();
  prepared->circuit = &circuit;
  CurveId field;
  std::uint32_t count = 0;
  try {
    field = wtns_curve(file);
    count = wtns_count(file);
  } catch (const FormatError& e) {
    throw Error(ErrorCode::kBadWitness, e.what());
  }
  if (field != circuit.curve())
    throw Error(ErrorCode::kWrongCurve, file->name() + ": witness is for " + curve_display_name(field) +
                                            ", the circuit is " + curve_display_name(circuit.curve()));
  if (count != circuit.num_vars())
    throw Error(ErrorCode::kWitnessLength, file->name() + ": witness has " + std::to_string(count) +
                                               " values but the circuit has " +
                                               std::to_string(circuit.num_vars()) + " signals");
  prepared->storage = engine.witness_storage(std::size_t(count) * sizeof(Fr));
  prepared->pinned = prepared->storage->pinned();
  const std::span<Fr> values(static_cast<Fr*>(prepared->storage->data()), count);
  try {
    parse_wtns_into<Fr>(file, values);
  } catch (const FormatError& e) {
    throw Error(ErrorCode::kBadWitness, e.what());
  }
  if (!values[0].is_one())
    throw Error(ErrorCode::kBadWitness, file->name() + ": witness[0] must be 1 (the constant signal)");
  prepared->values = values;
  prepared->data = values.data();
  return prepared;
}

// The heap (the CPU engine, and a device's fallback).
class HeapStorage final : public WitnessStorage {
 public:
  explicit HeapStorage(std::size_t bytes) : words_(new std::uint64_t[(bytes + 7) / 8]) {}
  void* data() override { return words_.get(); }

 private:
  std::unique_ptr<std::uint64_t[]> words_;
};

template <class Curve>
std::shared_ptr<Circuit> load_circuit(const std::shared_ptr<const FileBytes>& zkey_file, const CircuitSource& source) {
  using Fr = typename Curve::Fr;
  ZkeyReadOptions options;
  // The coefficients matter only when the PCE is built from them, and
  // pce_from_zkey checks every entry itself (the same FormatError): checking
  // them here as well read each entry twice (~3% of a 2^16 circuit's CPU).
  options.validate_coefficients = false;
  Zkey<Curve> zkey = parse_zkey<Curve>(zkey_file, options);
  Pce<Fr> pce;
  if (source.pce_file) {
    pce = parse_pce<Fr>(source.pce_file->bytes(), source.pce_path.empty() ? source.pce_file->name() : source.pce_path);
  } else if (!source.pce_path.empty()) {
    pce = load_pce<Fr>(source.pce_path);
  } else if (!source.r1cs_path.empty()) {
    const R1cs<Fr> r1cs = read_r1cs<Fr>(source.r1cs_path);
    if (r1cs.num_wires != zkey.num_vars)
      throw Error(ErrorCode::kBadCircuit, source.r1cs_path + ": has " + std::to_string(r1cs.num_wires) +
                                              " wires but " + source.zkey_path + " has " +
                                              std::to_string(zkey.num_vars) + " signals");
    pce = pce_from_r1cs(r1cs);
  } else {
    pce = pce_from_zkey(zkey.coefficients, zkey.num_public);
  }
  if (pce.num_cols() != zkey.num_vars)
    throw Error(ErrorCode::kBadCircuit, (source.pce_path.empty() && !source.pce_file ? source.zkey_path : source.pce_path) +
                                            ": PCE has " + std::to_string(pce.num_cols()) +
                                            " columns but the key has " + std::to_string(zkey.num_vars) +
                                            " signals");
  return std::make_shared<CircuitOf<Curve>>(std::move(zkey), std::move(pce));
}

}  // namespace

std::unique_ptr<WitnessStorage> Engine::witness_storage(std::size_t bytes) {
  return std::make_unique<HeapStorage>(bytes);
}

std::uint64_t Engine::memory_used_bytes() const {
  // /proc/self/statm: size resident shared text lib data dt, in pages.
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size_pages = 0, resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return 0;
  const long page_size = ::sysconf(_SC_PAGESIZE);
  return page_size > 0 ? resident_pages * static_cast<std::uint64_t>(page_size) : 0;
}

Prover::Prover(std::unique_ptr<Engine> engine) : engine_(std::move(engine)) {}
Prover::~Prover() = default;

std::unique_ptr<Prover> Prover::cpu() { return std::unique_ptr<Prover>(new Prover(make_cpu_engine())); }

std::unique_ptr<Prover> Prover::cuda(int ordinal, std::size_t device_budget_bytes) {
  DeviceConfig config;
  config.memory_budget = device_budget_bytes;
  return cuda(ordinal, config);
}

std::unique_ptr<Prover> Prover::cuda(int ordinal, const DeviceConfig& config) {
  config.validate();
  return std::unique_ptr<Prover>(new Prover(make_cuda_engine(ordinal, config)));
}

namespace {

template <class Curve>
DeviceMemoryPlan plan_for(const CircuitOf<Curve>& circuit, std::uint64_t budget) {
  DeviceMemoryPlan out;
  out.budget = budget;
  const cuda::ProofShape shape = proof_shape(circuit);
  try {
    const cuda::MemoryPlan plan = cuda::plan_memory(shape, budget);
    out.fits = true;
    out.summary = plan.summary();
    out.device_peak_bytes = plan.peak_bytes;
    out.resident_bytes = plan.resident_bytes();
    out.streamed_bytes = plan.streamed_bytes();
    out.host_pinned_bytes = plan.streamed_bytes() + (plan.pce_on_host ? plan.pce_bytes : 0);
  } catch (const cuda::BudgetTooSmall& e) {
    out.summary = e.what();
    out.needed_bytes = e.needed();
  }
  return out;
}

}  // namespace

DeviceMemoryPlan plan_device_memory(const Circuit& circuit, std::uint64_t budget) {
  return dispatch_curve(circuit.curve(), [&](auto curve) {
    const auto* loaded = dynamic_cast<const CircuitOf<decltype(curve)>*>(&circuit);
    if (!loaded) throw std::invalid_argument("plan_device_memory: not a circuit loaded by the prover service");
    return plan_for(*loaded, budget);
  });
}

int Prover::cuda_device_count() { return cuda_engine_device_count(); }

std::shared_ptr<const FileBytes> Prover::open_witness(const std::string& path) {
  try {
    return FileBytes::map(path);
  } catch (const FormatError& e) {
    throw Error(ErrorCode::kBadWitness, e.what());
  }
}

Device Prover::device() const { return engine_->device(); }

std::uint64_t Prover::memory_used_bytes() const { return engine_->memory_used_bytes(); }

std::shared_ptr<const Circuit> Prover::load(const CircuitSource& source) {
  std::shared_ptr<Circuit> circuit;
  try {
    auto zkey_file = source.zkey_file ? source.zkey_file : FileBytes::map(source.zkey_path);
    circuit = dispatch_curve(zkey_curve(zkey_file),
                             [&](auto curve) { return load_circuit<decltype(curve)>(zkey_file, source); });
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::kOutOfMemory, "out of memory loading " + source.zkey_path);
  } catch (const std::exception& e) {
    // FormatError (a file missing or malformed, named) or a checksum mismatch.
    throw Error(ErrorCode::kBadCircuit, e.what());
  }
  circuit->name = source.zkey_path;
  std::unique_lock<std::shared_mutex> lock(prove_mutex_);
  try {
    engine_->attach(*circuit);
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::kOutOfMemory, "out of memory loading " + source.zkey_path);
  }
  return circuit;
}

template <class Curve>
std::shared_ptr<const PreparedWitness> Prover::prepare_on(const Circuit& loaded,
                                                          const std::shared_ptr<const FileBytes>& witness_file) {
  Stopwatch clock;
  auto prepared = checked_witness(static_cast<const CircuitOf<Curve>&>(loaded), witness_file, *engine_);
  prepared->parse_seconds = clock.lap();
  return prepared;
}

template <class Curve>
Proof Prover::prove_on(const Circuit& loaded, const PreparedWitness& prepared, const ProveRequest& request,
                       Timings* timings) {
  using Fr = typename Curve::Fr;
  const auto& circuit = static_cast<const CircuitOf<Curve>&>(loaded);
  if (prepared.circuit != &loaded)
    throw Error(ErrorCode::kInternal, prepared.name + ": the witness was prepared for another circuit than " +
                                          loaded.name);
  const std::span<const Fr> witness = static_cast<const PreparedOf<Curve>&>(prepared).values;
  timings->parse_witness = prepared.parse_seconds;
  Stopwatch clock;
  ProveOptions<Fr> options;
  if (request.seed) {
    options.r = seeded_element<Fr>(*request.seed, 1);
    options.s = seeded_element<Fr>(*request.seed, 2);
  }
  ProofOf<Curve> result;
  try {
    result.proof = engine_->prove(circuit, witness, options, timings);
  } catch (const UnsatisfiedConstraint& e) {
    throw Error(ErrorCode::kUnsatisfied, prepared.name + ": " + e.what());
  } catch (const ProveError& e) {
    throw Error(ErrorCode::kBadWitness, prepared.name + ": " + e.what());
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorCode::kBadCircuit, std::string("key and PCE disagree: ") + e.what());
  }
  result.public_signals.assign(witness.begin() + 1, witness.begin() + 1 + circuit.num_public());
  if (request.verify) verify_on<Curve>(circuit, result, prepared.name, timings);
  return result;
}

template <class Curve>
void Prover::verify_on(const Circuit& loaded, const ProofOf<Curve>& proof, const std::string& witness_name,
                       Timings* timings) {
  using Fr = typename Curve::Fr;
  const auto& circuit = static_cast<const CircuitOf<Curve>&>(loaded);
  Stopwatch clock;
  const bool valid = groth16_verify<Curve>(circuit.zkey.verifying_key(), std::span<const Fr>(proof.public_signals),
                                           proof.proof);
  if (timings) timings->verify = clock.lap();
  if (!valid)
    throw Error(ErrorCode::kUnsatisfied, witness_name +
                                             ": the witness does not satisfy the circuit (the proof failed "
                                             "verification); a PCE with the C matrix (from the .r1cs) names "
                                             "the failing constraint");
}

void Prover::verify(const Circuit& circuit, const Proof& proof, const std::string& witness_name,
                    Timings* timings) const {
  std::visit(
      [&](const auto& typed) {
        using Curve = typename std::decay_t<decltype(typed)>::Curve;
        if (circuit.curve() != curve_id_of<Curve>())
          throw Error(ErrorCode::kInternal, witness_name + ": a proof of another curve than " + circuit.name);
        verify_on<Curve>(circuit, typed, witness_name, timings);
      },
      proof);
}

std::shared_ptr<const PreparedWitness> Prover::prepare(const Circuit& circuit,
                                                       const std::shared_ptr<const FileBytes>& witness) {
  try {
    return dispatch_curve(circuit.curve(), [&](auto curve) { return prepare_on<decltype(curve)>(circuit, witness); });
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::kOutOfMemory, "out of host memory reading " + witness->name());
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kInternal, e.what());
  }
}

PublicSignals Prover::public_signals(const PreparedWitness& witness) {
  if (!witness.circuit) throw Error(ErrorCode::kInternal, witness.name + ": not a witness prepare() made");
  return dispatch_curve(witness.circuit->curve(), [&](auto curve) -> PublicSignals {
    using Curve = decltype(curve);
    const auto* prepared = dynamic_cast<const PreparedOf<Curve>*>(&witness);
    if (!prepared) throw Error(ErrorCode::kInternal, witness.name + ": not a witness prepare() made");
    const auto values = prepared->values.subspan(1, witness.circuit->num_public());
    return std::vector<typename Curve::Fr>(values.begin(), values.end());
  });
}

Proof Prover::prove(const Circuit& circuit, const std::shared_ptr<const FileBytes>& witness,
                    const ProveRequest& request, Timings* timings) {
  // Checked before the witness is read, as before prepare() existed.
  if (request.cancelled && request.cancelled->load()) throw Error(ErrorCode::kCancelled, "cancelled");
  const auto prepared = prepare(circuit, witness);
  return prove(circuit, *prepared, request, timings);
}

Proof Prover::prove(const Circuit& circuit, const PreparedWitness& witness, const ProveRequest& request,
                    Timings* timings) {
  Timings unused;
  if (!timings) timings = &unused;
  std::unique_lock<std::shared_mutex> exclusive(prove_mutex_, std::defer_lock);
  std::shared_lock<std::shared_mutex> shared(prove_mutex_, std::defer_lock);
  if (engine_->concurrent_proofs()) shared.lock();
  else exclusive.lock();
  if (request.cancelled && request.cancelled->load()) throw Error(ErrorCode::kCancelled, "cancelled");
  try {
    return dispatch_curve(circuit.curve(), [&](auto curve) -> Proof {
      return prove_on<decltype(curve)>(circuit, witness, request, timings);
    });
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::kOutOfMemory, "out of host memory proving with " + witness.name);
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kInternal, e.what());
  }
}

}  // namespace zkfarm::prover
