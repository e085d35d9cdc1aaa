// engine.h -- what differs between the CPU and a CUDA device under the
// prover service (prover.h): where the key and PCE live and which kernel
// proves. Everything else (loading, witness checks, error kinds, verifying)
// is the service's, written once in prover.cc. Private to prover/.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "formats/pce.h"
#include "formats/zkey.h"
#include "formats/zkey_proving_key.h"
#include "kernels/cuda/memory_plan.h"
#include "kernels/groth16_prover.h"
#include "prover/prover.h"

namespace zkfarm::prover {

// An engine's hold on a circuit (a CUDA engine: its device copies, dropped
// from the device when the circuit is dropped).
class Residency {
 public:
  virtual ~Residency() = default;
};

template <class Curve>
class CircuitOf final : public Circuit {
 public:
  using Fr = typename Curve::Fr;
  CircuitOf(Zkey<Curve> zkey_in, Pce<Fr> pce_in) : zkey(std::move(zkey_in)), pce(std::move(pce_in)) {
    key = proving_key_from_zkey(zkey);  // views into zkey's mapping
  }
  CurveId curve() const override { return curve_id_of<Curve>(); }
  std::uint32_t num_vars() const override { return zkey.num_vars; }
  std::uint32_t num_public() const override { return zkey.num_public; }

  Zkey<Curve> zkey;
  Pce<Fr> pce;
  Groth16ProvingKey<Curve> key;
  std::unique_ptr<Residency> residency;  // last: released first
};

// Device bytes cuda::DevicePce::upload(pce) takes (A, B and C when present).
template <class Fr>
std::size_t pce_device_bytes(const Pce<Fr>& pce) {
  auto csr = [](const Csr<Fr>& m) {
    return m.row_offsets.size() * sizeof(std::uint64_t) + m.general_offsets.size() * sizeof(std::uint64_t) +
           m.cols.size() * sizeof(std::uint32_t) + m.values.size() * sizeof(Fr);
  };
  return csr(pce.a()) + csr(pce.b()) + (pce.has_c() ? csr(pce.c()) : 0);
}

// The sizes kernels/cuda/memory_plan.h plans a circuit's device memory by.
template <class Curve>
cuda::ProofShape proof_shape(const CircuitOf<Curve>& circuit) {
  cuda::ProofShape shape;
  shape.num_vars = circuit.key.num_vars;
  shape.num_public = circuit.key.num_public;
  shape.domain_size = circuit.key.domain_size;
  shape.fr_bytes = sizeof(typename Curve::Fr);
  shape.g1_bytes = sizeof(typename Curve::G1Affine);
  shape.g2_bytes = sizeof(typename Curve::G2Affine);
  shape.pce_bytes = pce_device_bytes(circuit.pce);
  return shape;
}

// Host memory for one prepared witness (Prover::prepare).
class WitnessStorage {
 public:
  virtual ~WitnessStorage() = default;
  virtual void* data() = 0;  // aligned for any field element
  virtual bool pinned() const { return false; }
};

// A witness prepared for a circuit of Curve: its values in storage.
template <class Curve>
class PreparedOf final : public PreparedWitness {
 public:
  std::unique_ptr<WitnessStorage> storage;
  std::span<const typename Curve::Fr> values;
};

// Engines may throw prover::Error for failures only they can classify (CUDA
// errors); the service classifies everything else by type.
class Engine {
 public:
  virtual ~Engine() = default;
  virtual Device device() const = 0;
  virtual std::uint64_t memory_used_bytes() const;  // default: resident set of the process
  // Makes circuit ready to prove (a device: uploads key and PCE, sets
  // residency, device_bytes and upload_seconds). Called once per circuit,
  // under the service's prove lock.
  virtual void attach(Circuit& circuit) {}
  // Host memory for a witness of `bytes` (called from any thread, outside
  // the prove lock). Default: the heap.
  virtual std::unique_ptr<WitnessStorage> witness_storage(std::size_t bytes);
  // Whether prove() may be called from several threads at once (the
  // engine then keeps its own proofs apart); false: the service runs one
  // proof at a time.
  virtual bool concurrent_proofs() const { return false; }
  // Proves with a checked witness; fills timings' kernel stages.
  virtual Groth16Proof<Bn254> prove(const CircuitOf<Bn254>& circuit, std::span<const Bn254::Fr> witness,
                                    const ProveOptions<Bn254::Fr>& options, Timings* timings) = 0;
  virtual Groth16Proof<Bls12381> prove(const CircuitOf<Bls12381>& circuit, std::span<const Bls12381::Fr> witness,
                                       const ProveOptions<Bls12381::Fr>& options, Timings* timings) = 0;
};

// An engine whose proof is one template for both curves,
// `Derived::run<Curve>(circuit, witness, options, timings)`: the per-curve
// overrides, written once. Derived befriends EngineOf<Derived> if run is private.
template <class Derived>
class EngineOf : public Engine {
 public:
  Groth16Proof<Bn254> prove(const CircuitOf<Bn254>& circuit, std::span<const Bn254::Fr> witness,
                            const ProveOptions<Bn254::Fr>& options, Timings* timings) final {
    return static_cast<Derived*>(this)->run(circuit, witness, options, timings);
  }
  Groth16Proof<Bls12381> prove(const CircuitOf<Bls12381>& circuit, std::span<const Bls12381::Fr> witness,
                               const ProveOptions<Bls12381::Fr>& options, Timings* timings) final {
    return static_cast<Derived*>(this)->run(circuit, witness, options, timings);
  }
};

}  // namespace zkfarm::prover
