// gpu_kernels_test -- every CUDA kernel against its CPU reference on the
// device, plus the device context's error behaviour.
//
// Runs on device 0. Without a usable CUDA device every test is reported as
// SKIPPED (GTEST_SKIP), never as passed; the Bazel target is tagged "gpu"
// so default `bazel test //...` (test_tag_filters=-gpu) leaves it out.
//   bazel test //tests/gpu:gpu_kernels_test --test_tag_filters=gpu
// or from the bundle: tests/gpu/run_gpu_tests.sh.
#include <gtest/gtest.h>

#ifndef ZKFARM_HAS_CUDA

// CPU-only build (no CUDA toolkit): nothing to run, reported as skipped.
TEST(GpuKernels, SkippedWithoutCuda) { GTEST_SKIP() << "SKIPPED: no CUDA device (built without CUDA)"; }

#else

#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "kernels/cuda/device_context.h"
#include "kernels/cuda/msm.h"
#include "kernels/cuda/ntt.h"
#include "kernels/curves.h"
#include "kernels/msm.h"
#include "kernels/ntt.h"
#include "tests/gpu/field_kernels.h"
#include "tests/gpu/test_inputs.h"

namespace zkfarm::cuda {
namespace {

using testing::GridPoints;
using testing::random_elements;

// One context per process (as in the worker), or null without a device.
const DeviceContext* context() {
  static const std::unique_ptr<DeviceContext> ctx = []() -> std::unique_ptr<DeviceContext> {
    if (DeviceContext::visible_device_count() == 0) {
      std::printf("SKIPPED: no CUDA device\n");
      return nullptr;
    }
    auto c = std::make_unique<DeviceContext>(0);
    std::printf("%s\n", c->info().summary().c_str());
    return c;
  }();
  return ctx.get();
}

#define REQUIRE_GPU()                                   \
  do {                                                  \
    if (context() == nullptr) GTEST_SKIP() << "SKIPPED: no CUDA device"; \
  } while (0)

// --- Device context ---------------------------------------------------------

TEST(DeviceContext, ReportsTheDevice) {
  REQUIRE_GPU();
  const DeviceInfo& info = context()->info();
  EXPECT_EQ(info.ordinal, 0);
  EXPECT_FALSE(info.name.empty());
  EXPECT_EQ(info.uuid.rfind("GPU-", 0), 0u) << info.uuid;
  EXPECT_EQ(info.uuid.size(), 40u) << info.uuid;
  EXPECT_GT(info.total_memory, std::size_t(1) << 30);
  EXPECT_GT(info.multiprocessors, 0);
  const MemoryInfo m = context()->memory();
  EXPECT_GT(m.free, 0u);
  EXPECT_EQ(m.total, info.total_memory);
}

TEST(DeviceContext, MissingOrdinalFailsClearly) {
  REQUIRE_GPU();
  const int count = DeviceContext::visible_device_count();
  for (int ordinal : {count, count + 7, -1}) {
    try {
      DeviceContext bad(ordinal);
      FAIL() << "ordinal " << ordinal << " was accepted";
    } catch (const NoSuchDevice& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("CUDA device " + std::to_string(ordinal) + " does not exist"), std::string::npos) << what;
      EXPECT_NE(what.find("sees " + std::to_string(count) + " device"), std::string::npos) << what;
      EXPECT_EQ(e.code(), cudaErrorInvalidDevice);
    }
  }
  // The failed constructions left the working context alone.
  DeviceBuffer<int> still_fine(16, context()->stream(0));
  still_fine.fill_zero(context()->stream(0));
  context()->synchronize();
}

TEST(DeviceContext, OutOfMemoryIsTyped) {
  REQUIRE_GPU();
  const std::size_t too_much = context()->info().total_memory + (std::size_t(1) << 30);
  try {
    DeviceBuffer<std::uint8_t> huge(too_much, context()->stream(0));
    FAIL() << "allocated more than the device has";
  } catch (const DeviceOutOfMemory& e) {
    EXPECT_EQ(e.requested_bytes(), too_much);
    EXPECT_EQ(e.code(), cudaErrorMemoryAllocation);
    EXPECT_NE(std::string(e.what()).find("out of device memory"), std::string::npos) << e.what();
  }
  // The error was not sticky: the next launch and copy work and report no
  // stale error.
  testing::launch_with_block_size(*context(), 32);
  std::vector<int> host(1000, 7), back(1000, 0);
  DeviceBuffer<int> buffer(1000, context()->stream(0));
  buffer.upload(host.data(), host.size(), context()->stream(0));
  buffer.download(back.data(), back.size(), context()->stream(0));
  context()->synchronize();
  EXPECT_EQ(back, host);
}

TEST(DeviceContext, FailedCallsNameExpressionFileAndLine) {
  REQUIRE_GPU();
  try {
    testing::launch_with_block_size(*context(), 4096);  // > 1024 threads per block
    FAIL() << "bad launch not reported";
  } catch (const CudaError& e) {
    // CUDA 13 reports cudaErrorInvalidValue here (older runtimes
    // cudaErrorInvalidConfiguration); what matters is that the launch site,
    // the expression and the runtime's own name for the code are in the text.
    const std::string what = e.what();
    EXPECT_NE(e.code(), cudaSuccess);
    EXPECT_NE(what.find("field_kernels.cu:"), std::string::npos) << what;
    EXPECT_NE(what.find("trivial_kernel<<<"), std::string::npos) << what;
    EXPECT_NE(what.find(e.code_name()), std::string::npos) << what;
  }
  try {
    ZKFARM_CUDA_CHECK(cudaMemcpy(nullptr, nullptr, 64, static_cast<cudaMemcpyKind>(42)));
    FAIL() << "bad copy not reported";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("gpu_kernels_test.cc:"), std::string::npos) << what;
    EXPECT_NE(what.find("cudaMemcpy(nullptr, nullptr, 64"), std::string::npos) << what;
  }
  testing::launch_with_block_size(*context(), 64);  // and the context still works
}

