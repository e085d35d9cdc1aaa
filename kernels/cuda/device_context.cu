// device_context.cu -- implementation of device_context.h and cuda_check.h.
// Host code only; a .cu file so that //tools:cuda.bzl builds it with the rest
// of the CUDA backend.
#include "kernels/cuda/device_context.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <iomanip>
#include <mutex>
#include <sstream>
#include <stdexcept>

namespace zkfarm::cuda {

namespace {

std::string describe(cudaError_t code) {
  return std::string(cudaGetErrorName(code)) + " (" + cudaGetErrorString(code) + ")";
}

std::string gib(std::size_t bytes) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << double(bytes) / double(std::size_t(1) << 30) << " GiB";
  return out.str();
}

// Sticky errors (a kernel fault) corrupt the context: they cannot be cleared
// and every later call returns them. Non-sticky ones are cleared from the
// last-error slot so they are not reported twice.
void clear_last_error_if_not_sticky(cudaError_t code) {
  switch (code) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
      return;
    default:
      (void)cudaGetLastError();
  }
}

}  // namespace

CudaError::CudaError(cudaError_t code, const std::string& expression, const char* file, int line)
    : std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + expression + " failed: " +
                         describe(code)),
      code_(code) {}

CudaError::CudaError(cudaError_t code, const std::string& message) : std::runtime_error(message), code_(code) {}

void throw_cuda_error(cudaError_t code, const char* expression, const char* file, int line) {
  clear_last_error_if_not_sticky(code);
  if (code == cudaErrorMemoryAllocation) {
    int device = -1;
    (void)cudaGetDevice(&device);
    std::size_t free_bytes = 0, total_bytes = 0;
    (void)cudaMemGetInfo(&free_bytes, &total_bytes);
    (void)cudaGetLastError();
    throw DeviceOutOfMemory(std::string(file) + ":" + std::to_string(line) + ": " + expression +
                                " failed: out of device memory on device " + std::to_string(device) + " (" +
                                gib(free_bytes) + " free of " + gib(total_bytes) + ")",
                            0);
  }
  throw CudaError(code, expression, file, line);
}

std::size_t checked_bytes(std::size_t count, std::size_t size) {
  if (size != 0 && count > std::numeric_limits<std::size_t>::max() / size)
    throw std::length_error("buffer of " + std::to_string(count) + " elements of " + std::to_string(size) +
                            " bytes overflows size_t");
  return count * size;
}

namespace {
std::atomic<std::size_t> g_budget{0};
std::atomic<std::size_t> g_in_use{0};
}  // namespace

static void* device_allocate_unbudgeted(std::size_t bytes, cudaStream_t stream);

void set_device_memory_budget(std::size_t bytes) noexcept { g_budget.store(bytes); }
std::size_t device_memory_budget() noexcept { return g_budget.load(); }
std::size_t device_memory_in_use() noexcept { return g_in_use.load(); }

std::size_t device_memory_available() {
  std::size_t free_bytes = 0, total_bytes = 0;
  ZKFARM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  // Freed blocks the current device's pool keeps cached (the release
  // threshold is kept high, DeviceContext) are free for our allocations
  // too (device_allocate trims the pool when a request needs them), though
  // the driver counts them as used.
  int device = 0;
  cudaMemPool_t pool;
  std::uint64_t reserved = 0, used = 0;
  if (cudaGetDevice(&device) == cudaSuccess && cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess &&
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) == cudaSuccess &&
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) == cudaSuccess && reserved > used)
    free_bytes += std::size_t(reserved - used);
  (void)cudaGetLastError();
  const std::size_t budget = g_budget.load(), in_use = g_in_use.load();
  if (budget == 0) return free_bytes;
  return std::min(free_bytes, budget > in_use ? budget - in_use : 0);
}

