// cuda_engine.cc -- the CUDA engine of the prover service: proofs on one
// GPU, bit-identical to the CPU engine's (kernels/cuda/groth16_device.h).
//
// The engine opens DeviceContext(ordinal) before any other CUDA work. A
// circuit's key and PCE are uploaded at attach() into a ResidentCache
// (kernels/cuda/resident_cache.h): they stay on the device across proofs,
// least recently used circuits evicted when device memory runs short (and
// re-uploaded from the host copy when a proof needs them again). A proof
// moves only the witness (staged through pinned buffers by DeviceProver).
//
// Prepared witnesses (Prover::prepare) live in page-locked host memory
// from a small pool of reused buffers (pinning is slow: a fresh 128 MiB
// buffer costs tens of ms), so the proof's upload is one DMA at full PCIe
// speed; when pinned memory is refused the witness goes to the heap and is
// staged as before.
//
// The engine's settings are one DeviceConfig (prover/device_config.h, from
// the worker's and `zkfarm prove`'s flags), fixed when the engine opens:
// the MSMs' window bits and accumulation waves (GpuMsmConfig of every
// device MSM), the shifted H tables, the memory budget.
//
// A device memory budget (DeviceConfig::memory_budget, the worker's
// --device-memory-budget) bounds every device allocation of the process
// (device_context.h) and the resident cache. Each circuit is placed by
// kernels/cuda/memory_plan.h within it: the key's queries resident as far as
// they fit, the rest kept in pinned host memory (the circuit's own key
// memory registered in place where CUDA allows, else copied once) and
// streamed through the MSMs at every proof. A circuit that cannot be proved
// within the budget even fully streamed fails at load with kOutOfMemory
// saying how much it needs.
//
// Where the device has room to spare once a circuit is resident (twice a
// proof's working memory and a tenth of the card left over, and within the
// budget if any), the H query also gets precomputed shifted bases
// (shift_h_bases in groth16_device.h): the dense H MSM then needs one
// bucket reduction and fewer windows. Where the whole table does not fit
// (a PoRep-size key), a partial one covers as many of H's first points as
// the room holds (at least 2^22). A small circuit (at most 2^20 signals,
// every query resident) gets tables of its four witness queries too
// (shift_witness_bases), where they fit after H's: its witness MSMs are
// bound by latency and launches, and over a table (small windows,
// kWitnessTableBits, kWitnessTableBitsG2) each sorts and reduces one small
// bucket set instead of one per window. DeviceConfig::shifted_tables false
// (--shifted-tables=off) turns both off.
//
// Lanes (DeviceConfig::lanes > 1, the worker's --slots): that many proofs
// at once, each on a lane of its own (a DeviceProver per curve with
// streams of its own), so that the latency-bound proofs of small circuits
// overlap on the device. Proofs enter in arrival order; one whose
// circuit's working memory (its plan's peak beyond the resident key) times
// the lanes exceeds a quarter of the device's memory (or the budget) waits
// for the lanes to empty and proves alone, and those behind it wait for it.
//
// CUDA failures become Error kinds here, by type: DeviceOutOfMemory and
// PinnedOutOfMemory kOutOfMemory (after evicting every other circuit),
// NoSuchDevice kNoDevice, any other CudaError kDeviceFault.
//
// Without ZKFARM_HAS_CUDA there is no engine: make_cuda_engine() throws
// kNoDevice and the device count is 0.
#include "prover/cuda_engine.h"

#include <cstddef>
#include <memory>
#include <string>

#ifdef ZKFARM_HAS_CUDA

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <new>
#include <vector>
#include <type_traits>

#include "kernels/cuda/device_context.h"
#include "kernels/cuda/device_key.h"
#include "kernels/cuda/groth16_device.h"
#include "kernels/cuda/memory_plan.h"
#include "kernels/cuda/resident_cache.h"
#include "kernels/stopwatch.h"