TEST(DeviceContext, BuffersStreamsEvents) {
  REQUIRE_GPU();
  const cudaStream_t s = context()->stream(1);
  PinnedBuffer<std::uint64_t> pinned(1 << 20);
  for (std::size_t i = 0; i < pinned.size(); ++i) pinned[i] = i * 0x9e3779b97f4a7c15ULL;
  DeviceBuffer<std::uint64_t> device(pinned.size(), s);
  Event start, stop;
  start.record(s);
  device.upload(pinned.data(), pinned.size(), s);
  std::vector<std::uint64_t> back(pinned.size());
  device.download(back.data(), back.size(), s);
  stop.record(s);
  stop.synchronize();
  EXPECT_GE(Event::elapsed_ms(start, stop), 0.0f);
  for (std::size_t i = 0; i < back.size(); ++i) ASSERT_EQ(back[i], pinned[i]);
  EXPECT_THROW(device.upload(pinned.data(), pinned.size() + 1, s), std::out_of_range);
  EXPECT_THROW(context()->stream(99), std::out_of_range);
  DeviceBuffer<std::uint64_t> moved = std::move(device);
  EXPECT_EQ(moved.size(), pinned.size());
  EXPECT_EQ(device.size(), 0u);
}

// Readback buffers: small ones page-locked from a pool that keeps its
// blocks (taken again, not made anew), larger ones from the heap; both
// receive a device-to-host copy, from any thread.
TEST(DeviceContext, ReadbackBuffersArePooled) {
  REQUIRE_GPU();
  const cudaStream_t s = context()->stream(1);
  DeviceBuffer<std::uint32_t> device(1 << 16, s);
  std::vector<std::uint32_t> values(device.size());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::uint32_t(i * 2654435761u);
  device.upload(values.data(), values.size(), s);
  ZKFARM_CUDA_CHECK(cudaStreamSynchronize(s));
  auto read = [&](ReadbackBuffer& buffer) {
    const std::size_t count = buffer.size() / sizeof(std::uint32_t);
    device.download(reinterpret_cast<std::uint32_t*>(buffer.data()), count, s);
    ZKFARM_CUDA_CHECK(cudaStreamSynchronize(s));
    for (std::size_t i = 0; i < count; ++i)
      ASSERT_EQ(reinterpret_cast<const std::uint32_t*>(buffer.data())[i], values[i]) << i;
  };
  { ReadbackBuffer warm(16); }  // the pool has at least one block
  const std::size_t blocks = ReadbackBuffer::pool_blocks();
  for (int round = 0; round < 3; ++round) {
    ReadbackBuffer small(ReadbackBuffer::kPooledBytes);
    EXPECT_TRUE(small.pinned());
    read(small);
  }
  EXPECT_EQ(ReadbackBuffer::pool_blocks(), blocks) << "a released block is taken again";
  {
    ReadbackBuffer a(64), b(64);  // two at once: two blocks
    EXPECT_NE(a.data(), b.data());
    EXPECT_LE(ReadbackBuffer::pool_blocks(), blocks + 1);
  }
  ReadbackBuffer large(ReadbackBuffer::kPooledBytes + 4);
  EXPECT_FALSE(large.pinned());
  read(large);
  std::thread other([&] {
    context()->activate();
    ReadbackBuffer small(256);
    read(small);
  });
  other.join();
}

