// device_key.h -- a Groth16 proving key resident in one device's memory.
//
// The device prover (groth16_device.h) proves from a DeviceProvingKey; it is
// filled either by upload() from a host Groth16ProvingKey (a .zkey mapped in
// memory) or directly on the device by the GPU setup (setup_device.h), which
// is how PoRep-scale keys (~75 GB for BLS12-381 at 2^27) are made without
// ever holding them on the host. Points are affine in the host's Montgomery
// layout, (0, 0) = infinity, exactly as in the .zkey and in kernels/curve.h,
// so a buffer can be copied either way byte for byte.
//
// The key holds points only: how a proof uses them (chunks, the transfer
// ring, overlap, compaction) is the MemoryPlan's, passed to the prover
// beside the key (DeviceProver::prove).
//
// Under a device memory budget (memory_plan.h) a query may be split: its
// first points in the device buffer, the rest in page-locked host memory
// (the *_host spans), streamed through the MSM at every proof
// (msm_stream.h). host_storage keeps that memory alive: the caller's own
// memory registered in place (cudaHostRegister, read-only: a mapped .zkey is
// not copied) or, where registration is refused, one pinned copy.
#ifndef ZKFARM_KERNELS_CUDA_DEVICE_KEY_H_
#define ZKFARM_KERNELS_CUDA_DEVICE_KEY_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

#include "kernels/cuda/device_context.h"
#include "kernels/cuda/memory_plan.h"
#include "kernels/cuda/msm.h"
#include "kernels/groth16_prover.h"

namespace zkfarm::cuda {

// Host memory kept page-locked for a key's streamed points: a registration
// of the caller's memory (undone on destruction) or a pinned copy.
class HostPin {
 public:
  HostPin() = default;
  ~HostPin() {
    if (registered_) (void)cudaHostUnregister(registered_);
  }
  HostPin(const HostPin&) = delete;
  HostPin& operator=(const HostPin&) = delete;

  // points in page-locked memory: points itself when it already is
  // (cudaMallocHost / registered by someone else), else registered in
  // place, else copied into a pinned buffer (*copied_bytes grows by its
  // size). Throws PinnedOutOfMemory when the copy does not fit.
  template <class T>
  static std::span<const T> pin(std::span<const T> points, std::vector<std::shared_ptr<HostPin>>& storage,
                                std::size_t* copied_bytes) {
    if (points.empty()) return points;
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, points.data()) == cudaSuccess &&
        attributes.type == cudaMemoryTypeHost)
      return points;
    (void)cudaGetLastError();
    auto pin = std::make_shared<HostPin>();
    void* address = const_cast<void*>(static_cast<const void*>(points.data()));
    if (cudaHostRegister(address, points.size_bytes(),
                         cudaHostRegisterPortable | cudaHostRegisterMapped | cudaHostRegisterReadOnly) == cudaSuccess) {
      pin->registered_ = address;
      storage.push_back(pin);
      return points;
    }
    (void)cudaGetLastError();  // e.g. overlapping pages already registered, or no read-only registration
    pin->copy_ = PinnedBuffer<std::uint8_t>(points.size_bytes());
    std::memcpy(pin->copy_.data(), points.data(), points.size_bytes());
    if (copied_bytes) *copied_bytes += points.size_bytes();
    storage.push_back(pin);
    return std::span<const T>(reinterpret_cast<const T*>(pin->copy_.data()), points.size());
  }

  // The address device code reads page-locked host memory at (zero-copy,
  // over PCIe). Throws CudaError when host is not page-locked.
  template <class T>
  static const T* device_pointer(const T* host) {
    if (host == nullptr) return nullptr;
    void* device = nullptr;
    ZKFARM_CUDA_CHECK(cudaHostGetDevicePointer(&device, const_cast<T*>(host), 0));
    return static_cast<const T*>(device);
  }

 private:
  void* registered_ = nullptr;
  PinnedBuffer<std::uint8_t> copy_;
};

// The header (sizes and single points, kernels/groth16_types.h) stays on the
// host, copied from the key; the queries are on the device.
template <class Curve>
struct DeviceProvingKey : Groth16KeyHeader<Curve> {
  using G1Affine = typename Curve::G1Affine;
  using G2Affine = typename Curve::G2Affine;

