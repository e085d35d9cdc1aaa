// sealed_copy_benchmark.cc -- what hashing the bytes a worker runs or loads
// costs at every use (BENCHMARKS.md, "Hashing what runs"): for each file
// given, the median of N runs of sha256_file_hex (hashing in place: what a
// check once per process paid, once) and of SealedCopy::of_file (read once
// into a sealed memfd and hash: what every generator run and every circuit
// load now pays).
//
//   bazel run //base:sealed_copy_benchmark -- [--runs N] FILE...
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "base/digest.h"
#include "base/sealed_copy.h"

namespace {

double median_ms(int runs, const std::function<void()>& work) {
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    work();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 9;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--runs" && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
    else files.push_back(arg);
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: sealed_copy_benchmark [--runs N] FILE...\n");
    return 2;
  }
  std::printf("| File | Size (MiB) | sha256 in place (ms) | Sealed copy + sha256 (ms) | Copy's GB/s |\n|---|---|---|---|---|\n");
  for (const std::string& file : files) {
    const double mib = static_cast<double>(std::filesystem::file_size(file)) / (1 << 20);
    (void)zkfarm::sha256_file_hex(file);  // warm the page cache
    const double hash = median_ms(runs, [&] { (void)zkfarm::sha256_file_hex(file); });
    const double sealed = median_ms(runs, [&] { (void)zkfarm::SealedCopy::of_file(file); });
    std::printf("| %s | %.1f | %.1f | %.1f | %.2f |\n", std::filesystem::path(file).filename().c_str(), mib, hash,
                sealed, mib / 1024 * 1.073741824 / (sealed / 1000));
  }
  return 0;
}