namespace zkfarm::prover {
namespace {

// The device, its resident circuits and one prover per curve. Shared with
// each circuit's residency (weakly), so a circuit dropped after the engine
// leaves nothing behind.
struct DeviceState {
  DeviceState(int ordinal, const DeviceConfig& config)
      : ctx(std::make_unique<cuda::DeviceContext>(ordinal, context_options(config))),
        config(config),
        budget(resolve_budget(config.memory_budget, ctx->info())),
        cache(*ctx, budget) {
    cuda::set_device_memory_budget(budget);
  }
  static cuda::DeviceContextOptions context_options(const DeviceConfig& config) {
    cuda::DeviceContextOptions options;
    switch (config.host_wait) {
      case HostWait::kSpin:
        options.schedule = cudaDeviceScheduleSpin;
        break;
      case HostWait::kYield:
        options.schedule = cudaDeviceScheduleYield;
        break;
      case HostWait::kBlock:
        options.schedule = cudaDeviceScheduleBlockingSync;
        break;
      case HostWait::kAuto:
        break;
    }
    return options;
  }
  // kAutoDeviceBudget: the free memory at open minus kDeviceBudgetMargin.
  static std::size_t resolve_budget(std::size_t requested, const cuda::DeviceInfo& info) {
    if (requested != kAutoDeviceBudget) return requested;
    return info.free_memory_at_open > kDeviceBudgetMargin ? info.free_memory_at_open - kDeviceBudgetMargin : 1;
  }
  // Declared first: destroyed last, after every buffer on the device.
  std::unique_ptr<cuda::DeviceContext> ctx;
  const DeviceConfig config;
  const std::size_t budget;  // 0: none
  cuda::ResidentCache cache;
  // One prover per curve, made on first use; several lanes of them with
  // config.lanes > 1 (the file comment).
  struct Lane {
    std::unique_ptr<cuda::DeviceProver<Bn254>> bn254;
    std::unique_ptr<cuda::DeviceProver<Bls12381>> bls12381;
  };
  std::mutex lanes_mutex;
  std::condition_variable lanes_changed;
  std::vector<std::unique_ptr<Lane>> free_lanes;
  std::size_t lanes_made = 0, lanes_busy = 0;
  std::uint64_t next_ticket = 0, serving = 0;  // arrival order
  std::atomic<std::uint64_t> next_id{0};
  // Page-locked buffers of prepared witnesses not in use, reused by size.
  std::mutex pinned_mutex;
  std::vector<cuda::PinnedBuffer<std::uint64_t>> pinned_free;  // at most config.witness_buffers

  // The device MSMs' settings from the config (0: GpuMsmConfig's own).
  cuda::GpuMsmConfig msm_config() const {
    cuda::GpuMsmConfig msm;
    msm.window_bits = config.msm_window_bits;
    if (config.msm_waves) msm.accumulate_waves = config.msm_waves;
    msm.validate();
    return msm;
  }

  // A lane for a proof that may share the device with up to `limit` - 1
  // others (1: alone), in arrival order; back with release_lane().
  std::unique_ptr<Lane> acquire_lane(std::size_t limit) {
    std::unique_lock<std::mutex> lock(lanes_mutex);
    const std::uint64_t ticket = next_ticket++;
    lanes_changed.wait(lock, [&] {
      return ticket == serving && lanes_busy < limit && (!free_lanes.empty() || lanes_made < config.lanes);
    });
    ++serving;
    ++lanes_busy;
    std::unique_ptr<Lane> lane;
    if (!free_lanes.empty()) {
      lane = std::move(free_lanes.back());
      free_lanes.pop_back();
    } else {
      lane = std::make_unique<Lane>();
      ++lanes_made;
    }
    lanes_changed.notify_all();  // the next ticket may enter too
    return lane;
  }
  void release_lane(std::unique_ptr<Lane> lane) {
    {
      std::lock_guard<std::mutex> lock(lanes_mutex);
      free_lanes.push_back(std::move(lane));
      --lanes_busy;
    }
    lanes_changed.notify_all();
  }

  template <class Curve>
  cuda::DeviceProver<Curve>& prover(Lane& lane) {
    const bool own_streams = config.lanes > 1;
    constexpr std::size_t kChunk = cuda::DeviceProver<Curve>::kStagingChunk;
    if constexpr (std::is_same_v<Curve, Bn254>) {
      if (!lane.bn254) lane.bn254 = std::make_unique<cuda::DeviceProver<Bn254>>(*ctx, msm_config(), kChunk, own_streams);
      return *lane.bn254;
    } else {
      if (!lane.bls12381)
        lane.bls12381 = std::make_unique<cuda::DeviceProver<Bls12381>>(*ctx, msm_config(), kChunk, own_streams);
      return *lane.bls12381;
    }
  }
};

// A lane held for one proof (DeviceState::acquire_lane).
class LaneGuard {
 public:
  LaneGuard(DeviceState& state, std::size_t limit) : state_(state), lane_(state.acquire_lane(limit)) {}
  ~LaneGuard() { state_.release_lane(std::move(lane_)); }
  LaneGuard(const LaneGuard&) = delete;
  LaneGuard& operator=(const LaneGuard&) = delete;
  DeviceState::Lane& lane() { return *lane_; }

