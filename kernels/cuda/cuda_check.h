// cuda_check.h -- the one way zkfarm reports a failed CUDA call or launch.
//
// Every CUDA runtime call goes through ZKFARM_CUDA_CHECK(expr) and every
// kernel launch through ZKFARM_CUDA_LAUNCH(kernel<<<...>>>(args)). A failure
// throws a CudaError carrying the runtime's code, its name and text, the
// expression and file:line, e.g.
//   kernels/cuda/msm.cuh:212: cudaMemcpyAsync(...) failed: cudaErrorIllegalAddress
//   (an illegal memory access was encountered)
// Out-of-memory (cudaErrorMemoryAllocation) throws the subtype
// DeviceOutOfMemory so callers (the worker) can answer "too big for this
// device" with a typed error code instead of a generic failure.
//
// Plain C++ (no device code): .cc files include it through device_context.h.
// Requires the CUDA runtime headers; only CUDA builds (ZKFARM_HAS_CUDA) use it.
#ifndef ZKFARM_KERNELS_CUDA_CUDA_CHECK_H_
#define ZKFARM_KERNELS_CUDA_CUDA_CHECK_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace zkfarm::cuda {

// A CUDA runtime call or kernel launch failed. what() is
// "<file>:<line>: <expression> failed: <cudaErrorName> (<text>)".
class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& expression, const char* file, int line);
  // For errors found by our own checks (bad ordinal, ...): message as given.
  CudaError(cudaError_t code, const std::string& message);

  cudaError_t code() const noexcept { return code_; }
  // "cudaErrorMemoryAllocation" etc.
  const char* code_name() const noexcept { return cudaGetErrorName(code_); }

 private:
  cudaError_t code_;
};

// The device (or the stream-ordered pool) could not supply an allocation.
// requested_bytes is 0 when the failing call did not say how much it asked
// for (e.g. an allocation inside a library such as CUB).
class DeviceOutOfMemory : public CudaError {
 public:
  DeviceOutOfMemory(const std::string& message, std::size_t requested_bytes)
      : CudaError(cudaErrorMemoryAllocation, message), requested_bytes_(requested_bytes) {}
  std::size_t requested_bytes() const noexcept { return requested_bytes_; }

 private:
  std::size_t requested_bytes_;
};

// Page-locked host memory (cudaMallocHost) could not be allocated.
class PinnedOutOfMemory : public CudaError {
 public:
  PinnedOutOfMemory(const std::string& message, std::size_t requested_bytes)
      : CudaError(cudaErrorMemoryAllocation, message), requested_bytes_(requested_bytes) {}
  std::size_t requested_bytes() const noexcept { return requested_bytes_; }

 private:
  std::size_t requested_bytes_;
};

// The requested device ordinal does not exist in this process.
class NoSuchDevice : public CudaError {
 public:
  explicit NoSuchDevice(const std::string& message) : CudaError(cudaErrorInvalidDevice, message) {}
};

// Throws the CudaError (or DeviceOutOfMemory) for a failed call. Clears the
// runtime's last-error slot first for non-sticky errors, so a later
// cudaGetLastError() after a launch does not report this failure again.
[[noreturn]] void throw_cuda_error(cudaError_t code, const char* expression, const char* file, int line);

}  // namespace zkfarm::cuda

// Evaluates a cudaError_t expression once; throws on anything but success.
#define ZKFARM_CUDA_CHECK(expr)                                                  \
  do {                                                                           \
    const cudaError_t zkfarm_cuda_status_ = (expr);                              \
    if (zkfarm_cuda_status_ != cudaSuccess)                                      \
      ::zkfarm::cuda::throw_cuda_error(zkfarm_cuda_status_, #expr, __FILE__, __LINE__); \
  } while (0)

// Launches a kernel and checks the launch (bad configuration, too many
// resources, ...). Errors inside the kernel surface at the next synchronizing
// call, which is itself checked.  Usage:
//   ZKFARM_CUDA_LAUNCH(my_kernel<<<grid, block, 0, stream>>>(a, b));
#define ZKFARM_CUDA_LAUNCH(...)                                                  \
  do {                                                                           \
    __VA_ARGS__;                                                                 \
    const cudaError_t zkfarm_cuda_status_ = cudaGetLastError();                  \
    if (zkfarm_cuda_status_ != cudaSuccess)                                      \
      ::zkfarm::cuda::throw_cuda_error(zkfarm_cuda_status_, #__VA_ARGS__, __FILE__, __LINE__); \
  } while (0)

#endif  // ZKFARM_KERNELS_CUDA_CUDA_CHECK_H_
