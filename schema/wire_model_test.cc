// wire_model_test.cc -- the ErrorCode table (names, exit codes, bad-input
// claims, retries) and the model <-> wire mapping: every wire code decodes
// to the model code of its name, every witness kind and a whole task survive
// an encode/decode through real Cap'n Proto bytes.
#include "schema/wire_model.h"

#include <capnp/schema.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "schema/error_code.h"
#include "schema/messages.h"

namespace zkfarm {
namespace {

constexpr auto kCodeCount = static_cast<std::size_t>(ErrorCode::kUnknown) + 1;

ErrorCode code_at(std::size_t i) { return static_cast<ErrorCode>(i); }

TEST(ErrorCodeTable, NamesAreUniqueAndParseBack) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < kCodeCount; ++i) {
    const std::string name(error_name(code_at(i)));
    EXPECT_FALSE(name.empty());
    EXPECT_TRUE(names.insert(name).second) << "two codes are named " << name;
    EXPECT_EQ(parse_error_code(name), code_at(i)) << name;
  }
  EXPECT_EQ(parse_error_code("noSuchCode"), std::nullopt);
  EXPECT_EQ(parse_error_code(""), std::nullopt);
}

// The names are what users see (job:<id> "error_code", events, the `code`
// metric label, `zkfarm status`): they never change.
TEST(ErrorCodeTable, NamesAreTheOnesUsersSee) {
  const char* expected[] = {"invalidJob",       "duplicateId",      "unknownCircuit",  "badWitness",
                            "witnessLength",    "unsatisfied",      "wrongCurve",      "badInput",
                            "witnessChecksum",  "badCircuit",       "noDevice",        "witnessUnavailable",
                            "artifactChecksum", "outOfMemory",      "deviceFault",     "internal",
                            "invalidProof",     "taskTimeout",      "cancelled",       "deadlineExceeded",
                            "setAside",         "quotaExceeded",    "protocolVersion", "malformedMessage",
                            "unknownSession",   "shuttingDown",     "workerIdTaken",   "unknown"};
  ASSERT_EQ(std::size(expected), kCodeCount);
  for (std::size_t i = 0; i < kCodeCount; ++i) EXPECT_EQ(error_name(code_at(i)), expected[i]);
}

TEST(ErrorCodeTable, BadInputClaimsAndRetries) {
  const std::set<ErrorCode> claims = {ErrorCode::kBadWitness,  ErrorCode::kWitnessLength,
                                      ErrorCode::kUnsatisfied, ErrorCode::kWrongCurve,
                                      ErrorCode::kBadInput,    ErrorCode::kWitnessChecksum};
  for (std::size_t i = 0; i < kCodeCount; ++i) {
    const ErrorCode code = code_at(i);
    EXPECT_EQ(claims_bad_input(code), claims.count(code) == 1) << error_name(code);
    if (claims_bad_input(code)) {
      EXPECT_FALSE(retried_elsewhere(code)) << error_name(code);
    }
  }
  for (ErrorCode code : {ErrorCode::kWitnessUnavailable, ErrorCode::kArtifactChecksum, ErrorCode::kBadCircuit,
                         ErrorCode::kOutOfMemory, ErrorCode::kDeviceFault, ErrorCode::kInternal,
                         ErrorCode::kInvalidProof, ErrorCode::kTaskTimeout, ErrorCode::kUnknownCircuit})
    EXPECT_TRUE(retried_elsewhere(code)) << error_name(code);
  for (ErrorCode code : {ErrorCode::kCancelled, ErrorCode::kDeadlineExceeded, ErrorCode::kInvalidJob,
                         ErrorCode::kQuotaExceeded})
    EXPECT_FALSE(retried_elsewhere(code)) << error_name(code);
}

TEST(ErrorCodeTable, ProveExitCodes) {
  for (ErrorCode code : {ErrorCode::kWrongCurve, ErrorCode::kWitnessLength, ErrorCode::kBadWitness,
                         ErrorCode::kUnsatisfied, ErrorCode::kUnknownCircuit, ErrorCode::kBadCircuit,
                         ErrorCode::kNoDevice, ErrorCode::kQuotaExceeded})
    EXPECT_EQ(exit_code(code), 2) << error_name(code);
  for (ErrorCode code : {ErrorCode::kWitnessUnavailable, ErrorCode::kOutOfMemory, ErrorCode::kDeviceFault,
                         ErrorCode::kCancelled, ErrorCode::kInternal})
    EXPECT_EQ(exit_code(code), 3) << error_name(code);
}

TEST(WireErrorCodes, EveryWireCodeHasTheModelCodeOfItsName) {
  for (capnp::EnumSchema::Enumerant e : capnp::Schema::from<wire::ErrorCode>().getEnumerants()) {
    const auto wire_code = static_cast<wire::ErrorCode>(e.getOrdinal());
    const std::string name = e.getProto().getName().cStr();
    EXPECT_EQ(error_name(error_from_wire(wire_code)), name);
    EXPECT_EQ(to_wire(error_from_wire(wire_code)), wire_code) << name;
    EXPECT_EQ(wire::error_code_name(wire_code), name);
  }
  EXPECT_EQ(error_from_wire(static_cast<wire::ErrorCode>(999)), ErrorCode::kUnknown);
}