 private:
  DeviceState& state_;
  std::unique_ptr<DeviceState::Lane> lane_;
};

// A circuit's cache id; its device copies are evicted with it.
class DeviceResidency final : public Residency {
 public:
  DeviceResidency(std::string id, std::weak_ptr<DeviceState> state) : id(std::move(id)), state_(std::move(state)) {}
  ~DeviceResidency() override {
    if (auto state = state_.lock()) state->cache.evict(id);
  }
  const std::string id;

 private:
  std::weak_ptr<DeviceState> state_;
};

// A prepared witness's page-locked buffer, back to the engine's pool when
// the witness is dropped (or freed, when the engine is gone).
class PinnedStorage final : public WitnessStorage {
 public:
  PinnedStorage(cuda::PinnedBuffer<std::uint64_t> buffer, std::weak_ptr<DeviceState> state)
      : buffer_(std::move(buffer)), state_(std::move(state)) {}
  ~PinnedStorage() override {
    auto state = state_.lock();
    if (!state) return;
    {
      std::lock_guard<std::mutex> lock(state->pinned_mutex);
      if (state->pinned_free.size() < state->config.witness_buffers) {
        state->pinned_free.push_back(std::move(buffer_));
        return;
      }
    }
    try {
      state->ctx->activate();  // freed on our device's context, not device 0's (see attach())
    } catch (const std::exception&) {
    }
    buffer_ = cuda::PinnedBuffer<std::uint64_t>();
  }
  void* data() override { return buffer_.data(); }
  bool pinned() const override { return true; }

 private:
  cuda::PinnedBuffer<std::uint64_t> buffer_;
  std::weak_ptr<DeviceState> state_;
};

// The heap, when pinned memory is refused.
class PageableStorage final : public WitnessStorage {
 public:
  explicit PageableStorage(std::size_t bytes) : words_(new std::uint64_t[(bytes + 7) / 8]) {}
  void* data() override { return words_.get(); }

 private:
  std::unique_ptr<std::uint64_t[]> words_;
};

// Runs body, turning CUDA failures into Error kinds.
template <class Body>
auto device_guarded(const std::string& what, Body&& body) {
  try {
    return body();
  } catch (const cuda::DeviceOutOfMemory& e) {
    throw Error(ErrorCode::kOutOfMemory, what + ": " + e.what());
  } catch (const cuda::PinnedOutOfMemory& e) {
    throw Error(ErrorCode::kOutOfMemory, what + ": " + e.what());
  } catch (const cuda::NoSuchDevice& e) {
    throw Error(ErrorCode::kNoDevice, e.what());
  } catch (const cuda::CudaError& e) {
    throw Error(ErrorCode::kDeviceFault, what + ": " + e.what());
  } catch (const cuda::BudgetTooSmall& e) {
    throw Error(ErrorCode::kOutOfMemory, what + ": " + e.what());
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::kOutOfMemory, what + ": out of host memory");
  }
}

class CudaEngine final : public EngineOf<CudaEngine> {
  friend class EngineOf<CudaEngine>;

 public:
  CudaEngine(int ordinal, const DeviceConfig& config)
      : state_(device_guarded("opening CUDA device " + std::to_string(ordinal),
                              [&] { return std::make_shared<DeviceState>(ordinal, config); })) {}

  bool concurrent_proofs() const override { return state_->config.lanes > 1; }

  Device device() const override {
    const cuda::DeviceInfo& info = state_->ctx->info();
    Device d;
    d.ordinal = info.ordinal;
    d.backend = "cuda";
    d.name = info.name;
    d.uuid = info.uuid;
    // What this worker may use: the budget when there is one (the farm sees
    // a budgeted H200 as the smaller card it stands in for).
    d.memory_bytes = state_->budget ? std::min(info.total_memory, state_->budget) : info.total_memory;
    d.summary = info.summary();
    return d;
  }

  std::uint64_t memory_used_bytes() const override {
    try {
      // Under a budget: what this process holds against it (so used / total
      // compares like with like); else the device's own count.
      if (state_->budget) return cuda::device_memory_in_use();
      const cuda::MemoryInfo m = state_->ctx->memory();
      return m.total - m.free;
    } catch (const std::exception&) {
      return 0;
    }
  }

  void attach(Circuit& circuit) override {
    device_guarded("uploading the circuit to device " + std::to_string(state_->ctx->ordinal()), [&] {
      // load() and prove() run on the caller's threads, whose current device
      // is CUDA's default (0) until set: every CUDA object made below
      // (streams, events, pinned staging, the NTT tables) must be made on
      // this engine's device, or a --device 1 worker opens a context on GPU 0.
      state_->ctx->activate();
      dispatch_curve(circuit.curve(), [&](auto curve) { upload(static_cast<CircuitOf<decltype(curve)>&>(circuit)); });
    });
  }

