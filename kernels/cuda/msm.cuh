// msm.cuh -- msm_device_raw() (msm.h): the host driver that sequences the
// kernels of msm_kernels.cuh on one stream. Included by one .cu file per
// curve and group, which instantiates it with ZKFARM_INSTANTIATE_GPU_MSM.
// The point kernels are launched through the launchers of msm_kernels.cuh,
// which that macro declares extern: their instantiations live in part files
// msm_<curve>_<group>_<part>.cu (msm_launch.cuh) that compile in parallel.
#pragma once

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cuda/batch_affine.cuh"
#include "kernels/cuda/msm.h"
#include "kernels/cuda/msm_kernels.cuh"

namespace zkfarm::cuda {

namespace msm_detail {

inline unsigned blocks_for(std::uint64_t threads, unsigned per_block) {
  const std::uint64_t blocks = (threads + per_block - 1) / per_block;
  if (blocks > std::uint64_t(std::numeric_limits<int>::max()))
    throw std::invalid_argument("gpu msm: launch of " + std::to_string(threads) + " threads is too large");
  return unsigned(blocks);
}

inline unsigned ceil_log2(std::uint64_t x) {
  unsigned r = 0;
  while ((std::uint64_t(1) << r) < x) ++r;
  return r;
}

// Sums each of `runs` consecutive runs of `per_run` XYZZ points in
// `values` (runs * per_run of them) by groups of up to `group` (a power of
// two), level after level; returns the buffer holding the runs' sums in
// order. Each level is a chain of group - 1 dependent additions per thread
// and one launch, so small groups cost less latency (GpuMsmConfig::
// reduce_group).
template <class Xyzz>
DeviceBuffer<Xyzz> reduce_runs(DeviceBuffer<Xyzz> values, std::uint64_t runs, std::uint64_t per_run,
                               std::uint64_t max_group, cudaStream_t stream) {
  namespace mk = msm_kernels;
  std::uint64_t count = runs * per_run;
  while (per_run > 1) {
    const std::uint64_t group = std::min<std::uint64_t>(per_run, max_group);
    const std::uint64_t per_next = (per_run + group - 1) / group;
    // Groups must not straddle runs: with runs > 1, per_run is a power of
    // two (the segment counts), so group divides it; one run may have any
    // length (the last group is short).
    const std::uint64_t outputs = runs * per_next;
    DeviceBuffer<Xyzz> next(outputs, stream);
    mk::ReduceGroupLaunch<Xyzz>::launch(blocks_for(outputs, mk::kPointThreads), stream, outputs, group, count,
                                        values.data(), next.data());
    values = std::move(next);
    count = outputs;
    per_run = per_next;
  }
  return values;
}

}  // namespace msm_detail

// Steps 1-2 for msm_device_raw and msm_device_split_raw: classifies the
// points, sums the ones (out->ones_sum) and leaves the dense points' indices
// in dense_index (counts in local). ones_out non-null: the ones' indices go
// there, not summed (GpuMsmConfig::ones_in_buckets). Synchronizes the
// stream.
template <class FqParams, int kDegree, class FrParams>
void classify_and_sum_ones(const DeviceContext& ctx, const void* device_bases, const void* device_scalars,
                           std::size_t n, cudaStream_t stream, std::vector<Event>& marks, GpuMsmStats& local,
                           MsmRawResult* out, DeviceBuffer<std::uint32_t>& dense_index, unsigned reduce_group,
                           DeviceBuffer<std::uint32_t>* ones_out = nullptr) {
  namespace mk = msm_kernels;
  using msm_detail::blocks_for;
  using Fq = DevFp<FqParams>;
  using Field = std::conditional_t<kDegree == 1, Fq, DevFq2<Fq>>;
  using Pts = PointTypes<Field>;
  using Xyzz = typename Pts::Xyzz;
  using DeviceAffine = typename Pts::Affine;
  using FrDev = DevFp<FrParams>;
  auto mark = [&](int i) {
    if (!marks.empty()) marks[i].record(stream);
  };
  const auto* bases = reinterpret_cast<const DeviceAffine*>(device_bases);
  const auto* scalars = reinterpret_cast<const FrDev*>(device_scalars);
  const std::uint64_t target_threads = std::uint64_t(ctx.info().multiprocessors) * 1024;

  // 1. Classify and compact.
  dense_index = DeviceBuffer<std::uint32_t>(n, stream);
  DeviceBuffer<std::uint32_t> ones_index(n, stream);
  // Read back into page-locked memory (ReadbackBuffer says why); the ones'
  // sum below reuses it after this wait.
  static_assert(sizeof(Xyzz) <= ReadbackBuffer::kPooledBytes);
  ReadbackBuffer readback(std::max<std::size_t>(3 * sizeof(std::uint32_t), sizeof(Xyzz)));
  std::uint32_t* counts = reinterpret_cast<std::uint32_t*>(readback.data());  // dense, ones, max scalar bits
  {
    DeviceBuffer<std::uint32_t> dense_flag(n + 1, stream), one_flag(n + 1, stream);
    DeviceBuffer<std::uint32_t> dense_position(n + 1, stream), one_position(n + 1, stream), max_bits(1, stream);
    // Entry n is a 0 flag, so position[n] is the count.
    ZKFARM_CUDA_CHECK(cudaMemsetAsync(dense_flag.data() + n, 0, sizeof(std::uint32_t), stream));
    ZKFARM_CUDA_CHECK(cudaMemsetAsync(one_flag.data() + n, 0, sizeof(std::uint32_t), stream));
    max_bits.fill_zero(stream);
    ZKFARM_CUDA_LAUNCH(mk::classify_kernel<FrDev, DeviceAffine>
                       <<<blocks_for(n, mk::kLightThreads), mk::kLightThreads, 0, stream>>>(
                           n, bases, scalars, dense_flag.data(), one_flag.data(), max_bits.data()));
    std::size_t scan_bytes = 0;
    ZKFARM_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, dense_flag.data(), dense_position.data(),
                                                    int(n + 1), stream));
    DeviceBuffer<std::uint8_t> scan_temp(scan_bytes, stream);
    ZKFARM_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(scan_temp.data(), scan_bytes, dense_flag.data(),
                                                    dense_position.data(), int(n + 1), stream));
    ZKFARM_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(scan_temp.data(), scan_bytes, one_flag.data(),
                                                    one_position.data(), int(n + 1), stream));
    ZKFARM_CUDA_LAUNCH(mk::scatter_kernel<<<blocks_for(n, mk::kLightThreads), mk::kLightThreads, 0, stream>>>(
        n, dense_flag.data(), dense_position.data(), dense_index.data()));
    ZKFARM_CUDA_LAUNCH(mk::scatter_kernel<<<blocks_for(n, mk::kLightThreads), mk::kLightThreads, 0, stream>>>(
        n, one_flag.data(), one_position.data(), ones_index.data()));
    ZKFARM_CUDA_CHECK(cudaMemcpyAsync(&counts[0], dense_position.data() + n, sizeof(std::uint32_t),
                                      cudaMemcpyDeviceToHost, stream));
    ZKFARM_CUDA_CHECK(cudaMemcpyAsync(&counts[1], one_position.data() + n, sizeof(std::uint32_t),
                                      cudaMemcpyDeviceToHost, stream));
    ZKFARM_CUDA_CHECK(
        cudaMemcpyAsync(&counts[2], max_bits.data(), sizeof(std::uint32_t), cudaMemcpyDeviceToHost, stream));
    mark(1);
    ZKFARM_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  const std::uint64_t ones = counts[1];
  local.dense = counts[0];
  local.ones = ones;
  local.scalar_bits = counts[2];

  // 2. Ones: partial sums per thread, then groups of 16.
  if (ones_out) {
    *ones_out = std::move(ones_index);
  } else if (ones > 0) {
    const std::uint64_t length = mk::segment_length(ones, target_threads, 16);
    const std::uint64_t threads = (ones + length - 1) / length;
    DeviceBuffer<Xyzz> partial(threads, stream);
    mk::SumOnesLaunch<Pts>::launch(blocks_for(threads, mk::kPointThreads), stream, threads, length, ones,
                                   ones_index.data(), bases, partial.data());
    DeviceBuffer<Xyzz> sum = msm_detail::reduce_runs(std::move(partial), 1, threads, reduce_group, stream);
    ZKFARM_CUDA_CHECK(cudaMemcpyAsync(readback.data(), sum.data(), sizeof(Xyzz), cudaMemcpyDeviceToHost, stream));
    ZKFARM_CUDA_CHECK(cudaStreamSynchronize(stream));
    out->ones_sum.assign(readback.data(), readback.data() + sizeof(Xyzz));
  }
  mark(2);
}

