// cpu_backend.cc -- see cpu_backend.h.
#include "worker/cpu_backend.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <new>
#include <thread>

#include "cluster/artifacts.h"
#include "cluster/groth16_glue.h"
#include "formats/pce.h"
#include "formats/wtns.h"
#include "formats/zkey.h"
#include "formats/zkey_proving_key.h"
#include "kernels/groth16_prover.h"

namespace zkfarm {
namespace {

template <class Curve>
class CpuCircuit final : public LoadedCircuit {
 public:
  CpuCircuit(Zkey<Curve> zkey, Pce<typename Curve::Fr> pce) : zkey_(std::move(zkey)), pce_(std::move(pce)) {
    key_ = proving_key_from_zkey(zkey_);
  }
  CurveId curve() const override { return curve_id_of<Curve>(); }
  std::uint32_t num_vars() const override { return zkey_.num_vars; }
  const Zkey<Curve>& zkey() const { return zkey_; }
  const Groth16ProvingKey<Curve>& key() const { return key_; }
  const Pce<typename Curve::Fr>& pce() const { return pce_; }

 private:
  Zkey<Curve> zkey_;
  Pce<typename Curve::Fr> pce_;
  Groth16ProvingKey<Curve> key_;
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::string host_uuid() {
  std::ifstream in("/etc/machine-id");
  std::string id;
  in >> id;
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return "cpu-" + (id.empty() ? std::string(host) : id);
}

template <class Curve>
std::string prove_with(const CpuCircuit<Curve>& circuit, const std::shared_ptr<const FileBytes>& witness_file,
                       ProverStageTimings* timings) {
  using Fr = typename Curve::Fr;
  auto start = std::chrono::steady_clock::now();
  std::vector<Fr> witness;
  try {
    witness = parse_wtns<Fr>(witness_file, circuit.num_vars());
  } catch (const FormatError& e) {
    throw ProverFailure(wire::ErrorCode::BAD_WITNESS, e.what());
  }
  timings->parse_witness = seconds_since(start);
  ProveTimings t;
  Groth16Proof<Curve> proof;
  try {
    proof = groth16_prove<Curve>(circuit.key(), circuit.pce(), std::span<const Fr>(witness), {}, &t);
  } catch (const ProveError& e) {
    const std::string message = e.what();
    if (message.find("satisf") != std::string::npos) throw ProverFailure(wire::ErrorCode::UNSATISFIED, message);
    if (message.find("values but the circuit") != std::string::npos)
      throw ProverFailure(wire::ErrorCode::WITNESS_LENGTH, message);
    throw ProverFailure(wire::ErrorCode::BAD_WITNESS, message);
  } catch (const std::invalid_argument& e) {
    throw ProverFailure(wire::ErrorCode::ARTIFACT_CHECKSUM, std::string("key and PCE disagree: ") + e.what());
  }
  timings->witness_check = t.witness_check;
  timings->spmv = t.spmv;
  timings->ntt = t.ntt;
  timings->msm = t.msm;
  timings->prove = t.total;
  return encode_proof<Curve>(proof);
}

}  // namespace

CpuBackend::CpuBackend() {
  device_.ordinal = -1;
  device_.backend = "cpu";
  device_.name = "cpu (" + std::to_string(std::thread::hardware_concurrency()) + " threads)";
  device_.uuid = host_uuid();
  device_.memory_bytes = static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
}

std::shared_ptr<const LoadedCircuit> CpuBackend::load(const std::string& zkey_path, const std::string& pce_path) {
  try {
    auto file = FileBytes::map(zkey_path);
    return dispatch_curve(zkey_curve(file), [&](auto curve) -> std::shared_ptr<const LoadedCircuit> {
      using Curve = decltype(curve);
      ZkeyReadOptions options;
      options.validate_coefficients = false;  // the verified PCE is used instead
      Zkey<Curve> zkey = parse_zkey<Curve>(file, options);
      auto pce = Pce<typename Curve::Fr>::load(pce_path);
      if (pce.num_cols() != zkey.num_vars)
        throw FormatError(pce_path + ": PCE has " + std::to_string(pce.num_cols()) + " columns but the key has " +
                          std::to_string(zkey.num_vars) + " signals");
      return std::make_shared<CpuCircuit<Curve>>(std::move(zkey), std::move(pce));
    });
  } catch (const std::bad_alloc&) {
    throw ProverFailure(wire::ErrorCode::OUT_OF_MEMORY, "out of memory loading " + zkey_path);
  } catch (const ProverFailure&) {
    throw;
  } catch (const std::exception& e) {
    throw ProverFailure(wire::ErrorCode::ARTIFACT_CHECKSUM, std::string("cannot load circuit: ") + e.what());
  }
}

std::string CpuBackend::prove(const LoadedCircuit& circuit, const std::shared_ptr<const FileBytes>& witness,
                              ProverStageTimings* timings, const std::atomic<bool>* cancelled) {
  std::lock_guard<std::mutex> lock(prove_mutex_);
  if (cancelled && cancelled->load()) throw ProverFailure(wire::ErrorCode::CANCELLED, "cancelled");
  // Cheap checks first, with the codes the coordinator needs.
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
  try {
    return dispatch_curve(circuit.curve(), [&](auto curve) {
      using Curve = decltype(curve);
      return prove_with<Curve>(static_cast<const CpuCircuit<Curve>&>(circuit), witness, timings);
    });
  } catch (const std::bad_alloc&) {
    throw ProverFailure(wire::ErrorCode::OUT_OF_MEMORY, "out of memory while proving");
  }
}

}  // namespace zkfarm