  // A pooled page-locked buffer of at least bytes (the smallest that fits,
  // within twice the size; the last released among equals), else a new one;
  // the heap if pinning fails.
  std::unique_ptr<WitnessStorage> witness_storage(std::size_t bytes) override {
    const std::size_t words = (bytes + 7) / 8;
    {
      std::lock_guard<std::mutex> lock(state_->pinned_mutex);
      auto& pool = state_->pinned_free;
      // The smallest that fits; among equals the one released last (warm in
      // the caches, and what the device tests expect).
      std::size_t best = pool.size();
      for (std::size_t i = pool.size(); i-- > 0;)
        if (pool[i].size() >= words && pool[i].size() <= 2 * words &&
            (best == pool.size() || pool[i].size() < pool[best].size()))
          best = i;
      if (best != pool.size()) {
        cuda::PinnedBuffer<std::uint64_t> buffer = std::move(pool[best]);
        pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(best));
        return std::make_unique<PinnedStorage>(std::move(buffer), state_);
      }
      // None fits: free the others rather than hold pinned memory nobody uses.
      pool.clear();
    }
    try {
      state_->ctx->activate();  // a worker thread's current device must be ours (see attach())
      return std::make_unique<PinnedStorage>(cuda::PinnedBuffer<std::uint64_t>(words), state_);
    } catch (const cuda::PinnedOutOfMemory&) {
      return std::make_unique<PageableStorage>(bytes);
    } catch (const cuda::CudaError&) {
      return std::make_unique<PageableStorage>(bytes);
    }
  }

 private:
  template <class Curve>
  static const std::string& id_of(const CircuitOf<Curve>& circuit) {
    return static_cast<const DeviceResidency&>(*circuit.residency).id;
  }

  // The circuit's device copies, uploaded now if not resident (evicting others).
  template <class Curve>
  std::shared_ptr<const cuda::DeviceCircuit<Curve>> resident(const CircuitOf<Curve>& circuit) {
    return state_->cache.get<cuda::DeviceCircuit<Curve>>(id_of(circuit), [&] {
      const cudaStream_t stream = state_->ctx->stream(0);
      const cuda::MemoryPlan plan = cuda::plan_memory(proof_shape(circuit), state_->budget);
      cuda::DevicePce<typename Curve::Fr> pce =
          cuda::DevicePce<typename Curve::Fr>::upload(circuit.pce, stream, true, plan.pce_on_host,
                                                      plan.ring_slots > 0 && plan.prefetch_slots >= 2);
      cuda::DeviceProvingKey<Curve> key = cuda::DeviceProvingKey<Curve>::upload(circuit.key, stream, &plan);
      std::string summary = plan.summary();
      if (state_->config.shifted_tables) {
        const std::size_t working =
            plan.peak_bytes > plan.resident_bytes() ? plan.peak_bytes - plan.resident_bytes() : 0;
        const std::size_t reserve = cuda::shifted_table_reserve(working, state_->ctx->info().total_memory);
        if (cuda::shift_h_bases(*state_->ctx, key, reserve, state_->budget, plan.peak_bytes, stream,
                                state_->config.msm_window_bits))
          summary += "; H shifted bases " + std::to_string(key.h_shift_rows) + " rows at c = " +
                     std::to_string(key.h_shift_bits) + " (" + std::to_string(key.h_shifted.bytes() >> 20) + " MiB" +
                     (key.h_shift_points < key.domain_size
                          ? ", partial: " + std::to_string(key.h_shift_points) + " of " +
                                std::to_string(key.domain_size) + " points"
                          : std::string()) +
                     ")";
        if (cuda::shift_witness_bases(*state_->ctx, key, reserve, state_->budget,
                                      plan.peak_bytes + key.h_shifted.bytes(), stream, state_->config.msm_window_bits))
          summary += "; witness shifted bases (A, B1, C: c = " + std::to_string(key.a_shifted.window_bits) +
                     ", B2: c = " + std::to_string(key.b2_shifted.window_bits) + "; " +
                     std::to_string(key.witness_shifted_bytes() >> 20) + " MiB)";
      }
      return cuda::DeviceCircuit<Curve>{std::move(key), std::move(pce), std::move(summary), plan};
    });
  }

