// setup_device.h -- the TEST-ONLY Groth16 setup (circuits/groth16_setup.h)
// with its curve arithmetic on the GPU: keys for PoRep-scale circuits
// (~130M constraints, ~75 GB of BLS12-381 points) made in seconds, straight
// into device memory, never held on the host.
//
// The CPU computes the scalars (groth16_setup_scalars: Lagrange evaluations
// at tau, column sums, the H scalars), exactly as the CPU setup does;
// groth16_setup_device() uploads them one array at a time and multiplies
// the generators by them with DeviceFixedBaseTable (fixed_base.h), writing
// every query of a DeviceProvingKey in place. download_setup_key() copies
// the queries back into a host Groth16SetupKey for write_zkey; for the same
// toxic waste it is byte-identical to groth16_setup()'s key.
// The single points (alpha1, beta1, delta1, beta2, gamma2, delta2) are made
// on the CPU (six scalar multiplications).
//
// Measured on the H200 (BENCHMARKS.md, kernels/cuda/NOTES.md): the key of a
// PoRep-32G partition (BLS12-381, 132.9M wires, domain 2^27, 71.4 GiB) in
// 9.5 s of device time (G1 4.3 s, G2 3.0 s, scalar upload 2.1 s), after
// 14 s of scalars on 16 cores.
//
// Same warning as groth16_setup.h: one process knows the toxic waste and
// could forge proofs. Benchmarks and tests only.
//
// Device memory: the key (num_vars * (3 G1 + 1 G2) + (num_vars - nPublic -
// 1 + domain) G1 points) plus one scalar array (32 bytes per element of the
// largest of num_vars and domain) and the fixed-base scratch (1 GB for G1,
// 2 GB for G2 at the default batch). Errors: DeviceOutOfMemory when the key does not fit,
// CudaError from the runtime, std::invalid_argument for inconsistent
// scalars. Synchronous: returns once the key is complete on the device.
#ifndef ZKFARM_CIRCUITS_SETUP_DEVICE_H_
#define ZKFARM_CIRCUITS_SETUP_DEVICE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "circuits/groth16_setup.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/device_key.h"
#include "kernels/cuda/fixed_base.h"

namespace zkfarm::cuda {

// A key made on the device: the proving key resident there (its header,
// gamma2 included, on the host side of DeviceProvingKey) plus the IC points a
// .zkey and a verifying key need, on the host.
template <class Curve>
struct DeviceSetupKey {
  DeviceProvingKey<Curve> proving_key;
  std::vector<typename Curve::G1Affine> ic;  // num_public + 1

