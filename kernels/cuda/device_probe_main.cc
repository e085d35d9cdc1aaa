// device_probe -- prints how many CUDA devices this binary can use.
//
//   bazel build //kernels/cuda:device_probe && bazel-bin/kernels/cuda/device_probe
//
// Exit status: 0 when the probe ran (including "no CUDA device" and CPU-only
// builds: not having a GPU is not an error here), 1 when a device exists but
// the probe kernel failed on it.
#include <cstdio>
#include <string>

#include "kernels/cuda/device_probe.h"

int main() {
#ifdef ZKFARM_HAS_CUDA
  std::string error;
  const int device_count = zkfarm_cuda_device_count(&error);
  if (device_count == 0) {
    std::printf("no CUDA device: %s\n", error.empty() ? "cudaGetDeviceCount returned 0" : error.c_str());
    return 0;
  }
  std::printf("CUDA devices: %d\n", device_count);
  int failures = 0;
  for (int device_ordinal = 0; device_ordinal < device_count; ++device_ordinal) {
    if (zkfarm_cuda_probe_kernel(device_ordinal, &error)) {
      std::printf("device %d: probe kernel ok\n", device_ordinal);
    } else {
      std::printf("device %d: probe kernel FAILED: %s\n", device_ordinal, error.c_str());
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
#else
  std::printf("no CUDA device: built without CUDA (no nvcc at ZKFARM_CUDA_PATH)\n");
  return 0;
#endif
}
