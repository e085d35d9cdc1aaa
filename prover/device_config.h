// device_config.h -- the GPU prover's settings, as the worker's and
// `zkfarm prove`'s flags give them: one struct, validated once at start,
// read by the CUDA engine (prover/cuda_engine.cc) when it opens the device.
// Nothing below it reads an environment variable: a main() that honours one
// as an override reads it once at start and sets the field here.
//
// Plain C++ (no CUDA): built and tested on any machine; a CUDA-less build
// still validates the flags before it reports that it has no device.
#ifndef ZKFARM_PROVER_DEVICE_CONFIG_H_
#define ZKFARM_PROVER_DEVICE_CONFIG_H_

#include <cstddef>
#include <string>

namespace zkfarm::prover {

// The budget "free memory at start minus kDeviceBudgetMargin" (the
// worker's default), and that margin: room for the CUDA context's own
// allocations and other processes' small ones, which the budget does not see.
constexpr std::size_t kAutoDeviceBudget = ~std::size_t(0);
constexpr std::size_t kDeviceBudgetMargin = std::size_t(1) << 30;

// How a host thread waits for the device (a stream or event synchronize):
// spinning on a core (the lowest latency, a core per waiting thread), spinning
// that yields the core to other threads, or sleeping until the driver wakes
// it (no core, a wake-up's latency). kAuto: the CUDA runtime's own choice
// (spin while the process has no more contexts than the host has cores).
enum class HostWait { kAuto, kSpin, kYield, kBlock };

struct DeviceConfig {
  // Device memory the process uses at most, resident circuits included
  // (kernels/cuda/memory_plan.h places each circuit within it); 0: no
  // budget; kAutoDeviceBudget: free memory at open minus the margin.
  std::size_t memory_budget = 0;
  // Pippenger window bits c of every device MSM (GpuMsmConfig::window_bits,
  // the H table's c too); 0: each MSM's cost-model choice
  // (kernels/cuda/msm_layout.h), the measured best on the H200.
  unsigned msm_window_bits = 0;
  // Waves of the bucket-accumulation kernel (GpuMsmConfig::accumulate_waves);
  // 0: the MSM's own default, where its measurements are.
  unsigned msm_waves = 0;
  // Precomputed shifted H bases when a circuit's key is resident and the
  // device has room (shift_h_bases in kernels/cuda/groth16_device.h): the
  // H MSM ~12% faster at 2^24 points (BENCHMARKS.md); a partial table of
  // H's first points where only part of it fits; for a small circuit (at
  // most 2^20 signals) tables of the four witness queries as well
  // (shift_witness_bases); false: never built.
  bool shifted_tables = true;
  // Proofs of one circuit on the device at once (the CUDA engine's lanes,
  // each a DeviceProver on streams of its own): a small circuit's proof is
  // bound by latency (chains of dependent point additions, launches), not
  // by the device's width, so several in flight multiply the proofs per
  // second. A circuit whose proof needs more than a quarter of the device's
  // memory (or budget) divided by this count proves one at a time. The
  // worker sets it to its --slots; 1: one proof at a time.
  unsigned lanes = 1;
  // Page-locked witness buffers the engine keeps for reuse once released
  // (taken again by size): as many as the witnesses in flight at once (the
  // worker sets its --slots + --prefetch), so that a steady stream of proofs
  // allocates none. A page-locked allocation issued between two streams'
  // work is an implicit synchronization (the CUDA programming guide), so
  // with fewer kept every lane waits whenever a buffer is made again.
  // 1 to 128.
  unsigned witness_buffers = 2;
  // How the proving threads wait for the device (HostWait above): with
  // several lanes, each waits in turn for its proof's stream.
  HostWait host_wait = HostWait::kAuto;

  // Throws std::invalid_argument naming the flag and the allowed range.
  void validate() const;
  // One line for the start-up log: "budget 24.00 GiB, MSM windows: cost
  // model, waves: default, shifted H tables: on".
  std::string summary() const;
};

// A device memory budget as given on a command line: "auto"
// (kAutoDeviceBudget), "none" or "0" (no budget), a number of bytes, or a
// number with a unit: GiB/G, MiB/M (powers of 1024), GB, MB (powers of
// 1000), e.g. "24GiB", "141GB", "0.5GiB". Throws std::invalid_argument
// naming the text otherwise.
std::size_t parse_device_budget(const std::string& text);

// The flags' texts as a validated DeviceConfig: budget as above;
// window_bits and waves "auto" (0) or a number; shifted_tables "on" or
// "off". Throws std::invalid_argument starting with the flag's name
// (--device-memory-budget, --msm-window-bits, --msm-waves,
// --shifted-tables) and saying what was wrong.
DeviceConfig parse_device_config(const std::string& budget, const std::string& window_bits,
                                 const std::string& waves, const std::string& shifted_tables);

// Whether ZKFARM_SHIFTED_BASES's value (null: unset) turns the shifted H
// tables off: "0" or "off". A main() reads the variable once at start and
// clears DeviceConfig::shifted_tables when this says so (kept for
// deployments that set it before --shifted-tables existed).
bool shifted_tables_off_by_environment(const char* value);

// --host-wait's text: auto, spin, yield or block. Throws
// std::invalid_argument starting with the flag's name otherwise.
HostWait parse_host_wait(const std::string& text);
// Its name, as the flag spells it.
const char* host_wait_name(HostWait wait);

}  // namespace zkfarm::prover

#endif  // ZKFARM_PROVER_DEVICE_CONFIG_H_