// --- Field arithmetic -------------------------------------------------------

template <class Params>
void check_field_on_device() {
  using F = Fp<Params>;
  std::vector<F> a = random_elements<F>(1 << 16, 11), b = random_elements<F>(1 << 16, 12);
  const std::vector<F> edges = {F::zero(), F::one(), -F::one(), F::from_u64(2), -F::from_u64(2),
                                F::from_mont(typename F::Int{})};
  for (std::size_t i = 0; i < edges.size(); ++i)
    for (std::size_t j = 0; j < edges.size(); ++j) {
      a[i * edges.size() + j] = edges[i];
      b[i * edges.size() + j] = edges[j];
    }
  std::vector<F> mul(a.size()), sqr(a.size()), add(a.size()), sub(a.size());
  testing::field_ops_on_device<Params>(*context(), a, b, mul, sqr, add, sub);
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(mul[i], a[i] * b[i]) << Params::kName << " mul " << i;
    ASSERT_EQ(sqr[i], a[i].square()) << Params::kName << " sqr " << i;
    ASSERT_EQ(add[i], a[i] + b[i]) << Params::kName << " add " << i;
    ASSERT_EQ(sub[i], a[i] - b[i]) << Params::kName << " sub " << i;
  }
}

TEST(GpuField, Bn254Fq) {
  REQUIRE_GPU();
  check_field_on_device<Bn254FqParams>();
}
TEST(GpuField, Bn254Fr) {
  REQUIRE_GPU();
  check_field_on_device<Bn254FrParams>();
}
TEST(GpuField, Bls12381Fq) {
  REQUIRE_GPU();
  check_field_on_device<Bls12381FqParams>();
}
TEST(GpuField, Bls12381Fr) {
  REQUIRE_GPU();
  check_field_on_device<Bls12381FrParams>();
}

// --- NTT --------------------------------------------------------------------

