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

// A key with the worker ids it may say hello as (one host's devices sharing
// a key); a note is not ids; malformed ids= and a key listed twice are
// errors naming the line.
TEST(CurveKeys, AllowlistIds) {
  testing::TempDir dir;
  const CurveKeyPair a = generate_curve_keypair(), b = generate_curve_keypair(), c = generate_curve_keypair();
  testing::write_file(dir.file("allow"), a.public_key + " ids=host-a/gpu0,host-a/gpu1 host a\n" + b.public_key +
                                             " a note\n" + c.public_key + "\n");
  const auto keys = read_curve_allowlist_ids(dir.file("allow"));
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_EQ(keys.at(a.public_key), (std::set<std::string>{"host-a/gpu0", "host-a/gpu1"}));
  EXPECT_TRUE(keys.at(b.public_key).empty());
  EXPECT_TRUE(keys.at(c.public_key).empty());
  EXPECT_EQ(read_curve_allowlist(dir.file("allow")).size(), 3u);
  for (const std::string& bad : {a.public_key + " ids=\n", a.public_key + " ids=x,,y\n",
                                 a.public_key + " ids=" + std::string(201, 'x') + "\n",
                                 a.public_key + "\n" + a.public_key + " ids=x\n"}) {
    testing::write_file(dir.file("bad"), bad);
    try {
      read_curve_allowlist_ids(dir.file("bad"));
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(dir.file("bad") + ":"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace zkfarm
