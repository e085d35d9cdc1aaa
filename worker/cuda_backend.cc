// cuda_backend.cc -- see cuda_backend.h. Empty without ZKFARM_HAS_CUDA.
#include "worker/cuda_backend.h"

#ifdef ZKFARM_HAS_CUDA

#include <atomic>
#include <chrono>
#include <new>
#include <string>

#include "cluster/artifacts.h"
#include "cluster/groth16_glue.h"
#include "formats/pce.h"
#include "formats/wtns.h"
#include "formats/zkey.h"
#include "formats/zkey_proving_key.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/device_key.h"
#include "kernels/cuda/groth16_device.h"
#include "kernels/cuda/resident_cache.h"
#include "kernels/groth16_prover.h"

namespace zkfarm {

struct CudaBackend::State {
  explicit State(int ordinal, std::size_t budget)
      : ctx(std::make_unique<cuda::DeviceContext>(ordinal)), cache(*ctx, budget) {}
  // Declared first: destroyed last, after every buffer on the device.
  std::unique_ptr<cuda::DeviceContext> ctx;
  cuda::ResidentCache cache;
  std::unique_ptr<cuda::DeviceProver<Bn254>> bn254;
  std::unique_ptr<cuda::DeviceProver<Bls12381>> bls12381;
  std::atomic<std::uint64_t> next_id{0};

  template <class Curve>
  cuda::DeviceProver<Curve>& prover() {
    ctx->activate();  // the prover's streams, events and NTT tables live on ctx's device
    if constexpr (std::is_same_v<Curve, Bn254>) {
      if (!bn254) bn254 = std::make_unique<cuda::DeviceProver<Bn254>>(*ctx);
      return *bn254;
    } else {
      if (!bls12381) bls12381 = std::make_unique<cuda::DeviceProver<Bls12381>>(*ctx);
      return *bls12381;
    }
  }
};

namespace {

// The host copies (for re-upload after an eviction) and the cache id of the
// device copies, which are dropped from the device with the circuit.
template <class Curve>
class CudaCircuit final : public LoadedCircuit {
 public:
  CudaCircuit(Zkey<Curve> zkey, Pce<typename Curve::Fr> pce, std::string id,
              std::weak_ptr<CudaBackend::State> state)
      : zkey_(std::move(zkey)), pce_(std::move(pce)), id_(std::move(id)), state_(std::move(state)) {
    key_ = proving_key_from_zkey(zkey_);
  }
  ~CudaCircuit() override {
    if (auto state = state_.lock()) state->cache.evict(id_);
  }
  CurveId curve() const override { return curve_id_of<Curve>(); }
  std::uint32_t num_vars() const override { return zkey_.num_vars; }
  const Groth16ProvingKey<Curve>& key() const { return key_; }
  const Pce<typename Curve::Fr>& pce() const { return pce_; }
  const std::string& id() const { return id_; }

  // The device copies, uploaded now if not resident (evicting others).
  std::shared_ptr<const cuda::DeviceCircuit<Curve>> device(CudaBackend::State& state) const {
    return state.cache.get<cuda::DeviceCircuit<Curve>>(id_, [&] {
      const cudaStream_t stream = state.ctx->stream(0);
      return cuda::DeviceCircuit<Curve>{cuda::DeviceProvingKey<Curve>::upload(key_, stream),
                                        cuda::DevicePce<typename Curve::Fr>::upload(pce_, stream)};
    });
  }