template <class Fr>
void check_ntt(unsigned max_log, const GpuNttConfig& config = {}) {
  const GpuNtt<Fr> gpu(*context(), config);
  for (unsigned log_n = 0; log_n <= max_log; ++log_n) {
    const std::size_t n = std::size_t(1) << log_n;
    const std::vector<Fr> input = random_elements<Fr>(n, 100 + log_n);
    std::vector<Fr> expected = input, got = input;
    ntt<Fr>(expected);
    gpu.forward(std::span<Fr>(got));
    ASSERT_TRUE(got == expected) << Fr::kName << " ntt 2^" << log_n;
    expected = got = input;
    intt<Fr>(expected);
    gpu.inverse(std::span<Fr>(got));
    ASSERT_TRUE(got == expected) << Fr::kName << " intt 2^" << log_n;
    expected = got = input;
    evaluations_to_odd_coset<Fr>(expected);
    gpu.evaluations_to_odd_coset(std::span<Fr>(got));
    ASSERT_TRUE(got == expected) << Fr::kName << " coset 2^" << log_n;
  }
  // Edge inputs: all zero, all one, a single one (-> all ones / powers).
  for (unsigned log_n : {10u, 16u}) {
    const std::size_t n = std::size_t(1) << log_n;
    for (int kind = 0; kind < 3; ++kind) {
      std::vector<Fr> v(n, kind == 1 ? Fr::one() : Fr::zero());
      if (kind == 2) v[1] = Fr::one();
      std::vector<Fr> expected = v;
      ntt<Fr>(expected);
      gpu.forward(std::span<Fr>(v));
      ASSERT_TRUE(v == expected) << "edge kind " << kind << " 2^" << log_n;
    }
  }
  // Bad sizes are refused before any work.
  std::vector<Fr> three(3);
  EXPECT_THROW(gpu.forward(std::span<Fr>(three)), std::invalid_argument);
  EXPECT_THROW(gpu.forward(nullptr, std::size_t(1) << 28, context()->stream(0)), std::invalid_argument);
  EXPECT_THROW(gpu.forward(std::span<Fr>()), std::invalid_argument);
}

TEST(GpuNtt, Bn254AllSizesTo2e20) {
  REQUIRE_GPU();
  check_ntt<Bn254Fr>(20);
}
TEST(GpuNtt, Bls12381AllSizesTo2e20) {
  REQUIRE_GPU();
  check_ntt<Bls12381Fr>(20);
}
// The other tile sizes of GpuNttConfig (2^11: the shaped kernels of eight
// elements a thread; 2^8: more, shorter early passes).
TEST(GpuNtt, OtherTiles) {
  REQUIRE_GPU();
  check_ntt<Bn254Fr>(20, GpuNttConfig{11});
  check_ntt<Bls12381Fr>(18, GpuNttConfig{8});
  EXPECT_THROW(GpuNtt<Bn254Fr>(*context(), GpuNttConfig{12}), std::invalid_argument);
  EXPECT_THROW(GpuNtt<Bn254Fr>(*context(), GpuNttConfig{7}), std::invalid_argument);
}

// Large sizes: round trips on the device (the CPU reference is too slow for
// a test) plus one CPU comparison at 2^22.
template <class Fr>
void check_ntt_large() {
  const GpuNtt<Fr> gpu(*context());
  const cudaStream_t s = context()->stream(0);
  for (unsigned log_n : {22u, 24u}) {
    const std::size_t n = std::size_t(1) << log_n;
    const std::vector<Fr> input = random_elements<Fr>(n, 7 + log_n);
    DeviceBuffer<Fr> d(n, s);
    d.upload(input.data(), n, s);
    gpu.forward(d.data(), n, s);
    std::vector<Fr> evaluations(n);
    d.download(evaluations.data(), n, s);
    gpu.inverse(d.data(), n, s);
    std::vector<Fr> back(n);
    d.download(back.data(), n, s);
    ZKFARM_CUDA_CHECK(cudaStreamSynchronize(s));
    ASSERT_TRUE(back == input) << "round trip 2^" << log_n;
    if (log_n == 22) {
      std::vector<Fr> expected = input;
      ntt<Fr>(expected);
      ASSERT_TRUE(evaluations == expected) << "ntt 2^22";
    }
  }
}

TEST(GpuNtt, Bn254Large) {
  REQUIRE_GPU();
  check_ntt_large<Bn254Fr>();
}
TEST(GpuNtt, Bls12381Large) {
  REQUIRE_GPU();
  check_ntt_large<Bls12381Fr>();
}

