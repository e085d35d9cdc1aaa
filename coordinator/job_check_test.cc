// job_check_test.cc -- check_job without Redis: a good job's public inputs,
// and each typed failure with the message users see, in the order intake
// applies them (witnesses after a failing partition are not read).
#include "coordinator/job_check.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "cluster/witness_access.h"
#include "witgen/witness_generator.h"

namespace zkfarm {
namespace {

constexpr std::uint32_t kNumVars = 7, kNumPublic = 3;

CircuitInfo bn254_circuit() {
  CircuitInfo c;
  c.id = std::string(64, 'a');
  c.curve = CurveId::kBn254;
  c.num_vars = kNumVars;
  c.num_public = kNumPublic;
  return c;
}

// The summary of a real .wtns image: witness[i] = i * 10 + seed (witness[0] = 1).
template <class Fr = Bn254Fr>
WtnsSummary summary_of(std::uint32_t num_values, std::uint64_t seed, std::uint32_t num_public = kNumPublic) {
  std::vector<Fr> values(num_values);
  values[0] = Fr::one();
  for (std::uint32_t i = 1; i < num_values; ++i) values[i] = Fr::from_u64(i * 10 + seed);
  const std::vector<std::uint8_t> bytes = serialize_wtns<Fr>(values);
  return *read_wtns_summary(bytes, bytes.size(), num_public, "w.wtns");
}

WitnessRef file_ref(const std::string& path) {
  WitnessRef ref;
  ref.kind = WitnessRef::Kind::kFile;
  ref.location = path;
  return ref;
}

JobSpec job_of(std::vector<WitnessRef> partitions) {
  JobSpec spec;
  spec.id = "j1";
  spec.circuit = std::string(64, 'a');
  spec.partitions = std::move(partitions);
  return spec;
}

// Reads from a table by path, recording each read.
struct Witnesses {
  std::map<std::string, WitnessRead> by_path;
  std::vector<std::string> reads;
  WitnessReader reader() {
    return [this](std::size_t, const WitnessRef& ref, std::uint32_t num_public) -> WitnessRead {
      EXPECT_EQ(num_public, kNumPublic);
      reads.push_back(ref.location);
      return by_path.at(ref.location);
    };
  }
};

JobCheckFailure failure_of(const std::variant<PreparedJob, JobCheckFailure>& result) {
  EXPECT_TRUE(std::holds_alternative<JobCheckFailure>(result));
  return std::holds_alternative<JobCheckFailure>(result) ? std::get<JobCheckFailure>(result) : JobCheckFailure{};
}

TEST(CheckJob, GoodJobCarriesEveryPartitionsPublicInputs) {
  Witnesses w;
  w.by_path["/w/0.wtns"] = summary_of(kNumVars, 1);
  w.by_path["/w/1.wtns"] = summary_of(kNumVars, 2);
  const auto result = check_job(job_of({file_ref("/w/0.wtns"), file_ref("/w/1.wtns")}), bn254_circuit(), 1000,
                                w.reader());
  ASSERT_TRUE(std::holds_alternative<PreparedJob>(result)) << failure_of(result).message;
  const PreparedJob& job = std::get<PreparedJob>(result);
  EXPECT_EQ(job.spec.id, "j1");
  EXPECT_EQ(job.circuit.num_vars, kNumVars);
  EXPECT_EQ(job.public_bytes, kNumPublic * 32u);
  ASSERT_EQ(job.public_inputs.size(), 2 * kNumPublic * 32u);
  EXPECT_EQ(job.partition_public_inputs(0), std::get<WtnsSummary>(w.by_path["/w/0.wtns"]).public_inputs);
  EXPECT_EQ(job.partition_public_inputs(1), std::get<WtnsSummary>(w.by_path["/w/1.wtns"]).public_inputs);
  // Public input 1 of partition 1 is witness[1] = 12, little-endian.
  EXPECT_EQ(job.public_inputs[kNumPublic * 32], 12);
  EXPECT_TRUE(job.public_from_input.empty());
  EXPECT_EQ(w.reads, (std::vector<std::string>{"/w/0.wtns", "/w/1.wtns"}));
}

TEST(CheckJob, UnknownCircuitAndPassedDeadlineReadNoWitness) {
  Witnesses w;
  JobSpec spec = job_of({file_ref("/w/0.wtns")});
  JobCheckFailure f = failure_of(check_job(spec, std::nullopt, 1000, w.reader()));
  EXPECT_EQ(f.code, ErrorCode::kUnknownCircuit);
  EXPECT_EQ(f.message, "unknown circuit " + spec.circuit + ": register its zkey with `zkfarm circuit add` first");
  spec.deadline_unix = 999.5;
  f = failure_of(check_job(spec, bn254_circuit(), 1000, w.reader()));
  EXPECT_EQ(f.code, ErrorCode::kDeadlineExceeded);
  EXPECT_EQ(f.message, "deadline passed before the job started");
  EXPECT_TRUE(w.reads.empty());
  spec.deadline_unix = 1000.5;
  w.by_path["/w/0.wtns"] = summary_of(kNumVars, 1);
  EXPECT_TRUE(std::holds_alternative<PreparedJob>(check_job(spec, bn254_circuit(), 1000, w.reader())));
}

WitnessRef input_ref(const std::string& json);

TEST(CheckJob, ReaderIsGivenEachWitnessPartitionsIndex) {
  std::vector<std::size_t> asked;
  Witnesses w;
  w.by_path["/w/0.wtns"] = summary_of(kNumVars, 1);
  const WitnessReader reader = [&](std::size_t partition, const WitnessRef& ref, std::uint32_t n) {
    asked.push_back(partition);
    return w.reader()(partition, ref, n);
  };
  EXPECT_TRUE(std::holds_alternative<PreparedJob>(
      check_job(job_of({file_ref("/w/0.wtns"), file_ref("/w/0.wtns")}), bn254_circuit(), 0, reader)));
  EXPECT_EQ(asked, (std::vector<std::size_t>{0, 1}));
}

TEST(CheckJob, BeforeReadsChecksAllButTheWitnesses) {
  JobSpec spec = job_of({file_ref("/w/unread.wtns")});
  EXPECT_EQ(check_job_before_reads(spec, bn254_circuit(), 1000), std::nullopt);
  auto f = check_job_before_reads(spec, std::nullopt, 1000);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->code, ErrorCode::kUnknownCircuit);
  spec.deadline_unix = 999.5;
  f = check_job_before_reads(spec, bn254_circuit(), 1000);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->code, ErrorCode::kDeadlineExceeded);
  // An input partition after a witness is checked without reading the witness.
  JobSpec mixed = job_of({file_ref("/w/unread.wtns"), input_ref(R"({"a":"3"})")});
  f = check_job_before_reads(mixed, bn254_circuit(), 0);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->code, ErrorCode::kInvalidJob);
  EXPECT_NE(f->message.find("partition 1 carries an input"), std::string::npos) << f->message;
}