void* device_allocate(std::size_t bytes, cudaStream_t stream) {
  // Reserve against the budget first (atomically: proofs may allocate from
  // several threads), give it back if the device itself refuses.
  const std::size_t budget = g_budget.load();
  const std::size_t before = g_in_use.fetch_add(bytes);
  if (budget != 0 && before + bytes > budget) {
    g_in_use.fetch_sub(bytes);
    throw DeviceOutOfMemory("over the device memory budget: requested " + gib(bytes) + " (" +
                                std::to_string(bytes) + " bytes) with " + gib(before) + " of the " + gib(budget) +
                                " budget in use",
                            bytes);
  }
  try {
    return device_allocate_unbudgeted(bytes, stream);
  } catch (...) {
    g_in_use.fetch_sub(bytes);
    throw;
  }
}

static void* device_allocate_unbudgeted(std::size_t bytes, cudaStream_t stream) {
  void* ptr = nullptr;
  cudaError_t status = cudaMallocAsync(&ptr, bytes, stream);
  if (status == cudaErrorMemoryAllocation) {
    // The pool may hold freed-but-cached blocks of another size: wait for
    // pending frees on this stream, give cached memory back, try once more.
    (void)cudaGetLastError();
    int device = 0;
    ZKFARM_CUDA_CHECK(cudaGetDevice(&device));
    cudaMemPool_t pool;
    ZKFARM_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
    ZKFARM_CUDA_CHECK(cudaStreamSynchronize(stream));
    ZKFARM_CUDA_CHECK(cudaMemPoolTrimTo(pool, 0));
    status = cudaMallocAsync(&ptr, bytes, stream);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      std::size_t free_bytes = 0, total_bytes = 0;
      ZKFARM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
      throw DeviceOutOfMemory("out of device memory on device " + std::to_string(device) + ": requested " +
                                  gib(bytes) + " (" + std::to_string(bytes) + " bytes), " + gib(free_bytes) +
                                  " free of " + gib(total_bytes),
                              bytes);
    }
  }
  ZKFARM_CUDA_CHECK(status);
  return ptr;
}

void device_free(void* ptr, cudaStream_t stream, std::size_t bytes) noexcept {
  g_in_use.fetch_sub(bytes);
  cudaError_t status = cudaFreeAsync(ptr, stream);
  if (status != cudaSuccess) report_destructor_error("cudaFreeAsync", status);
}

void* pinned_allocate(std::size_t bytes) {
  void* ptr = nullptr;
  cudaError_t status = cudaMallocHost(&ptr, bytes);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    throw PinnedOutOfMemory("cannot allocate " + gib(bytes) + " (" + std::to_string(bytes) +
                                " bytes) of page-locked host memory",
                            bytes);
  }
  ZKFARM_CUDA_CHECK(status);
  return ptr;
}

void pinned_free(void* ptr) noexcept {
  cudaError_t status = cudaFreeHost(ptr);
  if (status != cudaSuccess) report_destructor_error("cudaFreeHost", status);
}

// --- ReadbackBuffer -----------------------------------------------------------

namespace {

// The pool's free blocks and how many it made. Never destroyed (a static's
// destructor could run after the CUDA runtime's teardown): the blocks live
// as long as the process.
struct ReadbackPool {
  std::mutex mutex;
  std::vector<std::uint8_t*> free;
  std::size_t made = 0;
};

ReadbackPool& readback_pool() {
  static ReadbackPool* pool = new ReadbackPool();
  return *pool;
}

}  // namespace

ReadbackBuffer::ReadbackBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes > kPooledBytes) {
    data_ = new std::uint8_t[bytes];
    return;
  }
  pooled_ = true;
  ReadbackPool& pool = readback_pool();
  {
    std::lock_guard<std::mutex> lock(pool.mutex);
    if (!pool.free.empty()) {
      data_ = pool.free.back();
      pool.free.pop_back();
      return;
    }
  }
  try {
    data_ = static_cast<std::uint8_t*>(pinned_allocate(kPooledBytes));
  } catch (const PinnedOutOfMemory&) {  // correct from the heap, only slower
    pooled_ = false;
    data_ = new std::uint8_t[bytes];
    return;
  }
  try {
    std::lock_guard<std::mutex> lock(pool.mutex);
    pool.free.reserve(pool.made + 1);  // so that the destructor's push_back never allocates
    ++pool.made;
  } catch (...) {
    pinned_free(data_);
    throw;
  }
}

