// device_context.h -- one CUDA device per process, and RAII for what lives on it.
//
// A worker is pinned to one GPU at launch (`zkfarm-worker --device N`). It
// builds exactly one DeviceContext(N) before any other CUDA work; the
// constructor validates N against cudaGetDeviceCount (which creates no
// context), then calls cudaSetDevice(N) so that every later allocation,
// stream and kernel lands on that device. There is no global device list and
// CUDA_VISIBLE_DEVICES is never read or written: which GPUs a process sees is
// the operator's business (systemd unit, container runtime).
//
// The current device is per host thread in CUDA: a thread other than the one
// that built the context must call activate() before CUDA work (every kernel
// entry point in kernels/cuda does so; it is a cheap no-op when current).
//
// Ownership: the context owns its streams. DeviceBuffer<T> memory comes from
// the device's stream-ordered pool (cudaMallocAsync on a stream of the
// context), which the context configures to keep freed memory cached, so
// steady-state proving does not call the driver's allocator; a buffer must
// not outlive the stream it was allocated on. PinnedBuffer<T> is page-locked
// host memory for fast copies. Sizes are in elements, never bytes.
// Destructors never throw (errors there are printed to stderr once).
//
// Errors: every failure is a CudaError (cuda_check.h); allocations that do
// not fit throw DeviceOutOfMemory / PinnedOutOfMemory, a bad ordinal
// NoSuchDevice. Thread safety: a DeviceContext may be shared by threads for
// reading (info, stream handles); buffers and streams are not synchronized.
#ifndef ZKFARM_KERNELS_CUDA_DEVICE_CONTEXT_H_
#define ZKFARM_KERNELS_CUDA_DEVICE_CONTEXT_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_check.h"

namespace zkfarm::cuda {

// Static facts about the device, read once when the context opens.
struct DeviceInfo {
  int ordinal = -1;
  std::string name;            // "NVIDIA H200"
  std::string uuid;            // "GPU-5f1c...": stable across reboots and ordinals
  int compute_major = 0, compute_minor = 0;
  int multiprocessors = 0;
  std::size_t l2_bytes = 0;
  std::size_t shared_per_block_optin = 0;  // largest dynamic shared memory a block may ask for
  std::size_t total_memory = 0;
  std::size_t free_memory_at_open = 0;

  // One line for logs: "device 0: NVIDIA H200 (GPU-...), sm_90, 132 SMs,
  // 139.8 GiB total, 139.2 GiB free".
  std::string summary() const;
};

struct MemoryInfo {
  std::size_t free = 0;
  std::size_t total = 0;
};

// Low-level allocation helpers behind the buffer types (device_context.cu).
// device_allocate throws DeviceOutOfMemory (after trimming the pool and
// retrying once, or at once when the allocation would exceed the device
// memory budget below) or CudaError; device_free (given the bytes
// allocated) never throws.
void* device_allocate(std::size_t bytes, cudaStream_t stream);
void device_free(void* ptr, cudaStream_t stream, std::size_t bytes) noexcept;

// The process's device memory budget (a process proves on one device):
// every DeviceBuffer counts against it, the resident proving keys and PCEs
// as well as each proof's and each MSM's scratch. 0 (the default) = no
// budget: allocations fail only when the device is full. A budget makes one
// large GPU behave as a smaller one for what it proves (the worker's
// --device-memory-budget). Setting it never frees anything: buffers already
// held above it stay valid, new allocations fail until enough is freed.
void set_device_memory_budget(std::size_t bytes) noexcept;
std::size_t device_memory_budget() noexcept;
// Bytes held by DeviceBuffers of this process now.
std::size_t device_memory_in_use() noexcept;
// What a new allocation may take: the device's free memory (the driver's
// count plus the freed blocks our memory pool keeps cached), and no more
// than the budget minus what is in use.
std::size_t device_memory_available();
void* pinned_allocate(std::size_t bytes);
void pinned_free(void* ptr) noexcept;
// Reports a failure in a destructor (which must not throw) on stderr.
void report_destructor_error(const char* what, cudaError_t status) noexcept;

// Throws std::length_error if count * size overflows size_t.
std::size_t checked_bytes(std::size_t count, std::size_t size);

// A non-blocking CUDA stream (does not synchronize with the legacy default
// stream). Move-only.
class Stream {
 public:
  Stream();  // on the current device
  ~Stream();
  Stream(Stream&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return handle_; }
  // Blocks until all work queued on the stream is done; throws CudaError if
  // any of it failed.
  void synchronize() const;

 private:
  cudaStream_t handle_ = nullptr;
};

// A CUDA event with timing enabled. Move-only.
class Event {
 public:
  Event();
  ~Event();
  Event(Event&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const { return handle_; }
  void record(cudaStream_t stream);
  void synchronize() const;
  // Milliseconds between two recorded events, once both are complete
  // (waits for them).
  static float elapsed_ms(const Event& start, const Event& end);

 private:
  cudaEvent_t handle_ = nullptr;
};

// count elements of T in device memory from the stream-ordered pool. The
// memory is uninitialized. Move-only; freed (stream-ordered) on destruction.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(std::size_t count, cudaStream_t stream)
      : count_(count), stream_(stream),
        data_(count ? static_cast<T*>(device_allocate(checked_bytes(count, sizeof(T)), stream)) : nullptr) {}
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : count_(std::exchange(o.count_, 0)), stream_(o.stream_), data_(std::exchange(o.data_, nullptr)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      count_ = std::exchange(o.count_, 0);
      stream_ = o.stream_;
      data_ = std::exchange(o.data_, nullptr);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }
  bool empty() const { return count_ == 0; }

