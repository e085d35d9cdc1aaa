// device_probe.cu -- implementation of device_probe.h (nvcc, static cudart).
#include "kernels/cuda/device_probe.h"

#include <cuda_runtime.h>

#include <string>

namespace {

constexpr int kProbeValue = 0x5a4b4621;  // written by the kernel, checked on the host

// Formats a failed runtime call as "<call>: <cudaErrorName>: <text>".
std::string describe(const char* call, cudaError_t status) {
  return std::string(call) + ": " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status);
}

// Records a failure in *error (when non-null) and returns false.
bool fail(std::string* error, const char* call, cudaError_t status) {
  if (error != nullptr) *error = describe(call, status);
  return false;
}

__global__ void write_probe_value(int* out) { *out = kProbeValue; }

}  // namespace

int zkfarm_cuda_device_count(std::string* error) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    fail(error, "cudaGetDeviceCount", status);
    return 0;
  }
  if (error != nullptr) error->clear();
  return count;
}

bool zkfarm_cuda_probe_kernel(int device_ordinal, std::string* error) {
  cudaError_t status = cudaSetDevice(device_ordinal);
  if (status != cudaSuccess) return fail(error, "cudaSetDevice", status);

  int* device_value = nullptr;
  status = cudaMalloc(&device_value, sizeof(int));
  if (status != cudaSuccess) return fail(error, "cudaMalloc", status);

  write_probe_value<<<1, 1>>>(device_value);
  const char* call = "write_probe_value<<<1, 1>>>";
  status = cudaGetLastError();
  int host_value = 0;
  if (status == cudaSuccess) {
    call = "cudaMemcpy";
    status = cudaMemcpy(&host_value, device_value, sizeof(int), cudaMemcpyDeviceToHost);
  }
  cudaError_t free_status = cudaFree(device_value);
  if (status != cudaSuccess) return fail(error, call, status);
  if (free_status != cudaSuccess) return fail(error, "cudaFree", free_status);
  if (host_value != kProbeValue) {
    if (error != nullptr) *error = "probe kernel wrote " + std::to_string(host_value) + ", expected " + std::to_string(kProbeValue);
    return false;
  }
  if (error != nullptr) error->clear();
  return true;
}
