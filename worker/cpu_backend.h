// cpu_backend.h -- the CPU ProverBackend: the lead's groth16_prove over an
// mmapped zkey and a loaded PCE, on all cores (kernels/parallel.h's pool).
#pragma once

#include <mutex>

#include "worker/prover_backend.h"

namespace zkfarm {

class CpuBackend final : public ProverBackend {
 public:
  CpuBackend();
  DeviceDescription device() const override { return device_; }
  std::vector<CurveId> curves() const override { return {CurveId::kBn254, CurveId::kBls12381}; }
  std::shared_ptr<const LoadedCircuit> load(const std::string& zkey_path, const std::string& pce_path) override;
  std::string prove(const LoadedCircuit& circuit, const std::shared_ptr<const FileBytes>& witness,
                    ProverStageTimings* timings, const std::atomic<bool>* cancelled) override;

 private:
  DeviceDescription device_;
  // The pool is process-wide: one proof at a time uses all cores best.
  std::mutex prove_mutex_;
};

}  // namespace zkfarm