// The shaped pass kernels (the default: the narrow ones, tiles of 2^10 with
// four elements a thread) against the generic kernel
// (GpuNttConfig::generic_passes, the kernel the CPU comparisons above
// established before the shaped ones) at large plans (two and three
// passes, 2^27 included):
// forward, inverse and odd coset equal element for element, and forward
// then inverse returns the input. Sizes 2^16..2^22 are compared with the
// CPU NTT by check_ntt / check_ntt_large through the default kernels too.
template <class Fr>
void check_shaped_equals_generic(std::initializer_list<unsigned> sizes, const GpuNttConfig& shaped_config = {}) {
  const GpuNtt<Fr> shaped(*context(), shaped_config);
  GpuNttConfig generic_config;
  generic_config.generic_passes = true;
  generic_config.elementwise_reversal = true;  // and the tiled bit reversal against the element-wise one
  const GpuNtt<Fr> generic(*context(), generic_config);
  const cudaStream_t s = context()->stream(0);
  for (unsigned log_n : sizes) {
    const std::size_t n = std::size_t(1) << log_n;
    const std::vector<Fr> input = random_elements<Fr>(n, 31 + log_n);
    DeviceBuffer<Fr> a(n, s), b(n, s);
    std::vector<Fr> got(n), want(n);
    for (int op = 0; op < 3; ++op) {
      a.upload(input.data(), n, s);
      b.upload(input.data(), n, s);
      const GpuNtt<Fr>* both[2] = {&shaped, &generic};
      Fr* data[2] = {a.data(), b.data()};
      for (int k = 0; k < 2; ++k) {
        if (op == 0) both[k]->forward(data[k], n, s);
        if (op == 1) both[k]->inverse(data[k], n, s);
        if (op == 2) both[k]->evaluations_to_odd_coset(data[k], n, s);
      }
      a.download(got.data(), n, s);
      b.download(want.data(), n, s);
      ZKFARM_CUDA_CHECK(cudaStreamSynchronize(s));
      ASSERT_TRUE(got == want) << Fr::kName << " 2^" << log_n << " op " << op << ": shaped != generic";
      ASSERT_FALSE(got == input) << Fr::kName << " 2^" << log_n << " op " << op << ": nothing was written";
    }
    a.upload(input.data(), n, s);
    shaped.forward(a.data(), n, s);
    shaped.inverse(a.data(), n, s);
    a.download(got.data(), n, s);
    ZKFARM_CUDA_CHECK(cudaStreamSynchronize(s));
    ASSERT_TRUE(got == input) << Fr::kName << " round trip 2^" << log_n;
  }
}

TEST(GpuNtt, Bn254ShapedEqualsGeneric) {
  REQUIRE_GPU();
  check_shaped_equals_generic<Bn254Fr>({21u, 24u, 26u});
}
TEST(GpuNtt, Bls12381ShapedEqualsGeneric) {
  REQUIRE_GPU();
  check_shaped_equals_generic<Bls12381Fr>({22u, 27u});
}
// The default's narrow kernels cover every early-pass shape of 5..9 stages
// and the last of 10 at these sizes (2^21: 6 + 5 + 10, 2^24: 7 + 7 + 10,
// 2^26: 8 + 8 + 10, 2^27: 9 + 8 + 10). The shaped kernels of 2^11 tiles
// (GpuNttConfig::tile_log 11: eight elements a thread) likewise (2^21:
// 5 + 5 + 11, 2^24: 7 + 6 + 11, 2^26: 8 + 7 + 11, 2^27: 8 + 8 + 11).
TEST(GpuNtt, Bn254Tile11ShapedEqualsGeneric) {
  REQUIRE_GPU();
  check_shaped_equals_generic<Bn254Fr>({21u, 24u, 26u}, GpuNttConfig{11});
}
TEST(GpuNtt, Bls12381Tile11ShapedEqualsGeneric) {
  REQUIRE_GPU();
  check_shaped_equals_generic<Bls12381Fr>({22u, 27u}, GpuNttConfig{11});
}

// --- MSM --------------------------------------------------------------------

