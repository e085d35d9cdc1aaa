// farm_api_test.cc -- who may change a circuit's witness generator
// (generator_change_refusal): the same generator again, a first one by the
// registrant, a different one only with the explicit flag and only by the
// registrant. `zkfarm circuit add` end to end: tests/interop/run_inputs.sh
// (generator-not-replaced).
#include "cluster/farm_api.h"

#include <gtest/gtest.h>

namespace zkfarm::farm {
namespace {

const std::string kOld(64, 'a'), kOldDat(64, 'b'), kNew(64, 'c');

CircuitInfo registered(const std::string& by, bool with_generator) {
  CircuitInfo info;
  info.id = std::string(64, '1');
  info.registered_by = by;
  if (with_generator) {
    info.witgen_path = info.id + "/witgen/witness-generator";
    info.witgen_sha256 = kOld;
    info.witgen_dat_sha256 = kOldDat;
  }
  return info;
}

TEST(GeneratorChangeRefusal, TheSameGeneratorAgainOrANewCircuitIsAllowed) {
  EXPECT_EQ(generator_change_refusal(std::nullopt, kNew, kOldDat, "alice", {}), "");
  EXPECT_EQ(generator_change_refusal(registered("alice", true), kOld, kOldDat, "mallory", {}), "");
  EXPECT_EQ(generator_change_refusal(registered("alice", false), kNew, kOldDat, "alice", {}), "");
}

TEST(GeneratorChangeRefusal, ADifferentGeneratorNeedsTheFlagAndTheRegistrant) {
  const std::string refused = generator_change_refusal(registered("alice", true), kNew, kOldDat, "alice", {});
  EXPECT_NE(refused.find("already has a witness generator (sha256 " + kOld + ") and this one differs (sha256 " +
                         kNew + ")"),
            std::string::npos)
      << refused;
  EXPECT_NE(refused.find("give --replace-witness-generator"), std::string::npos) << refused;
  // Only the .dat differs: a different generator too.
  EXPECT_NE(generator_change_refusal(registered("alice", true), kOld, kNew, "alice", {}), "");
  EXPECT_EQ(generator_change_refusal(registered("alice", true), kNew, kOldDat, "alice", {.replace = true}), "");
  const std::string other = generator_change_refusal(registered("alice", true), kNew, kOldDat, "mallory",
                                                     {.replace = true});
  EXPECT_NE(other.find("only its registrant, Redis user 'alice', may replace it (you are 'mallory')"),
            std::string::npos)
      << other;
}

TEST(GeneratorChangeRefusal, OnlyTheRegistrantMayAddOne) {
  const std::string refused = generator_change_refusal(registered("alice", false), kNew, kOldDat, "mallory", {});
  EXPECT_NE(refused.find("was registered by Redis user 'alice'; only that user may give it a witness generator"),
            std::string::npos)
      << refused;
  // A record from before registrants were kept names none.
  EXPECT_EQ(generator_change_refusal(registered("", false), kNew, kOldDat, "mallory", {}), "");
}

}  // namespace
}  // namespace zkfarm::farm