  // Device-resident queries (sizes as in Groth16ProvingKey).
  DeviceBuffer<G1Affine> a_points;   // num_vars
  DeviceBuffer<G1Affine> b1_points;  // num_vars
  DeviceBuffer<G2Affine> b2_points;  // num_vars
  DeviceBuffer<G1Affine> c_points;   // num_vars - num_public - 1
  DeviceBuffer<G1Affine> h_points;   // domain_size
  // Precomputed shifted H bases (msm.h's shifted_bases; shift_h_bases() in
  // groth16_device.h): h_shift_rows rows of h_shift_points points, row w =
  // 2^(w * h_shift_bits) * h[0, h_shift_points). Empty unless built (device
  // memory to spare): the H MSM then sums every window's digits of those
  // points into one bucket set, and takes the points past h_shift_points (a
  // partial table: the memory left beside a large key) from h_points.
  DeviceBuffer<G1Affine> h_shifted;
  unsigned h_shift_bits = 0;
  unsigned h_shift_rows = 0;
  std::size_t h_shift_points = 0;
  // Precomputed shifted bases of the four witness queries, all or none
  // (shift_witness_bases() in groth16_device.h): a small circuit's four
  // witness MSMs each then sort and reduce one bucket set instead of one
  // per window. Empty unless built.
  ShiftedBases<Curve, typename Curve::G1> a_shifted, b1_shifted, c_shifted;
  ShiftedBases<Curve, typename Curve::G2> b2_shifted;
  std::size_t witness_shifted_bytes() const {
    return a_shifted.table.bytes() + b1_shifted.table.bytes() + b2_shifted.table.bytes() + c_shifted.table.bytes();
  }
  // Frees the witness queries' tables: their plain MSMs again.
  void drop_witness_tables() {
    a_shifted = {};
    b1_shifted = {};
    c_shifted = {};
    b2_shifted = {};
  }
  // Frees H's table: its plain MSM again.
  void drop_h_table() {
    h_shifted = DeviceBuffer<G1Affine>();
    h_shift_bits = h_shift_rows = 0;
    h_shift_points = 0;
  }
  // Frees every shifted table (H's and the witness queries'): the plain
  // queries again.
  void drop_shifted_tables() {
    drop_h_table();
    drop_witness_tables();
  }

  // Streamed suffixes of the queries (empty when all resident): point i of
  // a query is a_points[i] below a_points.size(), a_host[i - that] after.
  std::span<const G1Affine> a_host, b1_host, c_host, h_host;
  std::span<const G2Affine> b2_host;
  std::vector<std::shared_ptr<HostPin>> host_storage;
  std::size_t host_copied_bytes = 0;  // pinned copies made (not registered in place)
  std::size_t device_bytes() const {
    return a_points.bytes() + b1_points.bytes() + b2_points.bytes() + c_points.bytes() +
           h_points.bytes() + h_shifted.bytes() + witness_shifted_bytes();
  }
  // Page-locked host bytes streamed at every proof.
  std::size_t host_bytes() const {
    return a_host.size_bytes() + b1_host.size_bytes() + b2_host.size_bytes() + c_host.size_bytes() +
           h_host.size_bytes();
  }
  std::size_t a_size() const { return a_points.size() + a_host.size(); }
  std::size_t b1_size() const { return b1_points.size() + b1_host.size(); }
  std::size_t b2_size() const { return b2_points.size() + b2_host.size(); }
  std::size_t c_size() const { return c_points.size() + c_host.size(); }
  std::size_t h_size() const { return h_points.size() + h_host.size(); }

  // Copies key's queries to the device on `stream` (synchronizes before
  // returning); with a plan, only each query's resident prefix, the rest
  // pinned in host memory (see HostPin: key's memory must then outlive this
  // object). Throws DeviceOutOfMemory when they do not fit, PinnedOutOfMemory,
  // CudaError on a runtime failure.
  static DeviceProvingKey upload(const Groth16ProvingKey<Curve>& key, cudaStream_t stream,
                                 const MemoryPlan* plan = nullptr) {
    DeviceProvingKey k;
    k.header() = key.header();
    auto put = [stream](auto& buffer, auto span) {
      using T = typename std::remove_cvref_t<decltype(span)>::value_type;
      buffer = DeviceBuffer<T>(span.size(), stream);
      if (!span.empty()) buffer.upload(span.data(), span.size(), stream);
    };
    auto resident = [plan](int q, std::size_t size) {
      return plan ? std::min<std::size_t>(size, plan->resident[q]) : size;
    };
    const std::size_t ra = resident(kQueryA, key.a_points.size()), rb1 = resident(kQueryB1, key.b1_points.size()),
                      rb2 = resident(kQueryB2, key.b2_points.size()), rc = resident(kQueryC, key.c_points.size()),
                      rh = resident(kQueryH, key.h_points.size());
    put(k.a_points, key.a_points.first(ra));
    put(k.b1_points, key.b1_points.first(rb1));
    put(k.b2_points, key.b2_points.first(rb2));
    put(k.c_points, key.c_points.first(rc));
    put(k.h_points, key.h_points.first(rh));
    k.a_host = HostPin::pin(key.a_points.subspan(ra), k.host_storage, &k.host_copied_bytes);
    k.b1_host = HostPin::pin(key.b1_points.subspan(rb1), k.host_storage, &k.host_copied_bytes);
    k.b2_host = HostPin::pin(key.b2_points.subspan(rb2), k.host_storage, &k.host_copied_bytes);
    k.c_host = HostPin::pin(key.c_points.subspan(rc), k.host_storage, &k.host_copied_bytes);
    k.h_host = HostPin::pin(key.h_points.subspan(rh), k.host_storage, &k.host_copied_bytes);
    ZKFARM_CUDA_CHECK(cudaStreamSynchronize(stream));
    return k;
  }
};

}  // namespace zkfarm::cuda

#endif  // ZKFARM_KERNELS_CUDA_DEVICE_KEY_H_