// How a test MSM runs: whether through shifted bases (a table built on the
// device from the uploaded bases; shift_bits 0 = the layout
// shifted_layout() picks).
struct MsmVariant {
  bool shifted = false;
  unsigned shift_bits = 0;
  std::string name() const { return shifted ? "shifted c=" + std::to_string(shift_bits) : "plain"; }
};

template <class Curve, class G>
G run_msm(std::span<const typename G::Affine> bases, std::span<const typename Curve::Fr> scalars,
          GpuMsmConfig config, const MsmVariant& variant, GpuMsmStats* stats) {
  if (!variant.shifted || bases.empty()) return cuda::msm<Curve, G>(*context(), bases, scalars, config, stats);
  const DeviceContext& ctx = *context();
  ctx.activate();
  const cudaStream_t s = ctx.stream(0);
  DeviceBuffer<typename G::Affine> device_bases(bases.size(), s);
  DeviceBuffer<typename Curve::Fr> device_scalars(scalars.size(), s);
  device_bases.upload(bases.data(), bases.size(), s);
  device_scalars.upload(scalars.data(), scalars.size(), s);
  const auto table = shifted_bases<Curve, G>(ctx, device_bases.data(), bases.size(), s, variant.shift_bits);
  return msm_device<Curve, G>(ctx, table.table.data(), device_scalars.data(), bases.size(), s, table.apply(config),
                              stats);
}

template <class Curve, class G>
void expect_msm(const char* what, std::span<const typename G::Affine> bases, std::span<const typename Curve::Fr> scalars,
                const GpuMsmConfig& config = {}, const MsmVariant& variant = {}) {
  GpuMsmStats stats;
  const G got = run_msm<Curve, G>(bases, scalars, config, variant, &stats);
  const G expected = zkfarm::msm<Curve, G>(bases, scalars);
  ASSERT_TRUE(got == expected) << Curve::kName << " " << what << " (" << variant.name() << ") n=" << bases.size()
                               << " c=" << stats.window_bits << " dense=" << stats.dense << " ones=" << stats.ones;
}