  // Asynchronous copies of `count` elements (host memory should be pinned
  // for overlap; pageable memory works but is staged by the driver). Throw
  // std::out_of_range if count exceeds the buffer.
  void upload(const T* host, std::size_t count, cudaStream_t stream, std::size_t offset = 0) {
    check_range(offset, count);
    ZKFARM_CUDA_CHECK(cudaMemcpyAsync(data_ + offset, host, count * sizeof(T), cudaMemcpyHostToDevice, stream));
  }
  void download(T* host, std::size_t count, cudaStream_t stream, std::size_t offset = 0) const {
    check_range(offset, count);
    ZKFARM_CUDA_CHECK(cudaMemcpyAsync(host, data_ + offset, count * sizeof(T), cudaMemcpyDeviceToHost, stream));
  }
  void fill_zero(cudaStream_t stream) {
    if (count_) ZKFARM_CUDA_CHECK(cudaMemsetAsync(data_, 0, bytes(), stream));
  }

 private:
  void check_range(std::size_t offset, std::size_t count) const {
    if (offset > count_ || count > count_ - offset)
      throw std::out_of_range("DeviceBuffer: " + std::to_string(count) + " elements at offset " +
                              std::to_string(offset) + " exceed the buffer's " + std::to_string(count_));
  }
  void release() noexcept {
    if (data_) device_free(data_, stream_, count_ * sizeof(T));
    data_ = nullptr;
    count_ = 0;
  }

  std::size_t count_ = 0;
  cudaStream_t stream_ = nullptr;
  T* data_ = nullptr;
};

// count elements of T in page-locked host memory. Move-only.
template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t count)
      : count_(count), data_(count ? static_cast<T*>(pinned_allocate(checked_bytes(count, sizeof(T)))) : nullptr) {}
  ~PinnedBuffer() {
    if (data_) pinned_free(data_);
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : count_(std::exchange(o.count_, 0)), data_(std::exchange(o.data_, nullptr)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      if (data_) pinned_free(data_);
      count_ = std::exchange(o.count_, 0);
      data_ = std::exchange(o.data_, nullptr);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  T* data() const { return data_; }
  std::size_t size() const { return count_; }
  T& operator[](std::size_t i) const { return data_[i]; }

 private:
  std::size_t count_ = 0;
  T* data_ = nullptr;
};

// Host memory to read a kernel's small results back into (counts, window
// sums): a block of kPooledBytes of page-locked memory from a process-wide
// pool that keeps its blocks (so no cudaMallocHost or cudaFreeHost per use;
// at most one block per readback in flight), or for a larger request the
// heap. Why not a local or a std::vector: a device-to-host copy into
// pageable memory goes through the driver's staging buffer, and while it
// waits for its stream's earlier kernels other host threads' CUDA calls
// (launches, frees, event calls) wait behind it; with several proofs in
// flight that held every lane up (kernels/cuda/NOTES.md, run L4). Move-only.
class ReadbackBuffer {
 public:
  static constexpr std::size_t kPooledBytes = std::size_t(64) << 10;
  explicit ReadbackBuffer(std::size_t bytes);
  ~ReadbackBuffer();
  ReadbackBuffer(ReadbackBuffer&& o) noexcept
      : bytes_(std::exchange(o.bytes_, 0)), data_(std::exchange(o.data_, nullptr)), pooled_(o.pooled_) {}
  ReadbackBuffer& operator=(ReadbackBuffer&&) = delete;
  ReadbackBuffer(const ReadbackBuffer&) = delete;
  ReadbackBuffer& operator=(const ReadbackBuffer&) = delete;

  std::uint8_t* data() const { return data_; }
  std::size_t size() const { return bytes_; }
  bool pinned() const { return pooled_; }
  // Blocks the pool holds now (taken or free), for tests.
  static std::size_t pool_blocks();

 private:
  std::size_t bytes_ = 0;
  std::uint8_t* data_ = nullptr;
  bool pooled_ = false;
};

struct DeviceContextOptions {
  // Streams the context owns (>= 1). Stream 0 is the default work stream of
  // the kernels' host entry points.
  std::size_t streams = 2;
  // How host threads wait for the device (cudaSetDeviceFlags): one of
  // cudaDeviceScheduleAuto (0, the runtime's choice), cudaDeviceScheduleSpin,
  // cudaDeviceScheduleYield, cudaDeviceScheduleBlockingSync.
  unsigned schedule = 0;
};

class DeviceContext {
 public:
  // Opens device `device_ordinal` for this process: validates it against
  // cudaGetDeviceCount, calls cudaSetDevice, creates the streams and
  // configures the stream-ordered pool. Throws NoSuchDevice for an ordinal
  // outside [0, count) (message names the ordinal and how many devices this
  // process sees), CudaError when no driver/device is usable at all, and
  // std::invalid_argument for options.streams == 0.
  explicit DeviceContext(int device_ordinal, const DeviceContextOptions& options = {});
  // Waits for outstanding work, destroys the streams, trims the pool.
  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  int ordinal() const { return info_.ordinal; }
  const DeviceInfo& info() const { return info_; }
  // Current free/total device memory (cudaMemGetInfo).
  MemoryInfo memory() const;

  // Makes this device current for the calling host thread (see file comment).
  void activate() const;

  std::size_t stream_count() const { return streams_.size(); }
  // Throws std::out_of_range for i >= stream_count().
  cudaStream_t stream(std::size_t i = 0) const;
  // Waits for all work on the device; throws CudaError if any failed.
  void synchronize() const;

  // Returns the number of CUDA devices this process can see, or 0 when no
  // driver or device is present (never throws): for tests that must skip.
  static int visible_device_count() noexcept;

 private:
  DeviceInfo info_;
  std::vector<Stream> streams_;
};

}  // namespace zkfarm::cuda

#endif  // ZKFARM_KERNELS_CUDA_DEVICE_CONTEXT_H_