TEST(CheckJob, WitnessMismatchesAreTypedAndNamePartitionAndWitness) {
  Witnesses w;
  w.by_path["/w/good.wtns"] = summary_of(kNumVars, 1);
  w.by_path["/w/bls.wtns"] = summary_of<Bls12381Fr>(kNumVars, 1);
  w.by_path["/w/short.wtns"] = summary_of(kNumVars - 1, 1);
  w.by_path["/w/few.wtns"] = summary_of(kNumVars, 1, kNumPublic - 1);
  const CircuitInfo circuit = bn254_circuit();
  JobCheckFailure f =
      failure_of(check_job(job_of({file_ref("/w/good.wtns"), file_ref("/w/bls.wtns")}), circuit, 0, w.reader()));
  EXPECT_EQ(f.code, ErrorCode::kWrongCurve);
  EXPECT_EQ(f.message, "partition 1 (file:///w/bls.wtns): witness is for BLS12-381 but circuit " + circuit.id +
                           " is BN254");
  f = failure_of(check_job(job_of({file_ref("/w/short.wtns")}), circuit, 0, w.reader()));
  EXPECT_EQ(f.code, ErrorCode::kWitnessLength);
  EXPECT_EQ(f.message, "partition 0 (file:///w/short.wtns): witness has 6 values but the circuit has 7 signals");
  f = failure_of(check_job(job_of({file_ref("/w/few.wtns")}), circuit, 0, w.reader()));
  EXPECT_EQ(f.code, ErrorCode::kBadWitness);
  EXPECT_EQ(f.message, "partition 0 (file:///w/few.wtns): public inputs take 64 bytes, expected 96");
}

