// job_result_test.cc -- the job result's JSON form: what the coordinator
// writes, the CLI reads back unchanged; malformed results name the field.
#include "cluster/job_result.h"

#include <gtest/gtest.h>


namespace zkfarm {
namespace {

JobResult sample() {
  JobResult r;
  r.id = "porep-42";
  r.circuit = std::string(64, 'a');
  r.curve = "bls12381";
  r.state = "done";
  r.seconds = 12.5;
  for (std::uint32_t i = 0; i < 2; ++i) {
    PartitionResult p;
    p.partition = i;
    p.proof = {{"protocol", "groth16"}, {"curve", "bls12381"}};
    p.public_signals = nlohmann::json::array({"7", "9"});
    p.worker = "host-a/gpu" + std::to_string(i);
    p.device_uuid = "GPU-" + std::to_string(i);
    p.timings.msm = 0.25 + i;
    p.timings.total = 1.5;
    p.coordinator = {0.01, 1.6, 0.002};
    p.compressed_hex = std::string(384, i ? 'b' : 'a');
    r.partitions.push_back(p);
  }
  r.proofs_hex = std::string(384, 'a') + std::string(384, 'b');
  return r;
}

TEST(JobResultTest, RoundTripsThroughJson) {
  const JobResult r = sample();
  const std::string text = to_json(r).dump();
  const JobResult back = parse_job_result(text);
  EXPECT_EQ(to_json(back).dump(), text);
  EXPECT_EQ(back.partitions[1].worker, "host-a/gpu1");
  EXPECT_DOUBLE_EQ(back.partitions[1].timings.msm, 1.25);
  EXPECT_DOUBLE_EQ(back.partitions[0].coordinator.worker, 1.6);
  EXPECT_EQ(*back.proofs_hex, r.proofs_hex);
}

TEST(JobResultTest, TheWireNamesAreTheDocumentedOnes) {
  const nlohmann::json j = to_json(sample());
  for (const char* key : {"id", "circuit", "curve", "state", "seconds", "partitions", "proofs_hex"})
    EXPECT_TRUE(j.contains(key)) << key;
  const nlohmann::json& p = j["partitions"][0];
  for (const char* key : {"partition", "proof", "public", "worker", "device_uuid", "timings", "coordinator",
                          "compressed_hex"})
    EXPECT_TRUE(p.contains(key)) << key;
  for (const char* key : {"load_circuit", "fetch_witness", "parse_witness", "witness_check", "spmv", "ntt", "msm",
                          "prove", "total"})
    EXPECT_TRUE(p["timings"].contains(key)) << key;
  for (const char* key : {"wait_s", "worker_s", "accept_s"}) EXPECT_TRUE(p["coordinator"].contains(key)) << key;
}

TEST(JobResultTest, Bn254ResultsHaveNoCompressedProofs) {
  JobResult r = sample();
  r.proofs_hex.reset();
  for (auto& p : r.partitions) p.compressed_hex.clear();
  const nlohmann::json j = to_json(r);
  EXPECT_FALSE(j.contains("proofs_hex"));
  EXPECT_FALSE(j["partitions"][0].contains("compressed_hex"));
  EXPECT_FALSE(parse_job_result(j.dump()).proofs_hex);
}

TEST(JobResultTest, MalformedResultsNameTheField) {
  EXPECT_THROW(parse_job_result("not json"), ResultFormatError);
  nlohmann::json j = to_json(sample());
  j["partitions"][1].erase("proof");
  try {
    parse_job_result(j.dump());
    FAIL() << "accepted a partition without a proof";
  } catch (const ResultFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("\"proof\""), std::string::npos) << e.what();
  }
  j = to_json(sample());
  j["seconds"] = "soon";
  EXPECT_THROW(parse_job_result(j.dump()), ResultFormatError);
}

}  // namespace
}  // namespace zkfarm