  Groth16VerifyingKey<Curve> verifying_key() const { return proving_key.header().verifying_key(ic); }
};

// Device milliseconds per stage (CUDA events on the setup stream).
struct DeviceSetupTimings {
  double tables_ms = 0;  // the two fixed-base tables
  double upload_ms = 0;  // scalar arrays, host -> device
  double g1_ms = 0;      // A, B1, IC, C, H
  double g2_ms = 0;      // B2
  double total_ms = 0;
};

// Builds the key of `scalars` on ctx's device (stream 0). Throws as the file
// comment says.
template <class Curve>
DeviceSetupKey<Curve> groth16_setup_device(const DeviceContext& ctx,
                                           const Groth16SetupScalars<typename Curve::Fr>& scalars,
                                           DeviceSetupTimings* timings = nullptr,
                                           const GpuFixedBaseConfig& config = {}) {
  using Fr = typename Curve::Fr;
  using G1 = typename Curve::G1;
  using G2 = typename Curve::G2;
  if (scalars.a.size() != scalars.num_vars || scalars.b.size() != scalars.num_vars ||
      scalars.k.size() != scalars.num_vars || scalars.h.size() != scalars.domain_size ||
      scalars.num_public + 1 > scalars.num_vars)
    throw std::invalid_argument("device setup: scalar arrays disagree with num_vars " +
                                std::to_string(scalars.num_vars) + " / domain " +
                                std::to_string(scalars.domain_size));
  ctx.activate();
  const cudaStream_t stream = ctx.stream(0);
  Event start, tables_done, g1_done, g2_done;
  double upload_ms = 0;
  start.record(stream);

  DeviceSetupKey<Curve> out;
  DeviceProvingKey<Curve>& key = out.proving_key;
  key.num_vars = scalars.num_vars;
  key.num_public = scalars.num_public;
  key.domain_size = scalars.domain_size;
  const ToxicWaste<Fr>& toxic = scalars.toxic;
  const G1 g1 = G1::from_affine(Curve::g1_generator());
  const G2 g2 = G2::from_affine(Curve::g2_generator());
  key.alpha1 = g1.scalar_mul(toxic.alpha).to_affine();
  key.beta1 = g1.scalar_mul(toxic.beta).to_affine();
  key.delta1 = g1.scalar_mul(toxic.delta).to_affine();
  key.beta2 = g2.scalar_mul(toxic.beta).to_affine();
  key.delta2 = g2.scalar_mul(toxic.delta).to_affine();
  key.gamma2 = g2.scalar_mul(toxic.gamma).to_affine();

  const DeviceFixedBaseTable<Curve, G1> g1_table(ctx, Curve::g1_generator(), stream, config);
  const DeviceFixedBaseTable<Curve, G2> g2_table(ctx, Curve::g2_generator(), stream, config);
  tables_done.record(stream);

  const std::size_t num_vars = scalars.num_vars, num_public = scalars.num_public;
  key.a_points = DeviceBuffer<typename Curve::G1Affine>(num_vars, stream);
  key.b1_points = DeviceBuffer<typename Curve::G1Affine>(num_vars, stream);
  key.b2_points = DeviceBuffer<typename Curve::G2Affine>(num_vars, stream);
  key.c_points = DeviceBuffer<typename Curve::G1Affine>(num_vars - num_public - 1, stream);
  key.h_points = DeviceBuffer<typename Curve::G1Affine>(scalars.domain_size, stream);
  DeviceBuffer<typename Curve::G1Affine> ic(num_public + 1, stream);
  DeviceBuffer<Fr> device_scalars(std::max<std::size_t>(num_vars, scalars.domain_size), stream);
  // Host -> device copy of one scalar array (pageable memory: the driver
  // stages it, so the host array may change once this returns).
  auto upload = [&](const std::vector<Fr>& values) {
    Event before, after;
    before.record(stream);
    device_scalars.upload(values.data(), values.size(), stream);
    after.record(stream);
    after.synchronize();
    upload_ms += Event::elapsed_ms(before, after);
  };

  upload(scalars.a);
  g1_table.mul_many(device_scalars.data(), num_vars, key.a_points.data(), stream);
  upload(scalars.k);
  g1_table.mul_many(device_scalars.data(), num_public + 1, ic.data(), stream);
  g1_table.mul_many(device_scalars.data() + num_public + 1, num_vars - num_public - 1, key.c_points.data(),
                    stream);
  upload(scalars.h);
  g1_table.mul_many(device_scalars.data(), scalars.domain_size, key.h_points.data(), stream);
  upload(scalars.b);
  g1_table.mul_many(device_scalars.data(), num_vars, key.b1_points.data(), stream);
  g1_done.record(stream);
  g2_table.mul_many(device_scalars.data(), num_vars, key.b2_points.data(), stream);
  g2_done.record(stream);

  out.ic.resize(num_public + 1);
  ic.download(out.ic.data(), out.ic.size(), stream);
  ZKFARM_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (timings) {
    timings->tables_ms = Event::elapsed_ms(start, tables_done);
    timings->upload_ms = upload_ms;
    // The uploads sit between the G1 products; their time is not G1's.
    timings->g1_ms = Event::elapsed_ms(tables_done, g1_done) - upload_ms;
    timings->g2_ms = Event::elapsed_ms(g1_done, g2_done);
    timings->total_ms = Event::elapsed_ms(start, g2_done);
  }
  return out;
}

// Copies a device key back into a host key (for write_zkey, or to compare
// with groth16_setup()); coefficients become its coefficient section.
// Synchronous. Throws CudaError from the runtime.
template <class Curve>
Groth16SetupKey<Curve> download_setup_key(const DeviceContext& ctx, const DeviceSetupKey<Curve>& device_key,
                                          std::vector<ZkeyCoefficient<typename Curve::Fr>> coefficients) {
  ctx.activate();
  const cudaStream_t stream = ctx.stream(0);
  const DeviceProvingKey<Curve>& pk = device_key.proving_key;
  Groth16SetupKey<Curve> key;
  key.header() = pk.header();
  key.coefficients = std::move(coefficients);
  key.ic = device_key.ic;
  auto get = [stream](const auto& buffer, auto& host) {
    host.resize(buffer.size());
    if (!host.empty()) buffer.download(host.data(), host.size(), stream);
  };
  get(pk.a_points, key.a);
  get(pk.b1_points, key.b1);
  get(pk.b2_points, key.b2);
  get(pk.c_points, key.c);
  get(pk.h_points, key.h);
  ZKFARM_CUDA_CHECK(cudaStreamSynchronize(stream));
  return key;
}

// What run_setup_device did: run_setup's report plus the device stages.
struct DeviceSetupReport {
  Groth16SetupReport setup;  // timings.lagrange/columns: CPU scalars; g1/g2/total: device
  DeviceSetupTimings device;
};

// The CLI's `zkfarm setup --device N`: as run_setup (groth16_setup.h), the
// points made on device `device_ordinal`. Writes the same .zkey bytes as
// run_setup for the same options. Throws as run_setup, plus NoSuchDevice,
// DeviceOutOfMemory and CudaError.
inline DeviceSetupReport run_setup_device(const std::string& r1cs_path, const std::string& zkey_path,
                                          const Groth16SetupOptions& options, int device_ordinal) {
  auto file = FileBytes::map(r1cs_path);
  DeviceSetupReport report;
  report.setup.curve = r1cs_curve(file);
  const DeviceContext ctx(device_ordinal);
  auto run = [&](auto curve_tag) {
    using Curve = decltype(curve_tag);
    using Fr = typename Curve::Fr;
    Stopwatch clock;
    const R1cs<Fr> r1cs = parse_r1cs<Fr>(file);
    const std::uint32_t n = groth16_domain_size(r1cs.num_constraints, r1cs.num_public());
    auto scalars = groth16_setup_scalars(r1cs, sample_toxic_waste<Fr>(n, options), true, &report.setup.timings);
    const DeviceSetupKey<Curve> device_key = groth16_setup_device<Curve>(ctx, scalars, &report.device);
    const Groth16SetupKey<Curve> key = download_setup_key<Curve>(ctx, device_key, std::move(scalars.coefficients));
    write_zkey<Curve>(zkey_path, key.write_input());
    report.setup.sizes() = key.sizes();
    report.setup.timings.g1 = report.device.g1_ms / 1e3;
    report.setup.timings.g2 = report.device.g2_ms / 1e3;
    report.setup.timings.total = clock.lap();
  };
  dispatch_curve(report.setup.curve, run);
  return report;
}

}  // namespace zkfarm::cuda

#endif  // ZKFARM_CIRCUITS_SETUP_DEVICE_H_