 private:
  Zkey<Curve> zkey_;
  Pce<typename Curve::Fr> pce_;
  Groth16ProvingKey<Curve> key_;
  std::string id_;
  std::weak_ptr<CudaBackend::State> state_;
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Runs body, mapping device errors to ProverFailure codes.
template <class Body>
auto device_guarded(const std::string& what, Body&& body) {
  try {
    return body();
  } catch (const cuda::DeviceOutOfMemory& e) {
    throw ProverFailure(wire::ErrorCode::OUT_OF_MEMORY, what + ": " + e.what());
  } catch (const cuda::PinnedOutOfMemory& e) {
    throw ProverFailure(wire::ErrorCode::OUT_OF_MEMORY, what + ": " + e.what());
  } catch (const cuda::CudaError& e) {
    throw ProverFailure(wire::ErrorCode::DEVICE_FAULT, what + ": " + e.what());
  } catch (const std::bad_alloc&) {
    throw ProverFailure(wire::ErrorCode::OUT_OF_MEMORY, what + ": out of host memory");
  }
}

template <class Curve>
std::string prove_with(CudaBackend::State& state, const CudaCircuit<Curve>& circuit,
                       const std::shared_ptr<const FileBytes>& witness_file, ProverStageTimings* timings) {
  using Fr = typename Curve::Fr;
  auto start = std::chrono::steady_clock::now();
  std::vector<Fr> witness;
  try {
    witness = parse_wtns<Fr>(witness_file, circuit.num_vars());
  } catch (const FormatError& e) {
    throw ProverFailure(wire::ErrorCode::BAD_WITNESS, e.what());
  }
  timings->parse_witness = seconds_since(start);
  cuda::DeviceProveTimings t;
  Groth16Proof<Curve> proof;
  try {
    proof = device_guarded("proving on device " + std::to_string(state.ctx->ordinal()), [&] {
      const auto device = circuit.device(state);
      return state.cache.run_evicting(circuit.id(), [&] {
        return state.prover<Curve>().prove(device->key, device->pce, std::span<const Fr>(witness), {}, &t);
      });
    });
  } catch (const ProveError& e) {
    const std::string message = e.what();
    if (message.find("satisf") != std::string::npos) throw ProverFailure(wire::ErrorCode::UNSATISFIED, message);
    if (message.find("values but the circuit") != std::string::npos)
      throw ProverFailure(wire::ErrorCode::WITNESS_LENGTH, message);
    throw ProverFailure(wire::ErrorCode::BAD_WITNESS, message);
  } catch (const std::invalid_argument& e) {
    throw ProverFailure(wire::ErrorCode::ARTIFACT_CHECKSUM, std::string("key and PCE disagree: ") + e.what());
  }
  timings->witness_check = 0;  // host checks are microseconds; upload is part of prove
  timings->spmv = t.spmv_ms / 1e3;
  timings->ntt = t.ntt_ms / 1e3;
  timings->msm = t.msm_ms / 1e3;
  timings->prove = t.total_ms / 1e3;
  return encode_proof<Curve>(proof);
}

}  // namespace

CudaBackend::CudaBackend(int device_ordinal, std::size_t resident_budget_bytes)
    : state_(std::make_shared<State>(device_ordinal, resident_budget_bytes)) {}

CudaBackend::~CudaBackend() = default;

DeviceDescription CudaBackend::device() const {
  const cuda::DeviceInfo& info = state_->ctx->info();
  DeviceDescription d;
  d.ordinal = info.ordinal;
  d.name = info.name;
  d.uuid = info.uuid;
  d.backend = "cuda";
  d.memory_bytes = info.total_memory;
  return d;
}

std::uint64_t CudaBackend::memory_used_bytes() const {
  try {
    const cuda::MemoryInfo m = state_->ctx->memory();
    return m.total - m.free;
  } catch (const std::exception&) {
    return 0;
  }
}

std::shared_ptr<const LoadedCircuit> CudaBackend::load(const std::string& zkey_path, const std::string& pce_path) {
  std::shared_ptr<const LoadedCircuit> circuit;
  try {
    auto file = FileBytes::map(zkey_path);
    circuit = dispatch_curve(zkey_curve(file), [&](auto curve) -> std::shared_ptr<const LoadedCircuit> {
      using Curve = decltype(curve);
      ZkeyReadOptions options;
      options.validate_coefficients = false;  // the verified PCE is used instead
      Zkey<Curve> zkey = parse_zkey<Curve>(file, options);
      auto pce = Pce<typename Curve::Fr>::load(pce_path);
      if (pce.num_cols() != zkey.num_vars)
        throw FormatError(pce_path + ": PCE has " + std::to_string(pce.num_cols()) + " columns but the key has " +
                          std::to_string(zkey.num_vars) + " signals");
      const std::string id = zkey_path + "#" + std::to_string(state_->next_id++);
      return std::make_shared<CudaCircuit<Curve>>(std::move(zkey), std::move(pce), id, state_);
    });
  } catch (const std::bad_alloc&) {
    throw ProverFailure(wire::ErrorCode::OUT_OF_MEMORY, "out of memory loading " + zkey_path);
  } catch (const std::exception& e) {
    throw ProverFailure(wire::ErrorCode::ARTIFACT_CHECKSUM, std::string("cannot load circuit: ") + e.what());
  }
  // Upload now, so that the first partition moves only its witness.
  std::lock_guard<std::mutex> lock(prove_mutex_);
  device_guarded("uploading " + zkey_path + " to device " + std::to_string(state_->ctx->ordinal()), [&] {
    // load() and prove() run on the worker's prover threads, whose current
    // device is CUDA's default (0) until set: every CUDA object made below
    // (streams, events, pinned staging, the NTT tables) must be made on
    // this worker's device, or a --device 1 worker opens a context on GPU 0.
    state_->ctx->activate();
    dispatch_curve(circuit->curve(), [&](auto curve) {
      using Curve = decltype(curve);
      static_cast<const CudaCircuit<Curve>&>(*circuit).device(*state_);
    });
  });
  return circuit;
}

std::string CudaBackend::prove(const LoadedCircuit& circuit, const std::shared_ptr<const FileBytes>& witness,
                               ProverStageTimings* timings, const std::atomic<bool>* cancelled) {
  std::lock_guard<std::mutex> lock(prove_mutex_);
  if (cancelled && cancelled->load()) throw ProverFailure(wire::ErrorCode::CANCELLED, "cancelled");
  // This thread's current device must be ours before the first CUDA call
  // (see load()).
  device_guarded("selecting device " + std::to_string(state_->ctx->ordinal()), [&] { state_->ctx->activate(); });
  WitnessSummary summary;
  try {
    summary = summarize_witness(witness, 0);
  } catch (const std::exception& e) {
    throw ProverFailure(wire::ErrorCode::BAD_WITNESS, e.what());
  }
  if (summary.curve != circuit.curve())
    throw ProverFailure(wire::ErrorCode::WRONG_CURVE, std::string("witness is for ") +
                                                           curve_display_name(summary.curve) + ", the circuit is " +
                                                           curve_display_name(circuit.curve()));
  if (summary.num_values != circuit.num_vars())
    throw ProverFailure(wire::ErrorCode::WITNESS_LENGTH,
                        "witness has " + std::to_string(summary.num_values) + " values but the circuit has " +
                            std::to_string(circuit.num_vars()) + " signals");
  return dispatch_curve(circuit.curve(), [&](auto curve) {
    using Curve = decltype(curve);
    return prove_with<Curve>(*state_, static_cast<const CudaCircuit<Curve>&>(circuit), witness, timings);
  });
}

}  // namespace zkfarm

#endif  // ZKFARM_HAS_CUDA
