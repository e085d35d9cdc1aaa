// prover_backend.h -- what a worker proves with: the seam between the farm
// and a device.
//
// A worker process drives exactly one backend, chosen at launch (--cpu or
// --device N). The CPU backend (cpu_backend.h) is the reference and what CI
// runs; a CUDA backend implements the same interface: its constructor takes
// the ordinal and calls cudaSetDevice(N) once before any other CUDA work (it
// never reads or writes CUDA_VISIBLE_DEVICES), load() moves keys and PCE
// into device memory and keeps them there, prove() moves only the witness.
//
// Threading: load() and prove() may be called from several prover threads;
// a backend serializes internally what it must. A LoadedCircuit is immutable
// once returned and shared by all provers.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "formats/binfile.h"
#include "formats/curve_id.h"
#include "schema/zkfarm.capnp.h"

namespace zkfarm {

// A failure with the wire code the coordinator acts on (input error: the job
// fails; otherwise: retry elsewhere).
class ProverFailure : public std::runtime_error {
 public:
  ProverFailure(wire::ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  wire::ErrorCode code() const { return code_; }

 private:
  wire::ErrorCode code_;
};

struct DeviceDescription {
  int ordinal = -1;  // -1: CPU
  std::string name, uuid, backend;
  std::uint64_t memory_bytes = 0;
};

struct ProverStageTimings {
  double parse_witness = 0, witness_check = 0, spmv = 0, ntt = 0, msm = 0, prove = 0;
};

class LoadedCircuit {
 public:
  virtual ~LoadedCircuit() = default;
  virtual CurveId curve() const = 0;
  virtual std::uint32_t num_vars() const = 0;
};

class ProverBackend {
 public:
  virtual ~ProverBackend() = default;
  virtual DeviceDescription device() const = 0;
  virtual std::vector<CurveId> curves() const = 0;
  // Loads a circuit from verified local files. Throws ProverFailure
  // (artifactChecksum for a malformed or inconsistent artifact, outOfMemory).
  virtual std::shared_ptr<const LoadedCircuit> load(const std::string& zkey_path, const std::string& pce_path) = 0;
  // Proves one partition from the .wtns bytes. Returns the proof in the wire
  // encoding (cluster/groth16_glue.h). Throws ProverFailure: wrongCurve,
  // witnessLength, badWitness, unsatisfied (input errors), outOfMemory,
  // deviceFault, internal, cancelled (when *cancelled became true).
  virtual std::string prove(const LoadedCircuit& circuit, const std::shared_ptr<const FileBytes>& witness,
                            ProverStageTimings* timings, const std::atomic<bool>* cancelled) = 0;
  // Memory in use on the device now, for zkfarm_device_memory_used_bytes
  // (a GPU backend: total minus free from cudaMemGetInfo). The default is
  // the process's resident set, what the CPU backend uses; 0 if unknown.
  // Called from the worker's link thread; must be cheap and never throw.
  virtual std::uint64_t memory_used_bytes() const;
};

}  // namespace zkfarm
