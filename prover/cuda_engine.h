// cuda_engine.h -- the prover service's CUDA engine (cuda_engine.cc). No
// CUDA header here: the functions exist in every build. Private to prover/.
#pragma once

#include <cstddef>
#include <memory>

#include "prover/device_config.h"
#include "prover/engine.h"

namespace zkfarm::prover {

// Opens CUDA device ordinal with config (validated by the caller). Throws
// Error: kNoDevice (an ordinal this process cannot see, or a build without
// CUDA), kDeviceFault.
std::unique_ptr<Engine> make_cuda_engine(int ordinal, const DeviceConfig& config);
// CUDA devices this process sees; 0 without CUDA. Never throws.
int cuda_engine_device_count();

}  // namespace zkfarm::prover
