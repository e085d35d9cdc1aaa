// device_probe -- asks the CUDA runtime how many devices this process can use.
//
// Proves the nvcc build path (//tools:cuda.bzl) end to end: this header is
// plain C++, the implementation is a .cu file compiled by nvcc and linked with
// the static CUDA runtime. Defined only when ZKFARM_HAS_CUDA is (CUDA builds);
// callers guard their calls with #ifdef ZKFARM_HAS_CUDA.
#ifndef ZKFARM_KERNELS_CUDA_DEVICE_PROBE_H_
#define ZKFARM_KERNELS_CUDA_DEVICE_PROBE_H_

#include <string>

// Returns the number of CUDA devices (cudaGetDeviceCount). On failure (no
// driver, no device, ...) returns 0 and, when error is non-null, stores the
// runtime's error name and text in *error; on success leaves *error empty.
int zkfarm_cuda_device_count(std::string* error);

// Launches a one-thread kernel on device_ordinal that writes a known value and
// reads it back. Returns true when the value round-trips; otherwise false with
// the failing call and the runtime's error text in *error (when non-null).
// Proves the sm_90 code in the binary actually runs on the device.
bool zkfarm_cuda_probe_kernel(int device_ordinal, std::string* error);

#endif  // ZKFARM_KERNELS_CUDA_DEVICE_PROBE_H_