ReadbackBuffer::~ReadbackBuffer() {
  if (!data_) return;
  if (!pooled_) {
    delete[] data_;
    return;
  }
  ReadbackPool& pool = readback_pool();
  std::lock_guard<std::mutex> lock(pool.mutex);
  pool.free.push_back(data_);
}

std::size_t ReadbackBuffer::pool_blocks() {
  ReadbackPool& pool = readback_pool();
  std::lock_guard<std::mutex> lock(pool.mutex);
  return pool.made;
}

void report_destructor_error(const char* what, cudaError_t status) noexcept {
  // A destructor cannot throw; a failure here means the context is already
  // broken (a sticky kernel fault), which the next checked call reports.
  std::fprintf(stderr, "zkfarm: %s failed in a destructor: %s (%s)\n", what, cudaGetErrorName(status),
               cudaGetErrorString(status));
  (void)cudaGetLastError();
}

// --- Stream / Event ---------------------------------------------------------

Stream::Stream() { ZKFARM_CUDA_CHECK(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking)); }

Stream::~Stream() {
  if (handle_ == nullptr) return;
  cudaError_t status = cudaStreamDestroy(handle_);
  if (status != cudaSuccess) report_destructor_error("cudaStreamDestroy", status);
}

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (handle_ != nullptr) {
      cudaError_t status = cudaStreamDestroy(handle_);
      if (status != cudaSuccess) report_destructor_error("cudaStreamDestroy", status);
    }
    handle_ = std::exchange(o.handle_, nullptr);
  }
  return *this;
}

void Stream::synchronize() const { ZKFARM_CUDA_CHECK(cudaStreamSynchronize(handle_)); }

Event::Event() { ZKFARM_CUDA_CHECK(cudaEventCreate(&handle_)); }

Event::~Event() {
  if (handle_ == nullptr) return;
  cudaError_t status = cudaEventDestroy(handle_);
  if (status != cudaSuccess) report_destructor_error("cudaEventDestroy", status);
}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (handle_ != nullptr) {
      cudaError_t status = cudaEventDestroy(handle_);
      if (status != cudaSuccess) report_destructor_error("cudaEventDestroy", status);
    }
    handle_ = std::exchange(o.handle_, nullptr);
  }
  return *this;
}

void Event::record(cudaStream_t stream) { ZKFARM_CUDA_CHECK(cudaEventRecord(handle_, stream)); }
void Event::synchronize() const { ZKFARM_CUDA_CHECK(cudaEventSynchronize(handle_)); }

float Event::elapsed_ms(const Event& start, const Event& end) {
  // Read before both are complete, cudaEventElapsedTime answers
  // cudaErrorNotReady; an event recorded behind other streams' work (a
  // stream's wait for the concurrent witness MSMs, several lanes sharing the
  // hardware queues) can still be pending when its caller is done, and the
  // error failed valid proofs as device faults. Both complete soon after
  // the work they follow.
  start.synchronize();
  end.synchronize();
  float ms = 0;
  ZKFARM_CUDA_CHECK(cudaEventElapsedTime(&ms, start.handle_, end.handle_));
  return ms;
}

// --- DeviceContext ----------------------------------------------------------

std::string DeviceInfo::summary() const {
  std::ostringstream out;
  out << "device " << ordinal << ": " << name << " (" << uuid << "), sm_" << compute_major << compute_minor << ", "
      << multiprocessors << " SMs, " << gib(total_memory) << " total, " << gib(free_memory_at_open) << " free";
  return out.str();
}

int DeviceContext::visible_device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