template <class FqParams, int kDegree, class FrParams>
void msm_device_split_raw(const DeviceContext& ctx, const void* device_bases, const void* device_scalars,
                          std::size_t n, cudaStream_t stream, const DenseReserve& reserve, std::size_t* dense,
                          MsmRawResult* out) {
  namespace mk = msm_kernels;
  using Fq = DevFp<FqParams>;
  using Field = std::conditional_t<kDegree == 1, Fq, DevFq2<Fq>>;
  using DeviceAffine = typename PointTypes<Field>::Affine;
  using FrDev = DevFp<FrParams>;
  if (n >= mk::kIndexMask)
    throw std::invalid_argument("gpu msm: at most 2^31 - 2 points per call, got " + std::to_string(n));
  *out = MsmRawResult();
  *dense = 0;
  if (n == 0) return;
  ctx.activate();
  std::vector<Event> marks;
  GpuMsmStats local;
  DeviceBuffer<std::uint32_t> dense_index;
  classify_and_sum_ones<FqParams, kDegree, FrParams>(ctx, device_bases, device_scalars, n, stream, marks, local, out,
                                                     dense_index, GpuMsmConfig().reduce_group);
  *dense = local.dense;
  if (local.dense == 0) return;
  const auto [out_bases, out_scalars] = reserve(local.dense);
  ZKFARM_CUDA_LAUNCH(mk::gather_dense_kernel<FrDev, DeviceAffine>
                     <<<msm_detail::blocks_for(local.dense, mk::kLightThreads), mk::kLightThreads, 0, stream>>>(
                         local.dense, dense_index.data(), reinterpret_cast<const DeviceAffine*>(device_bases),
                         reinterpret_cast<const FrDev*>(device_scalars), static_cast<DeviceAffine*>(out_bases),
                         static_cast<FrDev*>(out_scalars)));
}

