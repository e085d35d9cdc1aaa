// base_test.cc -- hex, digests, file helpers, sealed copies and the command-line parser.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "base/command_line.h"
#include "base/digest.h"
#include "base/files.h"
#include "base/hex.h"
#include "base/sealed_copy.h"

namespace zkfarm {
namespace {

namespace fs = std::filesystem;

std::string temp_dir() {
  const char* root = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(root ? root : "/tmp") + "/base_test_XXXXXX";
  if (!::mkdtemp(dir.data())) throw std::runtime_error("mkdtemp failed");
  return dir;
}

TEST(HexTest, RoundTripsAndRejectsBadText) {
  const std::vector<std::uint8_t> bytes = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
  EXPECT_EQ(to_hex(bytes), "00017f80abff");
  EXPECT_EQ(to_hex(std::string_view("\x12\xfe", 2)), "12fe");
  EXPECT_EQ(from_hex("00017F80abff"), bytes);
  EXPECT_TRUE(from_hex("").empty());
  try {
    from_hex("abc", "proofs_hex");
    FAIL() << "odd length accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "proofs_hex: odd number of hex digits");
  }
  EXPECT_THROW(from_hex("0g"), std::invalid_argument);
}

TEST(DigestTest, KnownVectors) {
  const std::string abc = "abc";
  const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(abc.data()), abc.size());
  EXPECT_EQ(sha256_hex(bytes), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(to_hex(sha256(bytes)), sha256_hex(bytes));
  EXPECT_EQ(sha1_hex(abc), "a9993e364706816aba3e25717850c26c9cd0d89d");

  const std::string dir = temp_dir();
  // Larger than the 4 MiB read buffer, so the streaming path is exercised.
  std::string big(9u << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 + (i >> 12));
  write_file_atomically(dir + "/big", big);
  EXPECT_EQ(sha256_file_hex(dir + "/big"),
            sha256_hex(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(big.data()), big.size())));
  EXPECT_THROW(sha256_file_hex(dir + "/missing"), std::system_error);
  fs::remove_all(dir);
}

TEST(FilesTest, AtomicWritesCopiesAndReads) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/out.json";
  write_file_atomically(path, "first");
  write_file_atomically(path, "second, longer");
  EXPECT_EQ(read_file(path), "second, longer");
  copy_file_atomically(path, dir + "/copy");
  EXPECT_EQ(read_file(dir + "/copy"), "second, longer");
  write_file_atomically(dir + "/secret", "k", 0600);
  struct stat st;
  ASSERT_EQ(::stat((dir + "/secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  {
    AtomicFileWriter abandoned(dir + "/abandoned");
    abandoned.write(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>("x"), 1));
  }
  // Nothing but the three files: no temp file is left behind.
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"copy", "out.json", "secret"}));
  try {
    read_file(dir + "/missing.json");
    FAIL() << "no error for a missing file";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/missing.json"), std::string::npos) << e.what();
  }
  EXPECT_THROW(copy_file_atomically(dir + "/missing", dir + "/to"), std::system_error);
  EXPECT_FALSE(fs::exists(dir + "/to"));
  fs::remove_all(dir);
}

// sync() fsyncs the temp file without touching the destination; commit()
// then puts everything written (also after the sync) in place, and a writer
// dropped after sync() leaves nothing behind.
TEST(FilesTest, SyncBeforeCommitKeepsTheDestinationUntilCommit) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/proof.json";
  const auto bytes = [](const char* text) {
    return std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(text), std::strlen(text));
  };
  write_file_atomically(path, "old");
  {
    AtomicFileWriter out(path);
    out.write(bytes("new"));
    out.sync();
    EXPECT_EQ(read_file(path), "old");
    out.write(bytes(" and more"));
    out.commit();
    EXPECT_THROW(out.sync(), std::logic_error);
  }
  EXPECT_EQ(read_file(path), "new and more");
  {
    AtomicFileWriter dropped(dir + "/dropped");
    dropped.write(bytes("x"));
    dropped.sync();
  }
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  EXPECT_EQ(names, (std::vector<std::string>{"proof.json"}));
  fs::remove_all(dir);
}

// The copy holds the bytes as they were when it was made and hashed: a
// file rewritten in place or replaced afterwards changes nothing in it, and
// nobody can write to it.
TEST(SealedCopyTest, HoldsTheHashedBytesWhateverHappensToTheFile) {
  const std::string path = temp_dir() + "/program";
  write_file_atomically(path, "original bytes");
  SealedCopy copy = SealedCopy::of_file(path);
  EXPECT_EQ(copy.size(), 14u);
  EXPECT_EQ(copy.sha256(), sha256_file_hex(path));
  {
    // In place (same inode), then replaced by another file.
    const int fd = ::open(path.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, "REPLACED", 8, 0), 8);
    ::close(fd);
  }
  write_file_atomically(path, "another file entirely");
  char bytes[32] = {};
  ASSERT_EQ(::pread(copy.fd(), bytes, sizeof bytes, 0), 14);
  EXPECT_EQ(std::string(bytes, 14), "original bytes");
  EXPECT_EQ(::pwrite(copy.fd(), "x", 1, 0), -1);
  const std::string self = "/proc/self/fd/" + std::to_string(copy.fd());
  // Reopened for writing through /proc, the seal still refuses every write.
  const int writer = ::open(self.c_str(), O_WRONLY);
  ASSERT_GE(writer, 0);
  EXPECT_EQ(::pwrite(writer, "x", 1, 0), -1);
  EXPECT_EQ(errno, EPERM);
  ::close(writer);
  EXPECT_EQ(SealedCopy::of_file(path).sha256(), sha256_file_hex(path));
}

TEST(SealedCopyTest, RefusesWhatIsNotARegularFile) {
  const std::string dir = temp_dir();
  ASSERT_EQ(::mkfifo((dir + "/fifo").c_str(), 0600), 0);
  EXPECT_THROW(SealedCopy::of_file(dir + "/fifo"), std::runtime_error);
  EXPECT_THROW(SealedCopy::of_file(dir + "/missing"), std::system_error);
  write_file_atomically(dir + "/empty", "");
  EXPECT_EQ(SealedCopy::of_file(dir + "/empty").sha256(), sha256_hex({}));
}

TEST(CommandLineTest, OptionsFlagsAndPositionals) {
  auto kind = [](const std::string& name) {
    if (name == "out" || name == "seed") return OptionKind::kValue;
    if (name == "force") return OptionKind::kFlag;
    return OptionKind::kUnknown;
  };
  CommandLine line = parse_command_line({"a.zkey", "--out", "dir", "--seed=7", "-", "--force", "--out=final", "b"}, kind);
  EXPECT_EQ(line.positional, (std::vector<std::string>{"a.zkey", "-", "b"}));
  EXPECT_EQ(line.values.at("out"), "final");
  EXPECT_EQ(line.values.at("seed"), "7");
  EXPECT_TRUE(line.flags.count("force"));
  auto error_of = [&](std::vector<std::string> args) -> std::string {
    try {
      parse_command_line(args, kind);
    } catch (const CommandLineError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error_of({"--bogus"}), "unknown option --bogus");
  EXPECT_EQ(error_of({"--force=yes"}), "option --force takes no value");
  EXPECT_EQ(error_of({"x", "--out"}), "option --out needs a value");
}

}  // namespace
}  // namespace zkfarm