TEST(WireErrorCodes, ProverCodesTravelAsTheWorkersFault) {
  EXPECT_EQ(to_wire(ErrorCode::kBadCircuit), wire::ErrorCode::ARTIFACT_CHECKSUM);
  EXPECT_EQ(to_wire(ErrorCode::kNoDevice), wire::ErrorCode::DEVICE_FAULT);
  EXPECT_EQ(error_from_wire(wire::ErrorCode::ARTIFACT_CHECKSUM), ErrorCode::kArtifactChecksum);
  EXPECT_EQ(wire_name(ErrorCode::kBadCircuit), "artifactChecksum");
  EXPECT_EQ(to_wire(ErrorCode::kWitnessChecksum), wire::ErrorCode::WITNESS_CHECKSUM);
  EXPECT_EQ(to_wire(ErrorCode::kBadInput), wire::ErrorCode::BAD_INPUT);
  // The coordinator's own codes never travel; sent anyway they are internal.
  EXPECT_EQ(to_wire(ErrorCode::kInvalidJob), wire::ErrorCode::INTERNAL);
  EXPECT_EQ(to_wire(ErrorCode::kQuotaExceeded), wire::ErrorCode::INTERNAL);
}

// Encodes `task`, decodes the frame as a daemon would and reads it back.
TaskSpec round_trip(const TaskSpec& task) {
  const std::string bytes = encode_task(task);
  std::string error;
  auto decoded =
      wire::decode(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()),
                   &error);
  EXPECT_TRUE(decoded) << error;
  EXPECT_EQ(decoded->which(), wire::Envelope::Body::TASK);
  auto back = task_from_wire(decoded->envelope().getBody().getTask());
  EXPECT_TRUE(back);
  return *back;
}

TEST(WireTasks, EveryWitnessKindRoundTrips) {
  std::vector<WitnessRef> refs(5);
  refs[0].kind = WitnessRef::Kind::kFile;
  refs[0].location = "/shared/p 0.wtns";
  refs[0].sha256 = std::string(64, 'c');
  refs[0].size = 1234;
  refs[1].kind = WitnessRef::Kind::kRedis;
  refs[1].location = "zkfarm:wtns:p1";
  refs[2].kind = WitnessRef::Kind::kInline;
  refs[2].inline_bytes = {'w', 't', 'n', 's', 0, 1, 2};
  refs[3].kind = WitnessRef::Kind::kInput;
  refs[3].input_json = R"({"a":"3"})";
  refs[4].kind = WitnessRef::Kind::kHttp;
  refs[4].location = "https://bucket.example/p.wtns?X-Amz-Signature=s";
  for (const WitnessRef& ref : refs) {
    TaskSpec task;
    task.task_id = 77;
    task.job_id = "job-1";
    task.partition = 3;
    task.attempt = 2;
    task.circuit_id = std::string(64, 'a');
    task.curve = CurveId::kBls12381;
    task.witness = ref;
    task.deadline_unix = 1764500000.5;
    task.witgen_sha256 = std::string(64, 'd');
    task.witgen_dat_sha256 = std::string(64, 'e');
    task.tenant = "acme";
    const TaskSpec back = round_trip(task);
    EXPECT_EQ(back.task_id, 77u);
    EXPECT_EQ(back.job_id, "job-1");
    EXPECT_EQ(back.partition, 3u);
    EXPECT_EQ(back.attempt, 2u);
    EXPECT_EQ(back.circuit_id, task.circuit_id);
    EXPECT_EQ(back.curve, CurveId::kBls12381);
    EXPECT_EQ(back.deadline_unix, 1764500000.5);
    EXPECT_EQ(back.tenant, "acme");
    EXPECT_EQ(back.witness.kind, ref.kind);
    EXPECT_EQ(back.witness.location, ref.location);
    EXPECT_EQ(back.witness.inline_bytes, ref.inline_bytes);
    EXPECT_EQ(back.witness.input_json, ref.input_json);
    EXPECT_EQ(back.witness.sha256, ref.sha256);
    EXPECT_EQ(back.witness.size, ref.size);
    // Only input partitions carry the generator's hashes.
    const bool input = ref.kind == WitnessRef::Kind::kInput;
    EXPECT_EQ(back.witgen_sha256, input ? task.witgen_sha256 : "");
    EXPECT_EQ(back.witgen_dat_sha256, input ? task.witgen_dat_sha256 : "");
  }
}

TEST(WireTasks, NoDeadlineStaysNone) {
  TaskSpec task;
  task.job_id = "j";
  task.curve = CurveId::kBn254;
  task.witness.kind = WitnessRef::Kind::kRedis;
  task.witness.location = "k";
  EXPECT_EQ(round_trip(task).deadline_unix, std::nullopt);
  EXPECT_EQ(round_trip(task).tenant, "");  // the default tenant's job
}

}  // namespace
}  // namespace zkfarm
