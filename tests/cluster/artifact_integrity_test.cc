// artifact_integrity_test.cc -- what a worker runs and loads is what was
// checked (issue 26 item 2), with a real coordinator and worker:
//  * a circuit registered again without --witness-generator keeps its
//    generator (and its registrant);
//  * a circuit's witness generator replaced in the artifact store after a
//    worker has run it once is refused at the next run (its sha256 is not
//    the record's) and never executed;
//  * a cached zkey and PCE replaced in the worker's --cache-dir after a
//    load are hashed again at the next load, found wrong and copied from
//    the store again, so the job proves with the recorded bytes.
// The generator is witgen/testdata/dat_generator with the fixture witness
// as its .dat: input jobs of the fixture circuit that prove.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/digest.h"
#include "base/files.h"
#include "cluster/keys.h"
#include "cluster/redis_client.h"
#include "tests/cluster/farm_fixture.h"
#include "witgen/witness_generator.h"

namespace zkfarm::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using json = nlohmann::json;

// The fixture statement: a = 3, b = 11, k = p - 1 (the witness bn128_mul.wtns).
const char kMinusOne[] = "21888242871839275222246405745257275088548364400416034343698204186575808495616";

class ArtifactIntegrityTest : public FarmTest {
 protected:
  // Installs dat_generator as bn254_'s witness generator, recorded with its
  // sha256s and public input map (outputs: c; public inputs: b, k).
  void install_generator() {
    circuit_ = bn254_;
    circuit_.witgen_path = ArtifactStore::witgen_relative(circuit_.id);
    binary_ = options_.artifacts + "/" + circuit_.witgen_path;
    fs::create_directories(fs::path(binary_).parent_path());
    fs::copy_file(runfile("witgen/dat_generator"), binary_);
    fs::permissions(binary_, fs::perms(0755));
    fs::copy_file(runfile("formats/testdata/bn128_mul.wtns"), binary_ + ".dat");
    circuit_.witgen_sha256 = sha256_file_hex(binary_);
    circuit_.witgen_dat_sha256 = sha256_file_hex(binary_ + ".dat");
    circuit_.witgen_public_map = witgen::public_input_map_json(
        {std::nullopt, witgen::PublicInputRef{witgen::fnv1a64("b"), 0},
         witgen::PublicInputRef{witgen::fnv1a64("k"), 0}});
    RedisClient redis(options_.redis_url);
    store_circuit_info(redis, KeyLayout(options_.prefix), circuit_);
  }
  std::string input_job(const std::string& id) {
    return json{{"id", id},
                {"circuit", circuit_.id},
                {"partitions", json::array({{{"input", {{"a", "3"}, {"b", "11"}, {"k", kMinusOne}}}}})}}
        .dump();
  }
  CircuitInfo circuit_;
  std::string binary_;
};

TEST_F(ArtifactIntegrityTest, AGeneratorReplacedInTheStoreAfterARunIsRefusedNotRun) {
  install_generator();
  // Registered again without a generator: the recorded one stays, and so
  // does its registrant.
  farm::circuit_add(options_, runfile("formats/testdata/bn128_mul.zkey"));
  {
    RedisClient redis(options_.redis_url);
    const std::optional<CircuitInfo> record = load_circuit_info(redis, KeyLayout(options_.prefix), circuit_.id);
    ASSERT_TRUE(record);
    EXPECT_EQ(record->witgen_sha256, circuit_.witgen_sha256);
    EXPECT_EQ(record->witgen_dat_sha256, circuit_.witgen_dat_sha256);
    EXPECT_EQ(record->registered_by, "default");
  }
  start_coordinator();
  start_worker("w1");
  farm::submit(options_, input_job("first"));
  ASSERT_EQ(wait_job("first").state, "done") << logs();
  // The same program with one more byte: it would still write the right
  // witness, so only a check of the bytes run tells the two apart.
  write_file_atomically(binary_, read_file(binary_) + std::string(1, '\0'), 0755);
  farm::submit(options_, input_job("second"));
  const farm::JobStatus second = wait_job("second", 60s);
  EXPECT_NE(second.state, "done") << "the replaced generator ran\n" << logs();
  EXPECT_NE(workers_[0]->log().find("the circuit record says " + circuit_.witgen_sha256 + "; it was not run"),
            std::string::npos)
      << logs();
  // Put back, it runs again.
  write_file_atomically(binary_, read_file(runfile("witgen/dat_generator")), 0755);
  farm::submit(options_, input_job("third"));
  EXPECT_EQ(wait_job("third").state, "done") << logs();
}

TEST_F(ArtifactIntegrityTest, ACachedKeyAndPceReplacedAfterALoadAreCheckedAtTheNextLoad) {
  start_coordinator();
  start_worker("w1", {"--max-resident", "1"});
  const std::string witness = "file://" + witness_file("bn128_mul.wtns");
  farm::submit(options_, job_json("bn254-first", bn254_.id, {witness}));
  ASSERT_EQ(wait_job("bn254-first").state, "done") << logs();
  // Another circuit evicts it, so the next bn254 job loads it again.
  farm::submit(options_, job_json("bls", bls12381_.id, {"file://" + witness_file("bls12381_mul.wtns")}));
  ASSERT_EQ(wait_job("bls").state, "done") << logs();
  const std::string cache = dir_->file("cache-w1");
  const std::string cached_zkey = cache + "/" + bn254_.zkey_path;
  const std::string cached_pce = cache + "/" + bn254_.pce_path;
  ASSERT_TRUE(fs::exists(cached_zkey) && fs::exists(cached_pce)) << logs();
  // Both replaced by the other circuit's (valid files, wrong bytes).
  write_file_atomically(cached_zkey, read_file(cache + "/" + bls12381_.zkey_path));
  write_file_atomically(cached_pce, read_file(cache + "/" + bls12381_.pce_path));
  farm::submit(options_, job_json("bn254-again", bn254_.id, {witness}));
  EXPECT_EQ(wait_job("bn254-again").state, "done") << logs();
  expect_result_verifies("bn254-again", 1);
  const std::string log = workers_[0]->log();
  EXPECT_NE(log.find(cached_zkey + ": sha256 is " + bls12381_.id + ", the circuit record says " + bn254_.id +
                     "; copying it from the artifact store again"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find(cached_pce + ": sha256 is "), std::string::npos) << log;
  EXPECT_EQ(sha256_file_hex(cached_zkey), bn254_.id);
  EXPECT_EQ(sha256_file_hex(cached_pce), sha256_file_hex(options_.artifacts + "/" + bn254_.pce_path));
}

}  // namespace
}  // namespace zkfarm::testing
