// progress.h -- step-by-step progress lines on stderr for long CLI steps.
//
// Printed only when stderr is a terminal (scripts that parse our output, or
// CI logs, see nothing), unless forced with --progress. Each step prints its
// name, then its wall time when it ends.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace zkfarm::cli {

class Progress {
 public:
  explicit Progress(bool force = false) : enabled_(force || isatty(STDERR_FILENO)) {}

  // Starts a step; ends the previous one if still open.
  void step(const std::string& name) {
    finish();
    if (!enabled_) return;
    std::fprintf(stderr, "zkfarm: %s ... ", name.c_str());
    std::fflush(stderr);
    open_ = true;
    start_ = std::chrono::steady_clock::now();
  }
  // Ends the current step, printing its duration.
  void finish() {
    if (!open_) return;
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::fprintf(stderr, "%.3f s\n", s);
    open_ = false;
  }
  // Abandons the current step after an error (ends the line).
  void abort() {
    if (!open_) return;
    std::fprintf(stderr, "failed\n");
    open_ = false;
  }
  bool enabled() const { return enabled_; }
  ~Progress() { finish(); }

 private:
  bool enabled_;
  bool open_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace zkfarm::cli