template <class FqParams, int kDegree, class FrParams>
void msm_device_raw(const DeviceContext& ctx, const void* device_bases, const void* device_scalars, std::size_t n,
                    cudaStream_t stream, const GpuMsmConfig& config, GpuMsmStats* stats, MsmRawResult* out) {
  namespace mk = msm_kernels;
  using msm_detail::blocks_for;
  static_assert(kDegree == 1 || kDegree == 2, "G1 over Fq or G2 over Fq2");
  using Fq = DevFp<FqParams>;
  using Field = std::conditional_t<kDegree == 1, Fq, DevFq2<Fq>>;
  using Pts = PointTypes<Field>;
  using Xyzz = typename Pts::Xyzz;
  using DeviceAffine = typename Pts::Affine;
  using FrDev = DevFp<FrParams>;

  config.validate();
  if (n >= mk::kIndexMask)
    throw std::invalid_argument("gpu msm: at most 2^31 - 2 points per call, got " + std::to_string(n));
  GpuMsmStats local;
  local.points = n;
  *out = MsmRawResult();
  if (n == 0) {
    if (stats) *stats = local;
    return;
  }
  ctx.activate();
  // Stage boundaries, for GpuMsmStats::stage_ms (only when asked for).
  std::vector<Event> marks(stats ? 6 : 0);
  auto mark = [&](int i) {
    if (stats) marks[i].record(stream);
  };
  mark(0);
  const auto* bases = reinterpret_cast<const DeviceAffine*>(device_bases);
  // Enough threads to fill every SM several times over with the 128-thread
  // point kernels (register-bound at a few hundred resident threads per SM).
  const std::uint64_t target_threads = std::uint64_t(ctx.info().multiprocessors) * 1024;

  // 1-2. Classify, compact, sum the ones (or keep them for the buckets).
  const bool ones_in_buckets = config.ones_in_buckets && config.shifted_windows != 0;
  DeviceBuffer<std::uint32_t> dense_index, ones_index;
  classify_and_sum_ones<FqParams, kDegree, FrParams>(ctx, device_bases, device_scalars, n, stream, marks, local, out,
                                                     dense_index, config.reduce_group,
                                                     ones_in_buckets ? &ones_index : nullptr);
  const std::uint64_t m = local.dense;
  const std::uint64_t bucket_ones = ones_in_buckets ? local.ones : 0;
  const auto* scalars = reinterpret_cast<const FrDev*>(device_scalars);

  // 3-7. Pippenger over the dense points (and the ones, bucket_ones > 0).
  if (m + bucket_ones > 0) {
    const double sort_cost = mk::sort_cost(Fq::kLimbs, kDegree);
    const bool shifted = config.shifted_windows != 0;
    // With shifted bases the table fixes c, and all windows share one
    // bucket set.
    const mk::Layout layout =
        shifted ? mk::choose_layout(m, local.scalar_bits, config.shifted_window_bits, sort_cost, 0, 0, true)
                : mk::choose_layout(m, local.scalar_bits, config.window_bits, sort_cost, sizeof(Xyzz),
                                    device_memory_available() / 4);
    if (shifted && layout.windows > config.shifted_windows)
      throw std::invalid_argument("gpu msm: the shifted bases hold " + std::to_string(config.shifted_windows) +
                                  " rows but " + std::to_string(local.scalar_bits) + "-bit scalars need " +
                                  std::to_string(layout.windows));
    if (layout.window_bits == 0) throw DeviceOutOfMemory("gpu msm: not enough device memory for any window size", 0);
    local.window_bits = layout.window_bits;
    local.windows = layout.windows;
    // The ones after the dense points' digits: key 0 (digit 1) and their
    // own index (row 0 of the table, sign +).
    const std::uint64_t total = std::uint64_t(layout.windows) * m + bucket_ones;
    const std::uint32_t buckets = layout.buckets;
    // Bucket sets and the sorted entries of each.
    const std::uint64_t sets = shifted ? 1 : layout.windows;
    const std::uint64_t set_m = shifted ? total : m;
    local.bucket_sets = unsigned(sets);
    if (shifted && total >= std::uint64_t(std::numeric_limits<int>::max()))
      throw std::invalid_argument("gpu msm: " + std::to_string(total) + " digits are too many for one sort");

    // 3-4. Digits, sorted per window.
    DeviceBuffer<std::uint32_t> keys_sorted(total, stream), values_sorted(total, stream);
    {
      DeviceBuffer<std::uint32_t> keys(total, stream), values(total, stream);
      if (m > 0)
        ZKFARM_CUDA_LAUNCH(mk::digits_kernel<FrDev><<<blocks_for(m, mk::kLightThreads), mk::kLightThreads, 0, stream>>>(
            m, dense_index.data(), scalars, layout, keys.data(), values.data(), shifted ? std::uint64_t(n) : 0));
      if (bucket_ones > 0) {
        const std::uint64_t at = std::uint64_t(layout.windows) * m;
        ZKFARM_CUDA_CHECK(cudaMemsetAsync(keys.data() + at, 0, bucket_ones * sizeof(std::uint32_t), stream));
        ZKFARM_CUDA_CHECK(cudaMemcpyAsync(values.data() + at, ones_index.data(), bucket_ones * sizeof(std::uint32_t),
                                          cudaMemcpyDeviceToDevice, stream));
      }
      std::size_t sort_bytes = 0;
      ZKFARM_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, keys.data(), keys_sorted.data(),
                                                        values.data(), values_sorted.data(), int(set_m), 0,
                                                        int(layout.window_bits), stream));
      DeviceBuffer<std::uint8_t> sort_temp(sort_bytes, stream);
      for (std::uint64_t set = 0; set < sets; ++set) {
        const std::uint64_t offset = set * set_m;
        ZKFARM_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
            sort_temp.data(), sort_bytes, keys.data() + offset, keys_sorted.data() + offset, values.data() + offset,
            values_sorted.data() + offset, int(set_m), 0, int(layout.window_bits), stream));
      }
    }
    dense_index = DeviceBuffer<std::uint32_t>();
    ones_index = DeviceBuffer<std::uint32_t>();
    mark(3);

    // 5. Bucket accumulation (segmented, then record levels).
    DeviceBuffer<Xyzz> bucket_sums(sets * (std::uint64_t(buckets) + 1), stream);
    bucket_sums.fill_zero(stream);  // all-zero bytes = identity (ZZ = 0)
    {
      // f(std::integral_constant<int, kMinBlocks>) for the accumulation
      // kernel this curve and group use. G1: measured on the H200 at 2^24
      // (NOTES.md, run 3), 3 blocks per SM is best for 12-limb Fq (184 ->
      // 168 registers, -2.5%), 4 for 8-limb Fq (138 -> 128, -3%). G2: the
      // compiler's register choice.
      auto with_kernel = [&](auto&& f) {
        if constexpr (kDegree == 1) {
          const unsigned blocks = config.accumulate_min_blocks ? config.accumulate_min_blocks
                                                               : (Fq::kLimbs >= 12 ? 3u : 4u);
          if (blocks == 3) return f(std::integral_constant<int, 3>());
          if (blocks == 4) return f(std::integral_constant<int, 4>());
        }
        return f(std::integral_constant<int, 1>());
      };
      using Source = mk::PointSource<Pts>;
      // Threads: config.accumulate_waves waves of the kernel's resident
      // blocks, each thread an equal share of the entries (at least
      // config.accumulate_min_share where more than one wave is needed).
      // Equal shares do not finish together (the schedulers favour some
      // warps), so shorter ones let an SM start new blocks while others
      // finish; each share costs two records, though (NOTES.md, run W1).
      const std::uint64_t resident =
          std::uint64_t(ctx.info().multiprocessors) * mk::kPointThreads *
          with_kernel([](auto min_blocks) {
            return mk::SegmentReduceLaunch<Pts, Source, decltype(min_blocks)::value>::blocks_per_sm();
          });
      const std::uint64_t length = mk::accumulate_length(total, resident, config.accumulate_waves,
                                                         config.accumulate_min_share, config.min_segment);
      std::uint64_t threads = (total + length - 1) / length;
      bool last = threads == 1;
      DeviceBuffer<std::uint32_t> record_ids(last ? 0 : 2 * threads, stream);
      DeviceBuffer<Xyzz> record_sums(last ? 0 : 2 * threads, stream);
      const Source points{keys_sorted.data(), values_sorted.data(), bases, set_m, buckets};
      with_kernel([&](auto min_blocks) {
        mk::SegmentReduceLaunch<Pts, Source, decltype(min_blocks)::value>::launch(
            blocks_for(threads, mk::kPointThreads), stream, threads, length, total, points, buckets, last,
            bucket_sums.data(), record_ids.data(), record_sums.data());
      });
      std::uint64_t records = 2 * threads;
      while (!last) {
        ++local.record_levels;
        const std::uint64_t record_length = config.record_segment;
        threads = (records + record_length - 1) / record_length;
        last = threads == 1;
        DeviceBuffer<std::uint32_t> next_ids(last ? 0 : 2 * threads, stream);
        DeviceBuffer<Xyzz> next_sums(last ? 0 : 2 * threads, stream);
        const mk::RecordSource<Pts> source{record_ids.data(), record_sums.data()};
        mk::SegmentReduceLaunch<Pts, mk::RecordSource<Pts>, 1>::launch(
            blocks_for(threads, mk::kPointThreads), stream, threads, record_length, records, source, buckets, last,
            bucket_sums.data(), next_ids.data(), next_sums.data());
        record_ids = std::move(next_ids);
        record_sums = std::move(next_sums);
        records = 2 * threads;
      }
    }
    keys_sorted = DeviceBuffer<std::uint32_t>();
    values_sorted = DeviceBuffer<std::uint32_t>();
    mark(4);

    // 6. Per-window sums in two levels. Level 1: segments of 2^segment_log
    // buckets, each giving acc_s = sum (b - start_s + 1) B_b and R_s = sum
    // B_b (bucket_segment). The window's sum is sum_s acc_s + sum_s start_s
    // R_s, and sum_s start_s R_s = 2^segment_log (V - sum_s R_s) with V =
    // sum_s (s + 1) R_s: level 2 computes V by the same kernels over the
    // R_s in place (segments of up to 64, their offsets by segment_scale:
    // 1/64 of the level-1 segments). The host combines A = sum acc_s, R =
    // sum R_s and V per window (msm_device in msm.h).
    const std::uint64_t all_buckets = sets * buckets;
    const unsigned segment_log =
        std::min(msm_detail::ceil_log2((all_buckets + target_threads - 1) / target_threads), layout.window_bits - 1);
    const std::uint32_t segments = buckets >> segment_log;
    const std::uint64_t segment_threads = sets * segments;
    DeviceBuffer<Xyzz> shares(2 * segment_threads, stream);
    mk::BucketSegmentLaunch<Pts>::launch(blocks_for(segment_threads, mk::kPointThreads), stream, segment_threads,
                                         buckets, segment_log, bucket_sums.data(), std::uint64_t(buckets) + 1,
                                         shares.data());
    bucket_sums = DeviceBuffer<Xyzz>();
    const unsigned segment_log2 = std::min(config.reduce_segment_log, msm_detail::ceil_log2(segments));
    const std::uint32_t segments2 = segments >> segment_log2;
    const std::uint64_t segment_threads2 = sets * segments2;
    DeviceBuffer<Xyzz> shares2(2 * segment_threads2, stream);
    mk::BucketSegmentLaunch<Pts>::launch(blocks_for(segment_threads2, mk::kPointThreads), stream, segment_threads2,
                                         segments, segment_log2, shares.data() + segments, 2 * std::uint64_t(segments),
                                         shares2.data());
    {
      DeviceBuffer<Xyzz> scale_scratch(segment_threads2, stream);
      mk::SegmentScaleLaunch<Pts>::launch(blocks_for(segment_threads2, mk::kPointThreads), stream, segment_threads2,
                                          segments, segment_log2, shares2.data(), scale_scratch.data());
    }
    // Per window: [A, R] from the level-1 shares, V from level 2's.
    DeviceBuffer<Xyzz> level1 = msm_detail::reduce_runs(std::move(shares), 2 * sets, segments, config.reduce_group, stream);
    DeviceBuffer<Xyzz> level2 =
        msm_detail::reduce_runs(std::move(shares2), sets, 2 * segments2, config.reduce_group, stream);
    out->window_bits = layout.window_bits;
    out->segment_log = segment_log;
    const std::size_t sums_bytes = std::size_t(sets) * 2 * sizeof(Xyzz), offsets_bytes = std::size_t(sets) * sizeof(Xyzz);
    ReadbackBuffer readback(sums_bytes + offsets_bytes);  // page-locked (ReadbackBuffer says why)
    ZKFARM_CUDA_CHECK(cudaMemcpyAsync(readback.data(), level1.data(), sums_bytes, cudaMemcpyDeviceToHost, stream));
    ZKFARM_CUDA_CHECK(cudaMemcpyAsync(readback.data() + sums_bytes, level2.data(), offsets_bytes,
                                      cudaMemcpyDeviceToHost, stream));
    mark(5);
    ZKFARM_CUDA_CHECK(cudaStreamSynchronize(stream));
    out->window_sums.assign(readback.data(), readback.data() + sums_bytes);
    out->window_offsets.assign(readback.data() + sums_bytes, readback.data() + sums_bytes + offsets_bytes);
    // 7. (Horner over the windows) is msm_device() in msm.h, on the host.
    if (stats)
      for (int i = 0; i < 5; ++i) local.stage_ms[i] = Event::elapsed_ms(marks[i], marks[i + 1]);
  }
  if (stats) *stats = local;
}

