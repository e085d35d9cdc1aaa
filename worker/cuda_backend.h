// cuda_backend.h -- the CUDA ProverBackend: proofs on one GPU, bit-identical
// to the CPU backend's (kernels/cuda/groth16_device.h).
//
// The constructor opens DeviceContext(device_ordinal) before any other CUDA
// work (cudaSetDevice once; CUDA_VISIBLE_DEVICES is never read or written)
// and throws NoSuchDevice (a CudaError, std::runtime_error) for an ordinal
// this process cannot see. load() parses the zkey and PCE on the host (as the
// CPU backend) and uploads key and PCE into a ResidentCache
// (kernels/cuda/resident_cache.h): they stay on the device across partitions,
// least recently used circuits evicted when device memory runs short (and
// re-uploaded from the host copy if a proof needs them again). prove() moves
// only the witness.
//
// Failures map to ProverFailure codes: the CPU backend's for input errors
// (badWitness, witnessLength, unsatisfied, wrongCurve), outOfMemory when the
// device (or pinned host memory) cannot hold the circuit or the proof even
// after evicting every other circuit, deviceFault for any other CUDA error
// (after a sticky fault the process should be restarted; the worker's
// supervisor does that).
//
// This header includes no CUDA header (the device state is behind a pimpl),
// so worker/main.cc includes it unconditionally; the class exists only in
// builds with ZKFARM_HAS_CUDA.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>

#include "worker/prover_backend.h"

namespace zkfarm {

class CudaBackend final : public ProverBackend {
 public:
  // resident_budget_bytes: evict circuits before their key + PCE exceed it
  // (0: only when the device runs out of memory).
  explicit CudaBackend(int device_ordinal, std::size_t resident_budget_bytes = 0);
  ~CudaBackend() override;

  DeviceDescription device() const override;
  std::vector<CurveId> curves() const override { return {CurveId::kBn254, CurveId::kBls12381}; }
  std::shared_ptr<const LoadedCircuit> load(const std::string& zkey_path, const std::string& pce_path) override;
  std::string prove(const LoadedCircuit& circuit, const std::shared_ptr<const FileBytes>& witness,
                    ProverStageTimings* timings, const std::atomic<bool>* cancelled) override;
  // cudaMemGetInfo: total - free on this device.
  std::uint64_t memory_used_bytes() const override;

  struct State;

 private:
  std::shared_ptr<State> state_;
  // One proof at a time: the device is saturated by one, and the prover's
  // stream and staging buffers are shared.
  std::mutex prove_mutex_;
};

}  // namespace zkfarm