TEST(CheckJob, ReadFailuresKeepTheirCodeAndStopAtTheFirst) {
  Witnesses w;
  w.by_path["/w/good.wtns"] = summary_of(kNumVars, 1);
  w.by_path["/w/gone.wtns"] = JobCheckFailure{ErrorCode::kWitnessUnavailable, "witness file:///w/gone.wtns: gone"};
  w.by_path["/w/sized.wtns"] = JobCheckFailure{ErrorCode::kWitnessChecksum, "witness file:///w/sized.wtns: 9 bytes"};
  w.by_path["/w/junk.wtns"] = JobCheckFailure{ErrorCode::kBadWitness, "/w/junk.wtns: wrong magic"};
  const CircuitInfo circuit = bn254_circuit();
  JobCheckFailure f = failure_of(check_job(
      job_of({file_ref("/w/good.wtns"), file_ref("/w/gone.wtns"), file_ref("/w/junk.wtns")}), circuit, 0, w.reader()));
  EXPECT_EQ(f.code, ErrorCode::kWitnessUnavailable);
  EXPECT_EQ(f.message, "partition 1: witness file:///w/gone.wtns: gone");
  EXPECT_EQ(w.reads, (std::vector<std::string>{"/w/good.wtns", "/w/gone.wtns"}));
  f = failure_of(check_job(job_of({file_ref("/w/sized.wtns")}), circuit, 0, w.reader()));
  EXPECT_EQ(f.code, ErrorCode::kWitnessChecksum);
  EXPECT_EQ(f.message, "partition 0: witness file:///w/sized.wtns: 9 bytes");
  f = failure_of(check_job(job_of({file_ref("/w/junk.wtns")}), circuit, 0, w.reader()));
  EXPECT_EQ(f.code, ErrorCode::kBadWitness);
  EXPECT_EQ(f.message, "partition 0 (file:///w/junk.wtns): /w/junk.wtns: wrong magic");
}

WitnessRef input_ref(const std::string& json) {
  WitnessRef ref;
  ref.kind = WitnessRef::Kind::kInput;
  ref.input_json = json;
  return ref;
}

TEST(CheckJob, InputPartitions) {
  Witnesses w;
  CircuitInfo circuit = bn254_circuit();
  JobCheckFailure f = failure_of(check_job(job_of({input_ref(R"({"a":"3"})")}), circuit, 0, w.reader()));
  EXPECT_EQ(f.code, ErrorCode::kInvalidJob);
  EXPECT_NE(f.message.find("partition 0 carries an input but circuit " + circuit.id + " has no witness generator"),
            std::string::npos)
      << f.message;
  circuit.witgen_path = circuit.id + "/witgen/witness-generator";
  // Public signals: one output, then inputs b and k (b[1]).
  const std::string hash_b = [] {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(witgen::fnv1a64("b")));
    return std::string(hex);
  }();
  circuit.witgen_public_map = R"([null,[")" + hash_b + R"(",0],[")" + hash_b + R"(",1]])";
  const auto result = check_job(job_of({input_ref(R"({"a":"3","b":["11","5"]})")}), circuit, 0, w.reader());
  ASSERT_TRUE(std::holds_alternative<PreparedJob>(result)) << failure_of(result).message;
  const PreparedJob& job = std::get<PreparedJob>(result);
  EXPECT_EQ(job.public_from_input, (std::vector<bool>{false, true, true}));
  ASSERT_EQ(job.public_inputs.size(), 96u);
  EXPECT_EQ(job.public_inputs[0], 0);  // the output: the worker reports it
  EXPECT_EQ(job.public_inputs[32], 11);
  EXPECT_EQ(job.public_inputs[64], 5);
  EXPECT_TRUE(w.reads.empty());
  // Values outside the field, a missing key: the input's fault.
  f = failure_of(check_job(job_of({input_ref(R"({"a":"-3","b":["1","2"]})")}), circuit, 0, w.reader()));
  EXPECT_EQ(f.code, ErrorCode::kBadInput);
  EXPECT_EQ(f.message.rfind("partition 0: input ", 0), 0u) << f.message;
  f = failure_of(check_job(job_of({input_ref(R"({"a":"3"})")}), circuit, 0, w.reader()));
  EXPECT_EQ(f.code, ErrorCode::kBadInput);
  // A damaged record.
  circuit.witgen_public_map = "[null]";
  f = failure_of(check_job(job_of({input_ref(R"({"a":"3"})")}), circuit, 0, w.reader()));
  EXPECT_EQ(f.code, ErrorCode::kUnknownCircuit);
  EXPECT_EQ(f.message, "circuit " + circuit.id +
                           ": record damaged: its public input map has 1 entries for 3 public signals");
  circuit.witgen_public_map = "{";
  f = failure_of(check_job(job_of({input_ref(R"({"a":"3"})")}), circuit, 0, w.reader()));
  EXPECT_EQ(f.code, ErrorCode::kUnknownCircuit);
  EXPECT_EQ(f.message.rfind("circuit " + circuit.id + ": record damaged: ", 0), 0u) << f.message;
}

}  // namespace
}  // namespace zkfarm