template <class Curve, class G>
void check_msm(const typename G::Affine& generator, std::size_t max_n, const MsmVariant& variant = {}) {
  using Fr = typename Curve::Fr;
  using Affine = typename G::Affine;
  const GridPoints<Affine> grid(max_n, generator, 5);
  const std::vector<Fr> random = random_elements<Fr>(max_n, 6);
  const std::span<const Affine> all_points(grid.points);
  const std::span<const Fr> all_scalars(random);
  // Sizes, including non-powers of two.
  for (std::size_t n : {std::size_t(1), std::size_t(2), std::size_t(3), std::size_t(31), std::size_t(100),
                        std::size_t(1000), std::size_t(4097), std::size_t(65539), max_n}) {
    if (n > max_n) continue;
    expect_msm<Curve, G>("random", all_points.first(n), all_scalars.first(n), {}, variant);
  }
  // Forced windows, small to large (with shifted bases: tables of that c).
  const std::size_t n = std::min<std::size_t>(max_n, 5000);
  for (unsigned c : {2u, 4u, 8u, 13u, 16u, 20u}) {
    GpuMsmConfig config;
    MsmVariant v = variant;
    if (v.shifted) v.shift_bits = c;
    else config.window_bits = c;
    expect_msm<Curve, G>("forced window", all_points.first(n), all_scalars.first(n), config, v);
  }
  // Zeros, ones, minus one, small values, points at infinity.
  {
    std::vector<Fr> scalars(all_scalars.begin(), all_scalars.begin() + n);
    std::vector<Affine> points(all_points.begin(), all_points.begin() + n);
    for (std::size_t i = 0; i < n; ++i) {
      if (i % 6 == 0) scalars[i] = Fr::zero();
      if (i % 6 == 1) scalars[i] = Fr::one();
      if (i % 6 == 2) scalars[i] = -Fr::one();
      if (i % 6 == 3) scalars[i] = Fr::from_u64(i);
      if (i % 11 == 0) points[i] = Affine::identity();
    }
    expect_msm<Curve, G>("mixed", points, scalars, {}, variant);
    // Only zeros and ones (nothing through Pippenger); only zeros; all ones.
    for (std::size_t i = 0; i < n; ++i) scalars[i] = i % 3 ? Fr::one() : Fr::zero();
    expect_msm<Curve, G>("zeros and ones", points, scalars, {}, variant);
    std::fill(scalars.begin(), scalars.end(), Fr::zero());
    expect_msm<Curve, G>("zeros", points, scalars, {}, variant);
    // All scalars equal: every point lands in the same bucket of each window.
    std::fill(scalars.begin(), scalars.end(), all_scalars[0]);
    expect_msm<Curve, G>("equal scalars", all_points.first(n), scalars, {}, variant);
    // Small scalars: few windows.
    for (std::size_t i = 0; i < n; ++i) scalars[i] = Fr::from_u64(all_scalars[i].mont.limbs[0] & 0xffff);
    expect_msm<Curve, G>("16-bit scalars", all_points.first(n), scalars, {}, variant);
  }
  // Repeated and opposite bases (doublings and cancellations in buckets).
  {
    std::vector<Affine> points(n, all_points[0]);
    for (std::size_t i = 0; i < n; i += 2) points[i] = -all_points[0];
    std::vector<Fr> scalars(n, Fr::from_u64(5));
    for (std::size_t i = 0; i < n; i += 3) scalars[i] = all_scalars[i];
    expect_msm<Curve, G>("repeated bases", points, scalars, {}, variant);
  }
  // Filecoin-like witness at the largest size: 45% zeros, 45% ones.
  {
    std::vector<Fr> scalars(all_scalars.begin(), all_scalars.end());
    for (std::size_t i = 0; i < scalars.size(); ++i) {
      const std::uint64_t r = scalars[i].mont.limbs[1] % 20;
      if (r < 9) scalars[i] = Fr::zero();
      else if (r < 18) scalars[i] = Fr::one();
    }
    expect_msm<Curve, G>("witness-like", all_points, scalars, {}, variant);
  }
  if (variant.shifted) return;
  // Empty input; mismatched lengths; bad config.
  EXPECT_TRUE((cuda::msm<Curve, G>(*context(), {}, {})).is_identity());
  EXPECT_THROW((cuda::msm<Curve, G>(*context(), all_points.first(3), all_scalars.first(2))), std::invalid_argument);
  GpuMsmConfig bad;
  bad.window_bits = 30;
  EXPECT_THROW((cuda::msm<Curve, G>(*context(), all_points.first(3), all_scalars.first(3), bad)),
               std::invalid_argument);
}