  template <class Curve>
  void upload(CircuitOf<Curve>& circuit) {
    circuit.residency =
        std::make_unique<DeviceResidency>(circuit.name + "#" + std::to_string(state_->next_id++), state_);
    Stopwatch clock;
    const auto device = resident(circuit);
    circuit.upload_seconds = clock.lap();
    circuit.device_bytes = device->device_bytes();
    circuit.streamed_bytes = device->key.host_bytes();
    // The key and PCE in host memory, and the PCE's packed row offsets and
    // coefficient indices for the streamed SpMV.
    circuit.host_pinned_bytes = device->key.host_bytes() + device->pce.host_bytes() + device->pce.packed_bytes();
    circuit.host_copied_bytes = device->key.host_copied_bytes;
    circuit.memory_plan = device->plan;
  }

  template <class Curve>
  Groth16Proof<Curve> run(const CircuitOf<Curve>& circuit, std::span<const typename Curve::Fr> witness,
                          const ProveOptions<typename Curve::Fr>& options, Timings* timings) {
    cuda::DeviceProveTimings t;
    Stopwatch clock;
    double queued = 0, called = 0;
    Groth16Proof<Curve> proof =
        device_guarded("proving on device " + std::to_string(state_->ctx->ordinal()), [&] {
          state_->ctx->activate();  // this thread's current device must be ours (see attach())
          const auto device = resident(circuit);
          LaneGuard lane(*state_, lane_limit(device->memory_plan));
          auto& prover = state_->prover<Curve>(lane.lane());
          queued = clock.lap();
          auto made = state_->cache.run_evicting(id_of(circuit), [&] {
            return prover.prove(device->key, device->pce, device->memory_plan, witness, options, &t);
          });
          called = clock.lap();
          return made;
        });
    timings->device_queue = queued;
    timings->device_release = std::max(0.0, called - t.total_ms / 1e3);
    timings->witness_check = 0;  // host checks are microseconds; the device's is part of spmv
    timings->upload_witness = t.upload_ms / 1e3;
    timings->spmv = t.spmv_ms / 1e3;
    timings->ntt = t.ntt_ms / 1e3;
    timings->msm = t.msm_ms / 1e3;
    timings->prove = t.total_ms / 1e3;
    timings->device_scratch_bytes = t.scratch_bytes;
    timings->device_streamed_bytes = t.streamed_bytes;
    timings->device_skipped_bytes = t.skipped_bytes;
    timings->device_pce_streamed_bytes = t.spmv_streamed_bytes;
    return proof;
  }

  // How many proofs of a circuit placed by plan may share the device (the
  // file comment): its working memory times the lanes within a quarter of
  // the device's memory or budget.
  std::size_t lane_limit(const cuda::MemoryPlan& plan) const {
    const std::size_t lanes = state_->config.lanes;
    if (lanes <= 1) return 1;
    const std::size_t capacity = state_->budget ? state_->budget : state_->ctx->info().total_memory;
    const std::size_t working =
        std::max<std::size_t>(plan.peak_bytes > plan.resident_bytes() ? plan.peak_bytes - plan.resident_bytes() : 0, 1);
    return std::clamp<std::size_t>(capacity / 4 / working, 1, lanes);
  }

  std::shared_ptr<DeviceState> state_;
};

}  // namespace

std::unique_ptr<Engine> make_cuda_engine(int ordinal, const DeviceConfig& config) {
  // Checked here as well as in DeviceContext: without a driver the CUDA
  // runtime reports an error rather than zero devices, which DeviceContext
  // raises as a plain CudaError; for the caller it is the same "no such device".
  const int count = cuda::DeviceContext::visible_device_count();
  if (ordinal < 0 || ordinal >= count)
    throw Error(ErrorCode::kNoDevice, "CUDA device " + std::to_string(ordinal) +
                                          " does not exist: this process sees " + std::to_string(count) +
                                          " device(s)" +
                                          (count == 0 ? std::string(" (no NVIDIA driver, or no device visible)")
                                                      : " (valid ordinals 0.." + std::to_string(count - 1) + ")"));
  return std::make_unique<CudaEngine>(ordinal, config);
}

int cuda_engine_device_count() { return cuda::DeviceContext::visible_device_count(); }

}  // namespace zkfarm::prover

#else  // !ZKFARM_HAS_CUDA

namespace zkfarm::prover {

std::unique_ptr<Engine> make_cuda_engine(int ordinal, const DeviceConfig&) {
  throw Error(ErrorCode::kNoDevice,
              "CUDA device " + std::to_string(ordinal) + ": this zkfarm was built without CUDA; use the CPU");
}

int cuda_engine_device_count() { return 0; }

}  // namespace zkfarm::prover

#endif  // ZKFARM_HAS_CUDA
