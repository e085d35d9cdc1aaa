// cpu_engine.h -- the prover service's CPU engine (cpu_engine.cc). Private
// to prover/.
#pragma once

#include <memory>

#include "prover/engine.h"

namespace zkfarm::prover {

// groth16_prove (kernels/groth16_prover.h) on all cores.
std::unique_ptr<Engine> make_cpu_engine();

}  // namespace zkfarm::prover