template <class FqParams, int kDegree>
void shifted_bases_raw(const DeviceContext& ctx, const void* device_bases, std::size_t n, unsigned window_bits,
                       unsigned windows, void* device_table, cudaStream_t stream) {
  using Field = typename msm_kernels::PointsOf<FqParams, kDegree>::Field;
  using Affine = DevAffine<Field>;
  namespace bk = batch_affine_kernels;
  if (n == 0 || windows == 0) return;
  ctx.activate();
  auto* table = static_cast<Affine*>(device_table);
  ZKFARM_CUDA_CHECK(cudaMemcpyAsync(table, device_bases, n * sizeof(Affine), cudaMemcpyDeviceToDevice, stream));
  // 64 points per thread and inversion: ~9 multiplications of its share
  // per doubling, beside the doubling's 7.
  const std::uint64_t threads = (n + 63) / 64;
  DeviceBuffer<Field> scratch(n, stream);
  for (unsigned w = 1; w < windows; ++w) {
    Affine* row = table + std::uint64_t(w) * n;
    ZKFARM_CUDA_CHECK(cudaMemcpyAsync(row, row - n, n * sizeof(Affine), cudaMemcpyDeviceToDevice, stream));
    for (unsigned d = 0; d < window_bits; ++d)
      bk::DoubleLaunch<Field>::launch(msm_detail::blocks_for(threads, bk::kThreads), stream, threads, n, row,
                                   scratch.data());
  }
  ZKFARM_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace zkfarm::cuda

// The shifted bases of one group (its double_rows part declared extern),
// e.g. ZKFARM_INSTANTIATE_GPU_MSM_SHIFTED(zkfarm::Bn254FqParams, 2) beside
// ZKFARM_INSTANTIATE_GPU_MSM(zkfarm::Bn254FqParams, 2, ...).
#define ZKFARM_INSTANTIATE_GPU_MSM_SHIFTED(FQ_PARAMS, DEGREE)                                                  \
  ZKFARM_GPU_MSM_PART(extern, FQ_PARAMS, DEGREE, double_rows)                                                \
  template void zkfarm::cuda::shifted_bases_raw<FQ_PARAMS, DEGREE>(                                          \
      const zkfarm::cuda::DeviceContext&, const void*, std::size_t, unsigned, unsigned, void*, cudaStream_t);

// Explicit instantiation for one base field, degree and scalar field, e.g.
//   ZKFARM_INSTANTIATE_GPU_MSM(zkfarm::Bn254FqParams, 1, zkfarm::Bn254FrParams)
// The point kernels' launchers are declared extern (a part .cu defines each,
// ZKFARM_INSTANTIATE_GPU_MSM_PART); G2 uses only accumulate1.
#define ZKFARM_INSTANTIATE_GPU_MSM(FQ_PARAMS, DEGREE, FR_PARAMS)                                               \
  ZKFARM_GPU_MSM_PART(extern, FQ_PARAMS, DEGREE, accumulate1)                                                \
  ZKFARM_GPU_MSM_PART(extern, FQ_PARAMS, DEGREE, accumulate3)                                                \
  ZKFARM_GPU_MSM_PART(extern, FQ_PARAMS, DEGREE, accumulate4)                                                \
  ZKFARM_GPU_MSM_PART(extern, FQ_PARAMS, DEGREE, records)                                                    \
  ZKFARM_GPU_MSM_PART(extern, FQ_PARAMS, DEGREE, bucket_segment)                                             \
  ZKFARM_GPU_MSM_PART(extern, FQ_PARAMS, DEGREE, segment_scale)                                              \
  ZKFARM_GPU_MSM_PART(extern, FQ_PARAMS, DEGREE, reduce_group)                                               \
  ZKFARM_GPU_MSM_PART(extern, FQ_PARAMS, DEGREE, sum_ones)                                                   \
  template void zkfarm::cuda::msm_device_raw<FQ_PARAMS, DEGREE, FR_PARAMS>(                                   \
      const zkfarm::cuda::DeviceContext&, const void*, const void*, std::size_t, cudaStream_t,                 \
      const zkfarm::cuda::GpuMsmConfig&, zkfarm::cuda::GpuMsmStats*, zkfarm::cuda::MsmRawResult*);             \
  template void zkfarm::cuda::msm_device_split_raw<FQ_PARAMS, DEGREE, FR_PARAMS>(                             \
      const zkfarm::cuda::DeviceContext&, const void*, const void*, std::size_t, cudaStream_t,                 \
      const zkfarm::cuda::DenseReserve&, std::size_t*, zkfarm::cuda::MsmRawResult*);
