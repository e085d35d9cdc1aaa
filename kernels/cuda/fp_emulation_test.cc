// fp_emulation_test -- the device field and curve code (fp.cuh, curve.cuh)
// run on the CPU with the PTX carry flag emulated, against field.h/curve.h.
//
// Needs no GPU and no CUDA toolkit (plain C++): it runs in CI and catches
// errors in the limb arithmetic before any device time is spent. The same
// source lines compile to PTX for the GPU, where tests/gpu repeats the
// comparison on the device.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cuda/curve.cuh"
#include "kernels/curves.h"
#include "kernels/random.h"

namespace zkfarm::cuda {
namespace {

// Byte copy between a host type and its same-layout device twin.
template <class To, class From>
void bit_copy(To& to, const From& from) {
  static_assert(sizeof(To) == sizeof(From));
  std::memcpy(static_cast<void*>(&to), static_cast<const void*>(&from), sizeof(To));
}

template <class Host>
std::vector<Host> interesting_values() {
  std::vector<Host> v = {Host::zero(), Host::one(), -Host::one(), Host::from_u64(2), -Host::from_u64(2),
                         Host::from_u64(0xffffffffULL), Host::from_mont(typename Host::Int{})};
  // Largest Montgomery representations: p - 1, p - 2^32, ...
  for (std::uint64_t k : {1ULL, 2ULL, 0x100000000ULL}) {
    typename Host::Int m = Host::kModulus;
    typename Host::Int d;
    d.limbs[0] = k;
    m.sub_in_place(d);
    v.push_back(Host::from_mont(m));
  }
  for (int i = 0; i < 200; ++i) v.push_back(random_field_element<Host>());
  return v;
}

template <class Params>
void check_field() {
  using Host = Fp<Params>;
  using Dev = DevFp<Params>;
  static_assert(sizeof(Dev) == sizeof(Host));
  const auto values = interesting_values<Host>();
  for (std::size_t i = 0; i < values.size(); ++i) {
    const Host& a = values[i];
    const Host& b = values[(i * 7 + 3) % values.size()];
    const Dev da = Dev::from_host(a), db = Dev::from_host(b);
    ASSERT_EQ((da * db).to_host(), a * b) << Params::kName << " mul " << i;
    ASSERT_EQ(da.sqr().to_host(), a.square()) << Params::kName << " sqr " << i;
    ASSERT_EQ((da + db).to_host(), a + b) << Params::kName << " add " << i;
    ASSERT_EQ((da - db).to_host(), a - b) << Params::kName << " sub " << i;
    ASSERT_EQ((-da).to_host(), -a) << Params::kName << " neg " << i;
    ASSERT_EQ(da.cneg(true).to_host(), -a);
    ASSERT_EQ(da.cneg(false).to_host(), a);
    ASSERT_EQ(da.dbl().to_host(), a.dbl());
    ASSERT_EQ(da.is_zero(), a.is_zero());
    ASSERT_EQ(da.is_one(), a.is_one());
    ASSERT_EQ(da.pow(12345).to_host(), a.pow(12345));
    // from_montgomery gives the canonical integer's limbs.
    const Dev canon = da.from_montgomery();
    typename Host::Int c;
    std::memcpy(c.limbs.data(), canon.limb, sizeof(canon.limb));
    ASSERT_EQ(c, a.to_canonical());
  }
  // Every pair of the edge values.
  for (std::size_t i = 0; i < 10; ++i)
    for (std::size_t j = 0; j < 10; ++j)
      ASSERT_EQ((Dev::from_host(values[i]) * Dev::from_host(values[j])).to_host(), values[i] * values[j]);
}

TEST(FpEmulation, Bn254Fq) { check_field<Bn254FqParams>(); }
TEST(FpEmulation, Bn254Fr) { check_field<Bn254FrParams>(); }
TEST(FpEmulation, Bls12381Fq) { check_field<Bls12381FqParams>(); }
TEST(FpEmulation, Bls12381Fr) { check_field<Bls12381FrParams>(); }

template <class Curve>
void check_fq2() {
  using Host = typename Curve::Fq2;
  using Dev = typename DeviceFieldOf<Host>::type;
  static_assert(sizeof(Dev) == sizeof(Host));
  for (int i = 0; i < 50; ++i) {
    Host a{random_field_element<typename Curve::Fq>(), random_field_element<typename Curve::Fq>()};
    Host b{random_field_element<typename Curve::Fq>(), random_field_element<typename Curve::Fq>()};
    Dev da, db;
    bit_copy(da, a);
    bit_copy(db, b);
    Dev prod = da * db, sq = da.sqr();
    Host hp, hs;
    bit_copy(hp, prod);
    bit_copy(hs, sq);
    ASSERT_EQ(hp, a * b);
    ASSERT_EQ(hs, a.square());
  }
}

TEST(FpEmulation, Bn254Fq2) { check_fq2<Bn254>(); }
TEST(FpEmulation, Bls12381Fq2) { check_fq2<Bls12381>(); }

template <class Cfg, class Curve>
void check_curve(const AffinePoint<Cfg>& generator) {
  using Pts = DevicePointsOf<Cfg>;
  using Host = XyzzPoint<Cfg>;
  using Jac = JacobianPoint<Cfg>;
  std::vector<AffinePoint<Cfg>> points;
  Jac g = Jac::from_affine(generator);
  for (int i = 0; i < 12; ++i) {
    g = g.dbl() + Jac::from_affine(generator);
    points.push_back(g.to_affine());
  }
  points.push_back(points[3]);             // equal points
  points.push_back(-points[5]);            // opposite points
  points.push_back(AffinePoint<Cfg>::identity());
  auto to_dev = [](const auto& host_value, auto& dev_value) { bit_copy(dev_value, host_value); };

  Host host_acc = Host::identity();
  typename Pts::Xyzz dev_acc = Pts::Xyzz::identity();
  Host host_sum2 = Host::identity();
  typename Pts::Xyzz dev_sum2 = Pts::Xyzz::identity();
  for (const auto& p : points) {
    typename Pts::Affine dp;
    to_dev(p, dp);
    host_acc.add_mixed(p);
    dev_acc.add_mixed(dp);
    Host hp = Host::from_affine(p);
    host_sum2.add(hp);
    host_sum2.add(host_acc);
    typename Pts::Xyzz dxp;
    to_dev(hp, dxp);
    dev_sum2.add(dxp);
    dev_sum2.add(dev_acc);
    Host back;
    bit_copy(back, dev_acc);
    ASSERT_EQ(back.to_jacobian(), host_acc.to_jacobian());
    bit_copy(back, dev_sum2);
    ASSERT_EQ(back.to_jacobian(), host_sum2.to_jacobian());
  }
  // Doubling, small multiples, P + P through add(), P + (-P).
  typename Pts::Xyzz d = dev_acc.dbl();
  Host back;
  bit_copy(back, d);
  ASSERT_EQ(back.to_jacobian(), host_acc.to_jacobian().dbl());
  typename Pts::Xyzz m = dev_acc.mul_small(1000003);
  bit_copy(back, m);
  BigInt<1> k;
  k.limbs[0] = 1000003;
  ASSERT_EQ(back.to_jacobian(), host_acc.to_jacobian().scalar_mul(k));
  typename Pts::Xyzz twice = dev_acc;
  twice.add(dev_acc);
  bit_copy(back, twice);
  ASSERT_EQ(back.to_jacobian(), host_acc.to_jacobian().dbl());
  typename Pts::Xyzz self = Pts::Xyzz::identity();
  typename Pts::Affine p0, n0;
  to_dev(points[0], p0);
  to_dev(-points[0], n0);
  self.add_mixed(p0);
  self.add_mixed(p0);
  bit_copy(back, self);
  ASSERT_EQ(back.to_jacobian(), Jac::from_affine(points[0]).dbl());
  self.add_mixed(n0);
  self.add_mixed(n0);
  ASSERT_TRUE(self.is_identity());
}

TEST(CurveEmulation, Bn254G1) { check_curve<Bn254G1Config, Bn254>(Bn254::g1_generator()); }
TEST(CurveEmulation, Bls12381G1) { check_curve<Bls12381G1Config, Bls12381>(Bls12381::g1_generator()); }
TEST(CurveEmulation, Bn254G2) { check_curve<Bn254G2Config, Bn254>(Bn254::g2_generator()); }
TEST(CurveEmulation, Bls12381G2) { check_curve<Bls12381G2Config, Bls12381>(Bls12381::g2_generator()); }

}  // namespace
}  // namespace zkfarm::cuda
