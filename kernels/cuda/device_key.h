// device_key.h -- a Groth16 proving key resident in one device's memory.
//
// The device prover (groth16_device.h) proves from a DeviceProvingKey; it is
// filled either by upload() from a host Groth16ProvingKey (a .zkey mapped in
// memory) or directly on the device by the GPU setup (setup_device.h), which
// is how PoRep-scale keys (~75 GB for BLS12-381 at 2^27) are made without
// ever holding them on the host. Points are affine in the host's Montgomery
// layout, (0, 0) = infinity, exactly as in the .zkey and in kernels/curve.h,
// so a buffer can be copied either way byte for byte.
#ifndef ZKFARM_KERNELS_CUDA_DEVICE_KEY_H_
#define ZKFARM_KERNELS_CUDA_DEVICE_KEY_H_

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/device_context.h"
#include "kernels/groth16_prover.h"

namespace zkfarm::cuda {

template <class Curve>
struct DeviceProvingKey {
  using G1Affine = typename Curve::G1Affine;
  using G2Affine = typename Curve::G2Affine;

  std::uint32_t num_vars = 0;     // witness length, including w[0] = 1
  std::uint32_t num_public = 0;   // public signals, excluding w[0]
  std::uint32_t domain_size = 0;  // power of two
  // Host copies of the single points the proof needs.
  G1Affine alpha1{}, beta1{}, delta1{};
  G2Affine beta2{}, delta2{};
  // Device-resident queries (sizes as in Groth16ProvingKey).
  DeviceBuffer<G1Affine> a_points;   // num_vars
  DeviceBuffer<G1Affine> b1_points;  // num_vars
  DeviceBuffer<G2Affine> b2_points;  // num_vars
  DeviceBuffer<G1Affine> c_points;   // num_vars - num_public - 1
  DeviceBuffer<G1Affine> h_points;   // domain_size

  std::size_t device_bytes() const {
    return a_points.bytes() + b1_points.bytes() + b2_points.bytes() + c_points.bytes() +
           h_points.bytes();
  }

  // Copies key's queries to the device on `stream` (synchronizes before
  // returning). Throws DeviceOutOfMemory when they do not fit, CudaError on a
  // runtime failure.
  static DeviceProvingKey upload(const Groth16ProvingKey<Curve>& key, cudaStream_t stream) {
    DeviceProvingKey k;
    k.num_vars = key.num_vars;
    k.num_public = key.num_public;
    k.domain_size = key.domain_size;
    k.alpha1 = key.alpha1;
    k.beta1 = key.beta1;
    k.delta1 = key.delta1;
    k.beta2 = key.beta2;
    k.delta2 = key.delta2;
    auto put = [stream](auto& buffer, auto span) {
      using T = typename std::remove_cvref_t<decltype(span)>::value_type;
      buffer = DeviceBuffer<T>(span.size(), stream);
      if (!span.empty()) buffer.upload(span.data(), span.size(), stream);
    };
    put(k.a_points, key.a_points);
    put(k.b1_points, key.b1_points);
    put(k.b2_points, key.b2_points);
    put(k.c_points, key.c_points);
    put(k.h_points, key.h_points);
    ZKFARM_CUDA_CHECK(cudaStreamSynchronize(stream));
    return k;
  }
};

}  // namespace zkfarm::cuda

#endif  // ZKFARM_KERNELS_CUDA_DEVICE_KEY_H_