TEST(GpuMsm, Bn254G1) {
  REQUIRE_GPU();
  check_msm<Bn254, Bn254::G1>(Bn254::g1_generator(), std::size_t(1) << 18);
}
TEST(GpuMsm, Bls12381G1) {
  REQUIRE_GPU();
  check_msm<Bls12381, Bls12381::G1>(Bls12381::g1_generator(), std::size_t(1) << 18);
}
// The shifted bases, on the same cases.
TEST(GpuMsm, Bn254G1Shifted) {
  REQUIRE_GPU();
  check_msm<Bn254, Bn254::G1>(Bn254::g1_generator(), std::size_t(1) << 16, {true});
}
TEST(GpuMsm, Bls12381G1Shifted) {
  REQUIRE_GPU();
  check_msm<Bls12381, Bls12381::G1>(Bls12381::g1_generator(), std::size_t(1) << 16, {true});
}
// A shifted table with too few rows for the scalars is refused by name.
TEST(GpuMsm, ShiftedBasesTooFewRows) {
  REQUIRE_GPU();
  using Fr = Bn254::Fr;
  const GridPoints<Bn254::G1Affine> grid(64, Bn254::g1_generator(), 7);
  const std::vector<Fr> scalars = random_elements<Fr>(64, 8);
  const DeviceContext& ctx = *context();
  const cudaStream_t s = ctx.stream(0);
  DeviceBuffer<Bn254::G1Affine> bases(64, s);
  DeviceBuffer<Fr> device_scalars(64, s);
  bases.upload(grid.points.data(), 64, s);
  device_scalars.upload(scalars.data(), 64, s);
  const auto table = shifted_bases<Bn254, Bn254::G1>(ctx, bases.data(), 64, s, 16, 4);
  try {
    (void)msm_device<Bn254, Bn254::G1>(ctx, table.table.data(), device_scalars.data(), 64, s, table.apply({}));
    FAIL() << "4 rows of c = 16 cannot hold 254-bit scalars";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("shifted bases hold 4 rows"), std::string::npos) << e.what();
  }
  GpuMsmConfig bad;
  bad.shifted_windows = 3;
  EXPECT_THROW(bad.validate(), std::invalid_argument);
}
TEST(GpuMsm, Bn254G2) {
  REQUIRE_GPU();
  check_msm<Bn254, Bn254::G2>(Bn254::g2_generator(), std::size_t(1) << 14);
}
TEST(GpuMsm, Bls12381G2) {
  REQUIRE_GPU();
  check_msm<Bls12381, Bls12381::G2>(Bls12381::g2_generator(), std::size_t(1) << 14);
}
// G2 over shifted bases (affine doublings over Fq2), on the same cases.
TEST(GpuMsm, Bn254G2Shifted) {
  REQUIRE_GPU();
  check_msm<Bn254, Bn254::G2>(Bn254::g2_generator(), std::size_t(1) << 12, {true});
}
TEST(GpuMsm, Bls12381G2Shifted) {
  REQUIRE_GPU();
  check_msm<Bls12381, Bls12381::G2>(Bls12381::g2_generator(), std::size_t(1) << 12,
                                    {true});
}

// Large G1 MSMs checked exactly through the grid structure (test_inputs.h).
template <class Curve>
void check_msm_large(std::size_t n) {
  using Fr = typename Curve::Fr;
  const GridPoints<typename Curve::G1Affine> grid(n, Curve::g1_generator(), 9);
  const std::vector<Fr> scalars = random_elements<Fr>(n, 10);
  const auto expected = grid.template reference_msm<Curve, typename Curve::G1>(scalars);
  for (const MsmVariant& v : {MsmVariant{}, MsmVariant{true}}) {
    const auto got = run_msm<Curve, typename Curve::G1>(grid.points, scalars, {}, v, nullptr);
    ASSERT_TRUE(got == expected) << Curve::kName << " n=" << n << " " << v.name();
  }
}

// A large G2 MSM, plain and over the table the model picks, checked
// exactly through the grid structure.
TEST(GpuMsm, Bls12381G2Large) {
  REQUIRE_GPU();
  using G2 = Bls12381::G2;
  const std::size_t n = (std::size_t(1) << 20) + 123;
  const GridPoints<Bls12381::G2Affine> grid(n, Bls12381::g2_generator(), 11);
  const std::vector<Bls12381::Fr> scalars = random_elements<Bls12381::Fr>(n, 12);
  const G2 expected = grid.template reference_msm<Bls12381, G2>(scalars);
  for (const MsmVariant& v : {MsmVariant{}, MsmVariant{true}}) {
    GpuMsmStats stats;
    const G2 got = run_msm<Bls12381, G2>(grid.points, scalars, {}, v, &stats);
    ASSERT_TRUE(got == expected) << "n=" << n << " " << v.name() << " c=" << stats.window_bits
                                 << " sets=" << stats.bucket_sets;
  }
}

TEST(GpuMsm, Bn254G1Large) {
  REQUIRE_GPU();
  check_msm_large<Bn254>((std::size_t(1) << 22) + 12345);
}
TEST(GpuMsm, Bls12381G1Large) {
  REQUIRE_GPU();
  check_msm_large<Bls12381>((std::size_t(1) << 22) + 12345);
}

}  // namespace
}  // namespace zkfarm::cuda

#endif  // ZKFARM_HAS_CUDA
