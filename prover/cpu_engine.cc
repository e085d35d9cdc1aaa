// cpu_engine.cc -- the CPU engine of the prover service: groth16_prove
// (kernels/groth16_prover.h) over the host key and PCE, on all cores.
#include "prover/cpu_engine.h"

#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

#include "kernels/groth16_prover.h"

namespace zkfarm::prover {
namespace {

// A stable identity for this host: /etc/machine-id, else the host name.
std::string host_uuid() {
  std::ifstream in("/etc/machine-id");
  std::string id;
  in >> id;
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return "cpu-" + (id.empty() ? std::string(host) : id);
}

class CpuEngine final : public EngineOf<CpuEngine> {
  friend class EngineOf<CpuEngine>;

 public:
  CpuEngine() {
    device_.ordinal = -1;
    device_.backend = "cpu";
    device_.name = "cpu (" + std::to_string(std::thread::hardware_concurrency()) + " threads)";
    device_.uuid = host_uuid();
    device_.memory_bytes = static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
    device_.summary = device_.name;
  }
  Device device() const override { return device_; }

 private:
  template <class Curve>
  static Groth16Proof<Curve> run(const CircuitOf<Curve>& circuit, std::span<const typename Curve::Fr> witness,
                                 const ProveOptions<typename Curve::Fr>& options, Timings* timings) {
    ProveTimings t;
    Groth16Proof<Curve> proof = groth16_prove<Curve>(circuit.key, circuit.pce, witness, options, &t);
    timings->witness_check = t.witness_check;
    timings->spmv = t.spmv;
    timings->ntt = t.ntt;
    timings->msm = t.msm;
    timings->prove = t.total;
    return proof;
  }

  Device device_;
};

}  // namespace

std::unique_ptr<Engine> make_cpu_engine() { return std::make_unique<CpuEngine>(); }

}  // namespace zkfarm::prover
