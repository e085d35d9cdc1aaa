// prover_test -- the prover service on the CPU with real circuits (the circom
// fixtures of formats/testdata, both curves): proofs from each PCE source
// verify against snarkjs's verification key, and every error kind comes from
// a real bad input (wrong curve, wrong length, malformed and unsatisfying
// witnesses, broken and mismatched circuit files, a device that is not there,
// host memory that runs out).
#include "prover/prover.h"

#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "formats/binfile.h"
#include "formats/pce.h"
#include "formats/r1cs.h"
#include "formats/snarkjs_json.h"
#include "formats/test_util.h"
#include "formats/wtns.h"
#include "kernels/curves.h"
#include "kernels/groth16_verifier.h"
#include "circuits/groth16_setup.h"
#include "circuits/synthetic_circuit.h"
#include "prover/prover_error.h"
#include "schema/error_code.h"
#include "schema/wire_model.h"

namespace zkfarm::prover {
namespace {

using zkfarm::testing::fixture;
using zkfarm::testing::temp_path;

template <class Curve>
std::string stem() {
  return std::is_same_v<Curve, Bn254> ? "bn128" : "bls12381";
}
template <class Curve>
std::string other_stem() {
  return std::is_same_v<Curve, Bn254> ? "bls12381" : "bn128";
}

void write_bytes(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// The kind of the Error body throws, and its message through *message.
template <class Body>
std::optional<ErrorCode> kind_of(Body&& body, std::string* message = nullptr) {
  try {
    body();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.kind();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a prover::Error: " << e.what();
    return std::nullopt;
  }
  ADD_FAILURE() << "no error";
  return std::nullopt;
}

template <class Curve>
class ProverTest : public ::testing::Test {
 protected:
  using Fr = typename Curve::Fr;
  std::string zkey() const { return fixture(stem<Curve>() + "_mul.zkey"); }
  std::string r1cs() const { return fixture(stem<Curve>() + "_mul.r1cs"); }
  std::string wtns() const { return fixture(stem<Curve>() + "_mul.wtns"); }
  std::vector<Fr> witness() const { return read_wtns<Fr>(wtns()); }
  std::shared_ptr<const FileBytes> wtns_of(const std::vector<Fr>& values, const std::string& name = "w.wtns") {
    return FileBytes::adopt(serialize_wtns<Fr>(std::span<const Fr>(values)), name);
  }
  Proof prove(const CircuitSource& source, const std::shared_ptr<const FileBytes>& witness,
              ProveRequest request = {}) {
    auto circuit = prover_->load(source);
    Timings timings;
    return prover_->prove(*circuit, witness, request, &timings);
  }
  std::unique_ptr<Prover> prover_ = Prover::cpu();
};
using Curves = ::testing::Types<Bn254, Bls12381>;
TYPED_TEST_SUITE(ProverTest, Curves);

TYPED_TEST(ProverTest, ProofsFromEveryPceSourceVerifyWithSnarkjsKey) {
  using Curve = TypeParam;
  using Fr = typename Curve::Fr;
  const std::string pce_path = temp_path("mul.pce");
  save_pce(pce_from_r1cs(read_r1cs<Fr>(this->r1cs())), pce_path);
  const auto vk = read_verification_key<Curve>(fixture(stem<Curve>() + "_verification_key.json"));
  const auto expected_public = read_public_signals<Fr>(fixture(stem<Curve>() + "_public.json"));
  const CircuitSource sources[] = {{this->zkey(), "", ""}, {this->zkey(), "", this->r1cs()}, {this->zkey(), pce_path, ""}};
  for (const CircuitSource& source : sources) {
    SCOPED_TRACE("pce '" + source.pce_path + "' r1cs '" + source.r1cs_path + "'");
    ProveRequest request;
    request.verify = true;
    Timings timings;
    auto circuit = this->prover_->load(source);
    EXPECT_EQ(circuit->curve(), curve_id_of<Curve>());
    const Proof proof = this->prover_->prove(*circuit, Prover::open_witness(this->wtns()), request, &timings);
    const auto& typed = std::get<ProofOf<Curve>>(proof);
    EXPECT_EQ(typed.public_signals, expected_public);
    EXPECT_TRUE(groth16_verify<Curve>(vk, std::span<const Fr>(typed.public_signals), typed.proof));
    EXPECT_GT(timings.prove, 0);
    EXPECT_GT(timings.verify, 0);
  }
}

TYPED_TEST(ProverTest, SeedFixesTheProof) {
  using Curve = TypeParam;
  ProveRequest request;
  request.seed = 7;
  const CircuitSource source{this->zkey(), "", ""};
  const auto a = std::get<ProofOf<Curve>>(this->prove(source, Prover::open_witness(this->wtns()), request));
  const auto b = std::get<ProofOf<Curve>>(this->prove(source, Prover::open_witness(this->wtns()), request));
  const auto c = std::get<ProofOf<Curve>>(this->prove(source, Prover::open_witness(this->wtns())));
  EXPECT_TRUE(a.proof.a == b.proof.a && a.proof.b == b.proof.b && a.proof.c == b.proof.c);
  EXPECT_FALSE(a.proof.a == c.proof.a);
}

// prepare() then prove() is prove() in two halves: the same proof for the
// same seed, the witness parsed once and reusable, the input errors raised
// by prepare() itself (before any prove lock), public_signals() the ones
// prove() returns, and a witness prepared for one circuit refused by
// another.
TYPED_TEST(ProverTest, PreparedWitnessProvesAsTheFileDoes) {
  using Curve = TypeParam;
  using Fr = typename Curve::Fr;
  ProveRequest request;
  request.seed = 11;
  request.verify = true;
  auto circuit = this->prover_->load({this->zkey(), "", ""});
  Timings direct_timings, prepared_timings;
  const auto direct = std::get<ProofOf<Curve>>(
      this->prover_->prove(*circuit, Prover::open_witness(this->wtns()), request, &direct_timings));
  const auto prepared = this->prover_->prepare(*circuit, Prover::open_witness(this->wtns()));
  EXPECT_EQ(prepared->circuit, circuit.get());
  EXPECT_NE(prepared->name.find(stem<Curve>() + "_mul.wtns"), std::string::npos) << prepared->name;
  EXPECT_FALSE(prepared->pinned);  // the CPU engine's heap
  for (int round = 0; round < 2; ++round) {  // a prepared witness can be proved again
    const auto proof = std::get<ProofOf<Curve>>(this->prover_->prove(*circuit, *prepared, request, &prepared_timings));
    EXPECT_TRUE(proof.proof.a == direct.proof.a && proof.proof.b == direct.proof.b && proof.proof.c == direct.proof.c);
    EXPECT_EQ(proof.public_signals, direct.public_signals);
    EXPECT_EQ(prepared_timings.parse_witness, prepared->parse_seconds);
  }
  // public_signals() gives, before proving, the signals prove() returns.
  const PublicSignals early = Prover::public_signals(*prepared);
  ASSERT_TRUE(std::holds_alternative<std::vector<Fr>>(early));
  EXPECT_EQ(std::get<std::vector<Fr>>(early), direct.public_signals);
  EXPECT_EQ(direct.public_signals.size(), circuit->num_public());
  // The input errors come from prepare().
  auto values = this->witness();
  values.pop_back();
  EXPECT_EQ(kind_of([&] { this->prover_->prepare(*circuit, this->wtns_of(values, "short.wtns")); }),
            ErrorCode::kWitnessLength);
  EXPECT_EQ(kind_of([&] { this->prover_->prepare(*circuit, Prover::open_witness(fixture(other_stem<Curve>() + "_mul.wtns"))); }),
            ErrorCode::kWrongCurve);
  values = this->witness();
  values[0] = values[0] + values[0];
  std::string message;
  EXPECT_EQ(kind_of([&] { this->prover_->prepare(*circuit, this->wtns_of(values)); }, &message), ErrorCode::kBadWitness);
  EXPECT_NE(message.find("witness[0] must be 1"), std::string::npos) << message;
  // Another load of the same files is another circuit.
  auto other = this->prover_->load({this->zkey(), "", ""});
  EXPECT_EQ(kind_of([&] { this->prover_->prove(*other, *prepared, request, &prepared_timings); }, &message),
            ErrorCode::kInternal);
  EXPECT_NE(message.find("prepared for another circuit"), std::string::npos) << message;
  // Cancelled before the proof starts.
  std::atomic<bool> cancelled{true};
  request.cancelled = &cancelled;
  EXPECT_EQ(kind_of([&] { this->prover_->prove(*circuit, *prepared, request, &prepared_timings); }),
            ErrorCode::kCancelled);
  (void)sizeof(Fr);
}

TYPED_TEST(ProverTest, WitnessOfTheOtherCurveIsWrongCurve) {
  using Curve = TypeParam;
  const std::string other = fixture(other_stem<Curve>() + "_mul.wtns");
  std::string message;
  EXPECT_EQ(kind_of([&] { this->prove({this->zkey(), "", ""}, Prover::open_witness(other)); }, &message),
            ErrorCode::kWrongCurve);
  EXPECT_NE(message.find(other), std::string::npos) << message;
}

TYPED_TEST(ProverTest, ShortAndLongWitnessesAreWitnessLength) {
  auto values = this->witness();
  auto longer = values;
  longer.push_back(values.back());
  values.pop_back();
  std::string message;
  EXPECT_EQ(kind_of([&] { this->prove({this->zkey(), "", ""}, this->wtns_of(values, "short.wtns")); }, &message),
            ErrorCode::kWitnessLength);
  EXPECT_NE(message.find("short.wtns: witness has"), std::string::npos) << message;
  EXPECT_EQ(kind_of([&] { this->prove({this->zkey(), "", this->r1cs()}, this->wtns_of(longer)); }),
            ErrorCode::kWitnessLength);
}

TYPED_TEST(ProverTest, MalformedWitnessesAreBadWitness) {
  using Fr = typename TypeParam::Fr;
  const auto bytes = zkfarm::testing::read_file(this->wtns());
  const CircuitSource source{this->zkey(), "", ""};
  // A truncated file, bytes that are no .wtns at all, a file that is missing.
  const std::string truncated = temp_path("truncated.wtns");
  write_bytes(truncated, std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + bytes.size() / 2));
  std::string message;
  EXPECT_EQ(kind_of([&] { this->prove(source, Prover::open_witness(truncated)); }, &message),
            ErrorCode::kBadWitness);
  EXPECT_NE(message.find("truncated.wtns"), std::string::npos) << message;
  EXPECT_EQ(kind_of([&] { this->prove(source, FileBytes::copy(zkfarm::testing::read_file(this->zkey()), "k")); }),
            ErrorCode::kBadWitness);
  EXPECT_EQ(kind_of([&] { Prover::open_witness(temp_path("missing.wtns")); }), ErrorCode::kBadWitness);
  // A value >= r.
  auto big = bytes;
  const std::size_t values = zkfarm::testing::section_body_offset(big, kWtnsValuesSection);
  for (std::size_t i = 0; i < Fr::kBytes; ++i) big[values + Fr::kBytes + i] = 0xff;
  EXPECT_EQ(kind_of([&] { this->prove(source, FileBytes::copy(big, "big.wtns")); }), ErrorCode::kBadWitness);
  // witness[0] must be 1.
  auto values_w = this->witness();
  values_w[0] = values_w[0] + values_w[0];
  EXPECT_EQ(kind_of([&] { this->prove(source, this->wtns_of(values_w)); }, &message), ErrorCode::kBadWitness);
  EXPECT_NE(message.find("witness[0] must be 1"), std::string::npos) << message;
}

TYPED_TEST(ProverTest, WitnessFailingAConstraintIsUnsatisfied) {
  using Fr = typename TypeParam::Fr;
  auto values = this->witness();
  values.back() = values.back() + Fr::one();
  // With the r1cs's C matrix the failing constraint is named ...
  std::string message;
  EXPECT_EQ(kind_of([&] { this->prove({this->zkey(), "", this->r1cs()}, this->wtns_of(values)); }, &message),
            ErrorCode::kUnsatisfied);
  EXPECT_NE(message.find("does not satisfy constraint"), std::string::npos) << message;
  // ... without it, the proof fails verification.
  ProveRequest request;
  request.verify = true;
  EXPECT_EQ(kind_of([&] { this->prove({this->zkey(), "", ""}, this->wtns_of(values), request); }, &message),
            ErrorCode::kUnsatisfied);
  EXPECT_NE(message.find("failed verification"), std::string::npos) << message;
}

TYPED_TEST(ProverTest, BrokenOrMismatchedCircuitFilesAreBadCircuit) {
  using Curve = TypeParam;
  using Fr = typename Curve::Fr;
  const auto zkey_bytes = zkfarm::testing::read_file(this->zkey());
  const std::string truncated = temp_path("truncated.zkey");
  write_bytes(truncated, std::vector<std::uint8_t>(zkey_bytes.begin(), zkey_bytes.begin() + zkey_bytes.size() / 2));
  std::string message;
  EXPECT_EQ(kind_of([&] { this->prover_->load({truncated, "", ""}); }, &message), ErrorCode::kBadCircuit);
  EXPECT_NE(message.find("truncated.zkey"), std::string::npos) << message;
  EXPECT_EQ(kind_of([&] { this->prover_->load({temp_path("missing.zkey"), "", ""}); }), ErrorCode::kBadCircuit);
  // A witness given as the key (arguments swapped).
  EXPECT_EQ(kind_of([&] { this->prover_->load({this->wtns(), "", ""}); }), ErrorCode::kBadCircuit);
  // The other curve's r1cs.
  EXPECT_EQ(kind_of([&] { this->prover_->load({this->zkey(), "", fixture(other_stem<Curve>() + "_mul.r1cs")}); }),
            ErrorCode::kBadCircuit);
  // A PCE of another circuit (a synthetic one, more signals).
  SyntheticCircuitOptions options;
  options.num_constraints = 64;
  options.num_public = 2;
  const std::string pce_path = temp_path("other.pce");
  save_pce(pce_from_r1cs(SyntheticCircuit<Fr>(options).to_r1cs()), pce_path);
  EXPECT_EQ(kind_of([&] { this->prover_->load({this->zkey(), pce_path, ""}); }, &message), ErrorCode::kBadCircuit);
  EXPECT_NE(message.find("columns but the key has"), std::string::npos) << message;
  // A PCE file with a flipped byte fails its checksum.
  auto pce_bytes = zkfarm::testing::read_file(pce_path);
  pce_bytes[pce_bytes.size() / 2] ^= 1;
  write_bytes(pce_path, pce_bytes);
  EXPECT_EQ(kind_of([&] { this->prover_->load({this->zkey(), pce_path, ""}); }), ErrorCode::kBadCircuit);
}

TYPED_TEST(ProverTest, CancelledBeforeTheProofStarts) {
  std::atomic<bool> cancelled{true};
  ProveRequest request;
  request.cancelled = &cancelled;
  EXPECT_EQ(kind_of([&] { this->prove({this->zkey(), "", ""}, Prover::open_witness(this->wtns()), request); }),
            ErrorCode::kCancelled);
}

// A synthetic BN254 circuit (PoRep profile) and its test-only key, written
// to a temporary .zkey; its witness through *witness when asked.
std::string write_synthetic_zkey(std::uint64_t constraints, std::uint32_t num_public, std::uint64_t seed,
                                 const std::string& name, std::vector<Bn254::Fr>* witness = nullptr) {
  using Fr = Bn254::Fr;
  SyntheticCircuitOptions options;
  options.num_constraints = constraints;
  options.num_public = num_public;
  options.seed = seed;
  SyntheticCircuit<Fr> synthetic(options);
  const R1cs<Fr> r1cs = synthetic.to_r1cs();
  Groth16SetupOptions setup_options;
  setup_options.seed = seed + 1;
  const auto key = groth16_setup<Bn254>(
      r1cs, sample_toxic_waste<Fr>(groth16_domain_size(r1cs.num_constraints, r1cs.num_public()), setup_options));
  const std::string zkey = temp_path(name);
  write_zkey<Bn254>(zkey, key.write_input());
  if (witness) *witness = synthetic.witness();
  return zkey;
}

// The device memory plan a GPU worker would make, from the loaded circuit on
// any machine: no budget keeps everything resident; the least budget the
// planner accepts (what "needs at least" names) proves it, one byte less
// does not. A circuit of 2^17 constraints streams its key from page-locked
// host memory there (which the plan counts); so does the small fixture.
TEST(Prover, DeviceMemoryPlansWithoutADevice) {
  const std::string zkey = write_synthetic_zkey(1 << 17, 3, 8, "plan.zkey");
  auto prover = Prover::cpu();
  for (const std::string& path : {zkey, fixture("bn128_mul.zkey")}) {
    SCOPED_TRACE(path);
    auto circuit = prover->load({path, "", ""});
    const DeviceMemoryPlan resident = plan_device_memory(*circuit, 0);
    EXPECT_TRUE(resident.fits);
    EXPECT_EQ(resident.streamed_bytes, 0u);
    EXPECT_EQ(resident.host_pinned_bytes, 0u);
    EXPECT_GT(resident.resident_bytes, 0u);
    EXPECT_NE(resident.summary.find("budget none"), std::string::npos) << resident.summary;

    const DeviceMemoryPlan too_small = plan_device_memory(*circuit, 1 << 20);
    EXPECT_FALSE(too_small.fits);
    EXPECT_NE(too_small.summary.find("needs at least"), std::string::npos) << too_small.summary;
    const std::uint64_t needed = too_small.needed_bytes;
    ASSERT_GT(needed, std::uint64_t(1) << 20);
    ASSERT_LE(needed, resident.device_peak_bytes);
    const DeviceMemoryPlan least = plan_device_memory(*circuit, needed);
    EXPECT_TRUE(least.fits) << least.summary;
    EXPECT_LE(least.device_peak_bytes, needed);
    EXPECT_FALSE(plan_device_memory(*circuit, needed - 1).fits);
    EXPECT_GE(least.host_pinned_bytes, least.streamed_bytes);
    if (path == zkey) {  // streamed through the transfer ring
      EXPECT_GT(least.streamed_bytes, 0u) << least.summary;
      EXPECT_NE(least.summary.find("transfer slots"), std::string::npos) << least.summary;
    }
  }
}

// A real allocation failure: caps this process's address space just above
// what it has mapped (setrlimit), then prepares a 1 MiB witness for a
// synthetic circuit of 2^15 signals, whose values cannot be allocated. The
// mmap threshold is pinned so the allocation cannot come from memory the heap
// already holds. A larger witness for a small circuit is refused by its count
// before anything is allocated. Exits 0 when the prover said kOutOfMemory
// and kWitnessLength. Run in a child process (a death test).
[[noreturn]] void prove_under_a_memory_cap() {
  using Fr = Bn254::Fr;
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  std::vector<Fr> values;
  const std::string zkey = write_synthetic_zkey(1 << 15, 1, 5, "synthetic.zkey", &values);
  const std::vector<Fr> ones(std::size_t(1) << 17, Fr::one());
  auto prover = Prover::cpu();
  auto circuit = prover->load({zkey, "", ""});
  auto small = prover->load({fixture("bn128_mul.zkey"), "", ""});
  auto witness = FileBytes::adopt(serialize_wtns<Fr>(std::span<const Fr>(values)), "big.wtns");
  auto longer = FileBytes::adopt(serialize_wtns<Fr>(std::span<const Fr>(ones)), "long.wtns");
  std::ifstream statm("/proc/self/statm");
  std::uint64_t pages = 0;
  statm >> pages;
  rlimit limit;
  limit.rlim_cur = limit.rlim_max = pages * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (1u << 18);
  if (setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(4);
  int code = 0;
  for (const auto& [target, file, want] : {std::tuple{small.get(), longer, ErrorCode::kWitnessLength},
                                           std::tuple{circuit.get(), witness, ErrorCode::kOutOfMemory}}) {
    try {
      prover->prepare(*target, file);
      code = 2;
    } catch (const Error& e) {
      std::fprintf(stderr, "%s: %s\n", std::string(error_name(e.kind())).c_str(), e.what());
      if (e.kind() != want) code = 1;
    }
  }
  std::_Exit(code);
}

TEST(ProverDeathTest, AllocationFailureIsOutOfMemory) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(prove_under_a_memory_cap(), ::testing::ExitedWithCode(0),
              "outOfMemory: out of host memory reading big.wtns");
}

TEST(Prover, DeviceThatIsNotThereIsNoDevice) {
  std::string message;
  EXPECT_EQ(kind_of([&] { Prover::cuda(Prover::cuda_device_count() + 3); }, &message), ErrorCode::kNoDevice);
  EXPECT_FALSE(message.empty());
}

TEST(Prover, CpuDeviceDescription) {
  const Device device = Prover::cpu()->device();
  EXPECT_EQ(device.ordinal, -1);
  EXPECT_EQ(device.backend, "cpu");
  EXPECT_EQ(device.uuid.rfind("cpu-", 0), 0u);
  EXPECT_GT(device.memory_bytes, 0u);
  EXPECT_GT(Prover::cpu()->memory_used_bytes(), 0u);
}

// The kinds the coordinator must treat as the job's fault are exactly those
// whose wire codes it fails the job on (coordinator.cc, is_input_error);
// `zkfarm prove` exits 2 for those and for broken circuit files.
TEST(Prover, DeviceBudgetsParseWithUnitsAndRejectNonsense) {
  EXPECT_EQ(parse_device_budget("auto"), kAutoDeviceBudget);
  EXPECT_EQ(parse_device_budget("none"), 0u);
  EXPECT_EQ(parse_device_budget("0"), 0u);
  EXPECT_EQ(parse_device_budget("123456"), 123456u);
  EXPECT_EQ(parse_device_budget("24GiB"), std::size_t(24) << 30);
  EXPECT_EQ(parse_device_budget("24G"), std::size_t(24) << 30);
  EXPECT_EQ(parse_device_budget("0.5GiB"), std::size_t(1) << 29);
  EXPECT_EQ(parse_device_budget("512MiB"), std::size_t(512) << 20);
  EXPECT_EQ(parse_device_budget("141GB"), std::size_t(141000000000));
  EXPECT_EQ(parse_device_budget("80MB"), std::size_t(80000000));
  for (const char* bad : {"", "-1GiB", "24TB", "GiB", "24 GiB", "lots", "1e30", "nan"}) {
    try {
      parse_device_budget(bad);
      ADD_FAILURE() << "'" << bad << "' parsed";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(ProverError, KindsMapToWireCodesAndExitCodes) {
  struct Row {
    ErrorCode kind;
    wire::ErrorCode wire;
    int exit;
  };
  const Row rows[] = {
      {ErrorCode::kWrongCurve, wire::ErrorCode::WRONG_CURVE, 2},
      {ErrorCode::kWitnessLength, wire::ErrorCode::WITNESS_LENGTH, 2},
      {ErrorCode::kBadWitness, wire::ErrorCode::BAD_WITNESS, 2},
      {ErrorCode::kUnsatisfied, wire::ErrorCode::UNSATISFIED, 2},
      {ErrorCode::kUnknownCircuit, wire::ErrorCode::UNKNOWN_CIRCUIT, 2},
      {ErrorCode::kBadCircuit, wire::ErrorCode::ARTIFACT_CHECKSUM, 2},
      {ErrorCode::kWitnessUnavailable, wire::ErrorCode::WITNESS_UNAVAILABLE, 3},
      {ErrorCode::kNoDevice, wire::ErrorCode::DEVICE_FAULT, 2},
      {ErrorCode::kOutOfMemory, wire::ErrorCode::OUT_OF_MEMORY, 3},
      {ErrorCode::kDeviceFault, wire::ErrorCode::DEVICE_FAULT, 3},
      {ErrorCode::kCancelled, wire::ErrorCode::CANCELLED, 3},
      {ErrorCode::kInternal, wire::ErrorCode::INTERNAL, 3},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(error_name(row.kind)));
    EXPECT_EQ(to_wire(row.kind), row.wire);
    EXPECT_EQ(exit_code(row.kind), row.exit);
  }
}

}  // namespace
}  // namespace zkfarm::prover
