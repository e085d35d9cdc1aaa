// job_test.cc -- job JSON parsing and validation.
#include "schema/job.h"

#include <gtest/gtest.h>

namespace zkfarm {
namespace {

const std::string kCircuit(64, 'a');

std::string job(const std::string& fields) {
  return "{\"id\":\"j1\",\"circuit\":\"" + kCircuit + "\"" + (fields.empty() ? "" : "," + fields) + "}";
}

void expect_error(const std::string& json, const std::string& fragment) {
  try {
    parse_job(json);
    FAIL() << "no error for " << json;
  } catch (const JobError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Job, ParsesAllWitnessKinds) {
  JobSpec spec = parse_job(job(
      R"("priority":"critical","deadline":1800000000.5,"partitions":[{"witness":"file:///data/p%200.wtns"},)"
      R"({"witness":"redis://zk:w1"},{"witness_base64":"d3RucwI="},"file://localhost/x.wtns"],"metadata":{"a":1})"));
  EXPECT_EQ(spec.id, "j1");
  EXPECT_EQ(spec.priority, Priority::kCritical);
  ASSERT_TRUE(spec.deadline_unix);
  ASSERT_EQ(spec.partitions.size(), 4u);
  EXPECT_EQ(spec.partitions[0].kind, WitnessRef::Kind::kFile);
  EXPECT_EQ(spec.partitions[0].location, "/data/p 0.wtns");
  EXPECT_EQ(spec.partitions[1].kind, WitnessRef::Kind::kRedis);
  EXPECT_EQ(spec.partitions[1].location, "zk:w1");
  EXPECT_EQ(spec.partitions[2].kind, WitnessRef::Kind::kInline);
  EXPECT_EQ(std::string(spec.partitions[2].inline_bytes.begin(), spec.partitions[2].inline_bytes.end()),
            std::string("wtns\x02", 5));
  EXPECT_EQ(spec.partitions[3].location, "/x.wtns");
  // Round trip through the canonical JSON.
  JobSpec again = parse_job(spec.to_json());
  EXPECT_EQ(again.to_json(), spec.to_json());
  EXPECT_EQ(again.partitions[0].location, "/data/p 0.wtns");
}

TEST(Job, MaxAttemptsIsAnOptionalPositiveInteger) {
  EXPECT_EQ(parse_job(job(R"("partitions":["redis://k"])")).max_attempts, std::nullopt);
  const JobSpec spec = parse_job(job(R"("max_attempts":2,"partitions":["redis://k"])"));
  EXPECT_EQ(spec.max_attempts, 2u);
  EXPECT_EQ(parse_job(spec.to_json()).max_attempts, 2u);  // kept in the canonical JSON
  EXPECT_EQ(parse_job(job(R"("max_attempts":4294967295,"partitions":["redis://k"])")).max_attempts, 4294967295u);
  for (const char* bad : {"0", "-1", "2.5", "2.0", "\"2\"", "null", "true", "4294967296"})
    expect_error(job(std::string("\"max_attempts\":") + bad + R"(,"partitions":["redis://k"])"),
                 std::string("max_attempts: expected a positive integer (failed attempts of a partition before the job "
                             "fails), got ") + bad);
}

TEST(Job, HttpWitnessesKeepTheirUrlAndChecks) {
  const std::string sha(64, 'b');
  JobSpec spec = parse_job(job(R"("partitions":[{"witness":"https://bucket.example/p0.wtns?X-Sig=secret","sha256":")" +
                               sha + R"(","size":1234},"http://h:8080/p1.wtns"])"));
  ASSERT_EQ(spec.partitions.size(), 2u);
  EXPECT_EQ(spec.partitions[0].kind, WitnessRef::Kind::kHttp);
  EXPECT_EQ(spec.partitions[0].location, "https://bucket.example/p0.wtns?X-Sig=secret");
  EXPECT_EQ(spec.partitions[0].sha256, sha);
  EXPECT_EQ(spec.partitions[0].size, 1234u);
  EXPECT_EQ(spec.partitions[0].describe(), "https://bucket.example/p0.wtns?<redacted>");
  EXPECT_EQ(spec.partitions[1].kind, WitnessRef::Kind::kHttp);
  EXPECT_EQ(spec.partitions[1].size, 0u);
  JobSpec again = parse_job(spec.to_json());
  EXPECT_EQ(again.to_json(), spec.to_json());
  EXPECT_EQ(again.partitions[0].sha256, sha);
  EXPECT_EQ(again.partitions[0].size, 1234u);
}

TEST(Job, ClearErrors) {
  expect_error("{not json", "not valid JSON");
  expect_error("[1,2]", "must be an object");
  expect_error(R"({"circuit":"x","partitions":[]})", "id: missing");
  expect_error(R"({"id":"bad id!","circuit":"x"})", "not a valid job id");
  expect_error(R"({"id":"j","partitions":["file:///a"]})", "circuit: missing");
  expect_error(R"({"id":"j","circuit":"abc","partitions":["file:///a"]})", "64 lowercase hex");
  expect_error(job(""), "partitions: missing");
  expect_error(job(R"("partitions":[])"), "partitions: empty");
  expect_error(job(R"("partitions":[{"witness":"ftp://x/y"}])"), "partitions[0].witness: unsupported scheme 'ftp'");
  expect_error(job(R"("partitions":[{"witness":"https:///y?sig=secret"}])"), "has no host");
  expect_error(job(R"("partitions":[{"witness":"https://h/y","sha256":"ABC"}])"), "partitions[0].sha256");
  expect_error(job(R"("partitions":[{"witness":"https://h/y","size":-1}])"), "partitions[0].size");
  expect_error(job(R"("partitions":[{"witness":"https://h/y","sizes":1}])"), "unknown field 'sizes'");
  expect_error(job(R"("partitions":[{"witness":"file://host/y"}])"), "host 'host' is not supported");
  expect_error(job(R"("partitions":[{}])"), "exactly one of witness");
  expect_error(job(R"("partitions":[{"witness_base64":"!!"}])"), "invalid character");
  expect_error(job(R"("partitions":[{"witness":"redis://"}])"), "names no key");
  expect_error(job(R"("priority":"urgent","partitions":["redis://k"])"), "not one of critical, high, normal, low");
  expect_error(job(R"("deadline":"tomorrow","partitions":["redis://k"])"), "deadline: expected unix seconds");
  expect_error(job(R"("partitons":["redis://k"])"), "unknown field 'partitons'");
  expect_error(job(R"("partitions":[7])"), "partitions[0]: expected an object or a witness URL");
}

TEST(Job, InputPartitions) {
  JobSpec spec = parse_job(job(R"("partitions":[{"input":{"a":"3","b":["4","5"]}},{"witness":"redis://zk:w"}])"));
  ASSERT_EQ(spec.partitions.size(), 2u);
  EXPECT_EQ(spec.partitions[0].kind, WitnessRef::Kind::kInput);
  EXPECT_EQ(spec.partitions[0].input_json, R"({"a":"3","b":["4","5"]})");
  EXPECT_EQ(spec.partitions[0].describe(), "input (23 bytes)");
  EXPECT_EQ(parse_job(spec.to_json()).to_json(), spec.to_json());
  expect_error(job(R"("partitions":[{"input":[1,2]}])"), "partitions[0].input: expected an object of input signals");
  expect_error(job(R"("partitions":[{"input":{},"witness":"redis://k"}])"), "exactly one of witness");
  expect_error(job(R"("partitions":[{"inputs":{}}])"), "unknown field 'inputs' (expected witness, witness_base64 or input, and optionally sha256 and size)");
  const std::string big = R"({"input":{"pad":")" + std::string(kMaxInputBytes, 'x') + R"("}})";
  expect_error(job(R"("partitions":[)" + big + "]"), "partitions[0].input: 1048586 bytes serialized, the limit is 1048576");
}

// A number beyond a double made nlohmann throw out_of_range, not a
// parse_error: it escaped parse_job as a foreign exception (found by
// schema/job_fuzz; the input is in its corpus).
TEST(Job, NumberOverflowIsAJobError) {
  expect_error(job(R"("deadline":1e400,"partitions":["redis://k"])"), "not valid JSON");
  expect_error(job(R"("partitions":["redis://k"],"metadata":{"x":[-2e308]})"), "number overflow");
  EXPECT_EQ(extract_job_id(R"({"id":"abc","deadline":1e400})"), std::nullopt);
}

TEST(Job, FilePathThatIsNotUtf8RoundTrips) {
  // %ba decodes to a byte that is not UTF-8; to_json() threw on it (job_fuzz).
  JobSpec spec = parse_job(job(R"("partitions":["file:///w/a%10b%ba%C3%A9.wtns"])"));
  ASSERT_EQ(spec.partitions.size(), 1u);
  EXPECT_EQ(spec.partitions[0].location, "/w/a\x10" "b\xba\xc3\xa9.wtns");
  JobSpec again = parse_job(spec.to_json());
  EXPECT_EQ(again.partitions[0].location, spec.partitions[0].location);
}

TEST(Job, ExtractId) {
  EXPECT_EQ(extract_job_id(R"({"id":"abc","x":)"), std::nullopt);
  EXPECT_EQ(extract_job_id(R"({"id":"abc","circuit":5})"), "abc");
  EXPECT_EQ(extract_job_id(R"({"id":"a b"})"), std::nullopt);
  EXPECT_EQ(extract_job_id(R"({"metadata":{"id":"inner"}})"), std::nullopt);
  EXPECT_EQ(extract_job_id(R"({"metadata":{"id":"inner"},"id":"outer"})"), "outer");
  EXPECT_EQ(extract_job_id(R"({"id":"a:b"})"), std::nullopt);
}

std::string nested(std::size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }

TEST(Job, DeepNestingIsAnErrorNotACrash) {
  // 100,000 nested arrays (200 KB): building and serializing that document
  // recursed once per level and overflowed the stack.
  const std::string deep = job(R"("partitions":["redis://k"],"metadata":)" + nested(100000));
  expect_error(deep, "metadata: arrays/objects nested more than 32 levels deep");
  EXPECT_EQ(extract_job_id(deep), "j1");
  const std::string deep_first = "{\"metadata\":" + nested(100000) + ",\"id\":\"late\"}";
  EXPECT_EQ(extract_job_id(deep_first), "late");
  expect_error(nested(100000), "job JSON: arrays/objects nested more than 32");
  // The limit counts the job object: metadata may nest 31 levels.
  EXPECT_NO_THROW(parse_job(job(R"("partitions":["redis://k"],"metadata":)" + nested(kMaxJobJsonDepth - 1))));
  expect_error(job(R"("partitions":["redis://k"],"metadata":)" + nested(kMaxJobJsonDepth)), "nested more than");
}

TEST(Job, SizeLimits) {
  const std::string big_metadata = "\"" + std::string(kMaxMetadataBytes, 'x') + "\"";
  expect_error(job(R"("partitions":["redis://k"],"metadata":)" + big_metadata), "metadata: 65538 bytes");
  expect_error(std::string(kMaxJobJsonBytes + 1, ' '), "the limit is 8388608");
}

TEST(Job, IdAlphabet) {
  EXPECT_TRUE(is_valid_job_id("porep-42.v1_x"));
  EXPECT_TRUE(is_valid_job_id(std::string(kMaxJobIdLength, 'a')));
  EXPECT_FALSE(is_valid_job_id(std::string(kMaxJobIdLength + 1, 'a')));
  EXPECT_FALSE(is_valid_job_id(""));
  // ':' separates Redis key parts: "coll:events" would name coll's events list.
  EXPECT_FALSE(is_valid_job_id("coll:events"));
  EXPECT_FALSE(is_valid_job_id("a/b"));
  EXPECT_FALSE(is_valid_job_id("a b"));
  expect_error(R"({"id":"coll:events","circuit":"x"})", "'coll:events' is not a valid job id (1..128 characters of A-Z a-z 0-9 . _ -)");
  EXPECT_THROW(check_job_id("r1:result"), JobError);
}

TEST(Job, Base64RoundTrip) {
  for (std::size_t n = 0; n < 40; ++n) {
    std::vector<std::uint8_t> bytes(n);
    for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::uint8_t>(i * 37 + 11);
    EXPECT_EQ(base64_decode(base64_encode(bytes)), bytes) << n;
  }
}

}  // namespace
}  // namespace zkfarm
