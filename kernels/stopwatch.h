// stopwatch.h -- wall-clock lap timer for per-stage timings (prover, setup).
#pragma once

#include <chrono>

namespace zkfarm {

class Stopwatch {
 public:
  // Seconds since construction or the previous lap(); starts a new lap.
  double lap() {
    auto now = std::chrono::steady_clock::now();
    double s = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return s;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace zkfarm
