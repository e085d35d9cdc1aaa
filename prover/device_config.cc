// device_config.cc -- parsing and validation of the GPU prover's flags
// (device_config.h).
#include "prover/device_config.h"

#include <cstdio>
#include <stdexcept>
#include <string>

#include "kernels/cuda/msm_layout.h"

namespace zkfarm::prover {

std::size_t parse_device_budget(const std::string& text) {
  if (text == "auto") return kAutoDeviceBudget;
  if (text == "none") return 0;
  const auto bad = [&] {
    return std::invalid_argument("device memory budget '" + text +
                                 "': expected auto, none, a number of bytes, or a number with GiB, MiB, GB or MB "
                                 "(e.g. 24GiB)");
  };
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw bad();
  }
  if (text.empty() || !(text[0] >= '0' && text[0] <= '9') || !(value >= 0)) throw bad();
  const std::string unit = text.substr(used);
  double scale = 0;
  if (unit.empty()) scale = 1;
  else if (unit == "GiB" || unit == "G") scale = double(std::size_t(1) << 30);
  else if (unit == "MiB" || unit == "M") scale = double(std::size_t(1) << 20);
  else if (unit == "GB") scale = 1e9;
  else if (unit == "MB") scale = 1e6;
  else throw bad();
  const double bytes = value * scale;
  if (bytes >= 1.8e19) throw bad();
  return static_cast<std::size_t>(bytes);
}

void DeviceConfig::validate() const {
  namespace mk = cuda::msm_kernels;
  if (msm_window_bits != 0 && (msm_window_bits < mk::kMinWindowBits || msm_window_bits > mk::kMaxWindowBits))
    throw std::invalid_argument("--msm-window-bits: " + std::to_string(msm_window_bits) +
                                " is out of range: auto (0) or " + std::to_string(mk::kMinWindowBits) + " to " +
                                std::to_string(mk::kMaxWindowBits));
  if (msm_waves > mk::kMaxAccumulateWaves)
    throw std::invalid_argument("--msm-waves: " + std::to_string(msm_waves) + " is out of range: auto (0) or 1 to " +
                                std::to_string(mk::kMaxAccumulateWaves));
  if (lanes < 1 || lanes > 64)
    throw std::invalid_argument("device lanes: " + std::to_string(lanes) + " is out of range: 1 to 64 (--slots)");
  if (witness_buffers < 1 || witness_buffers > 128)
    throw std::invalid_argument("witness buffers kept: " + std::to_string(witness_buffers) +
                                " is out of range: 1 to 128 (--slots + --prefetch)");
}

std::string DeviceConfig::summary() const {
  char budget_text[48] = "none";
  if (memory_budget == kAutoDeviceBudget)
    std::snprintf(budget_text, sizeof budget_text, "auto (free at start minus 1 GiB)");
  else if (memory_budget != 0)
    std::snprintf(budget_text, sizeof budget_text, "%.2f GiB", double(memory_budget) / double(std::size_t(1) << 30));
  return std::string("device memory budget ") + budget_text + ", MSM windows " +
         (msm_window_bits ? "c = " + std::to_string(msm_window_bits) : std::string("by the cost model")) +
         ", accumulation waves " + (msm_waves ? std::to_string(msm_waves) : std::string("default")) +
         ", shifted H tables " + (shifted_tables ? "on" : "off") +
         (lanes > 1 ? ", " + std::to_string(lanes) + " lanes (proofs at once)" : std::string()) + ", " +
         std::to_string(witness_buffers) + " page-locked witness buffers kept" +
         (host_wait != HostWait::kAuto ? std::string(", host waits: ") + host_wait_name(host_wait) : std::string());
}

namespace {

// "auto" -> 0, else a decimal number of at most 4 digits; flag names the
// flag in the error.
unsigned parse_small(const std::string& flag, const std::string& text) {
  if (text == "auto") return 0;
  if (text.empty() || text.size() > 4 || text.find_first_not_of("0123456789") != std::string::npos)
    throw std::invalid_argument(flag + ": '" + text + "' is not auto or a number");
  return static_cast<unsigned>(std::stoul(text));
}

}  // namespace

DeviceConfig parse_device_config(const std::string& budget, const std::string& window_bits,
                                 const std::string& waves, const std::string& shifted_tables) {
  DeviceConfig config;
  try {
    config.memory_budget = parse_device_budget(budget);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--device-memory-budget: ") + e.what());
  }
  config.msm_window_bits = parse_small("--msm-window-bits", window_bits);
  config.msm_waves = parse_small("--msm-waves", waves);
  if (shifted_tables == "on") config.shifted_tables = true;
  else if (shifted_tables == "off") config.shifted_tables = false;
  else throw std::invalid_argument("--shifted-tables: '" + shifted_tables + "' is not on or off");
  config.validate();
  return config;
}

bool shifted_tables_off_by_environment(const char* value) {
  return value != nullptr && (std::string(value) == "0" || std::string(value) == "off");
}

HostWait parse_host_wait(const std::string& text) {
  for (HostWait wait : {HostWait::kAuto, HostWait::kSpin, HostWait::kYield, HostWait::kBlock})
    if (text == host_wait_name(wait)) return wait;
  throw std::invalid_argument("--host-wait: '" + text + "' is not auto, spin, yield or block");
}

const char* host_wait_name(HostWait wait) {
  switch (wait) {
    case HostWait::kSpin:
      return "spin";
    case HostWait::kYield:
      return "yield";
    case HostWait::kBlock:
      return "block";
    case HostWait::kAuto:
      break;
  }
  return "auto";
}

}  // namespace zkfarm::prover
