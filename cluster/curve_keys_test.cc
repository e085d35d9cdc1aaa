// curve_keys_test.cc -- key files and allowlists, including keys that
// contain '#' (a Z85 character: comments cannot be "everything after #").
#include "cluster/curve_keys.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/harness/harness.h"

namespace zkfarm {
namespace {

TEST(CurveKeys, FilesAndAllowlists) {
  testing::TempDir dir;
  std::string hash_key;
  for (int i = 0; i < 100000 && hash_key.empty(); ++i) {
    auto k = generate_curve_keypair();
    if (k.public_key.find('#') != std::string::npos) hash_key = k.public_key;
  }
  ASSERT_FALSE(hash_key.empty());
  const CurveKeyPair pair = generate_curve_keypair();
  EXPECT_EQ(curve_public_key(pair.secret_key), pair.public_key);
  write_curve_key_file(dir.file("k"), pair.secret_key);
  EXPECT_EQ(read_curve_key_file(dir.file("k")), pair.secret_key);
  testing::write_file(dir.file("allow"), "# allowed workers\n\n" + hash_key + "\n" + pair.public_key + "   # gpu3\n");
  auto keys = read_curve_allowlist(dir.file("allow"));
  EXPECT_EQ(keys.size(), 2u);
  EXPECT_TRUE(keys.count(hash_key));
  EXPECT_TRUE(keys.count(pair.public_key));
  testing::write_file(dir.file("bad"), "not-a-key\n");
  EXPECT_THROW(read_curve_allowlist(dir.file("bad")), std::runtime_error);
  EXPECT_FALSE(is_curve_key("short"));
}

}  // namespace
}  // namespace zkfarm