DeviceContext::DeviceContext(int device_ordinal, const DeviceContextOptions& options) {
  if (options.streams == 0) throw std::invalid_argument("DeviceContextOptions::streams must be >= 1");
  // cudaGetDeviceCount creates no context, so it may precede cudaSetDevice.
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw CudaError(status, "cannot use CUDA device " + std::to_string(device_ordinal) +
                                ": cudaGetDeviceCount failed: " + describe(status) +
                                " (no NVIDIA driver, or no device visible to this process)");
  }
  if (device_ordinal < 0 || device_ordinal >= count) {
    throw NoSuchDevice("CUDA device " + std::to_string(device_ordinal) + " does not exist: this process sees " +
                       std::to_string(count) + " device(s)" +
                       (count > 0 ? " (valid ordinals 0.." + std::to_string(count - 1) + ")" : std::string()));
  }
  ZKFARM_CUDA_CHECK(cudaSetDevice(device_ordinal));
  if (options.schedule != 0) {
    if (options.schedule != cudaDeviceScheduleSpin && options.schedule != cudaDeviceScheduleYield &&
        options.schedule != cudaDeviceScheduleBlockingSync)
      throw std::invalid_argument("DeviceContextOptions::schedule: not a cudaDeviceSchedule flag");
    // The primary context's flags (it is one per device and process, so
    // this sets them for every context of this device in the process).
    ZKFARM_CUDA_CHECK(cudaSetDeviceFlags(options.schedule));
  }

  cudaDeviceProp prop{};
  ZKFARM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_ordinal));
  info_.ordinal = device_ordinal;
  info_.name = prop.name;
  {
    std::ostringstream uuid;
    uuid << "GPU-" << std::hex << std::setfill('0');
    for (int i = 0; i < 16; ++i) {
      if (i == 4 || i == 6 || i == 8 || i == 10) uuid << '-';
      uuid << std::setw(2) << (static_cast<unsigned>(static_cast<unsigned char>(prop.uuid.bytes[i])));
    }
    info_.uuid = uuid.str();
  }
  info_.compute_major = prop.major;
  info_.compute_minor = prop.minor;
  info_.multiprocessors = prop.multiProcessorCount;
  info_.l2_bytes = std::size_t(prop.l2CacheSize);
  info_.shared_per_block_optin = prop.sharedMemPerBlockOptin;
  ZKFARM_CUDA_CHECK(cudaMemGetInfo(&info_.free_memory_at_open, &info_.total_memory));

  // Keep freed pool memory cached (the default threshold 0 returns it to the
  // driver at every synchronization, costing a driver allocation per call).
  cudaMemPool_t pool;
  ZKFARM_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device_ordinal));
  std::uint64_t threshold = std::numeric_limits<std::uint64_t>::max();
  ZKFARM_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));

  streams_.reserve(options.streams);
  for (std::size_t i = 0; i < options.streams; ++i) streams_.emplace_back();
}

DeviceContext::~DeviceContext() {
  cudaError_t status = cudaSetDevice(info_.ordinal);
  if (status == cudaSuccess) status = cudaDeviceSynchronize();
  if (status != cudaSuccess) report_destructor_error("cudaDeviceSynchronize", status);
  streams_.clear();
  cudaMemPool_t pool;
  if (cudaDeviceGetDefaultMemPool(&pool, info_.ordinal) == cudaSuccess) (void)cudaMemPoolTrimTo(pool, 0);
  (void)cudaGetLastError();
}

MemoryInfo DeviceContext::memory() const {
  activate();
  MemoryInfo m;
  ZKFARM_CUDA_CHECK(cudaMemGetInfo(&m.free, &m.total));
  return m;
}

void DeviceContext::activate() const { ZKFARM_CUDA_CHECK(cudaSetDevice(info_.ordinal)); }

cudaStream_t DeviceContext::stream(std::size_t i) const {
  if (i >= streams_.size())
    throw std::out_of_range("DeviceContext::stream(" + std::to_string(i) + "): the context has " +
                            std::to_string(streams_.size()) + " streams");
  return streams_[i].get();
}

void DeviceContext::synchronize() const {
  activate();
  ZKFARM_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace zkfarm::cuda
