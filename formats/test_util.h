// test_util.h -- helpers shared by the formats/ tests: fixture paths, temp
// files, byte patching, and "every prefix / every byte flip" drivers that
// require a parser to fail only with FormatError.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "base/files.h"
#include "formats/binfile.h"

namespace zkfarm::testing {

// Path of a checked-in fixture (tests run from the workspace root, both
// under Bazel and when built by hand).
inline std::string fixture(const std::string& name) { return "formats/testdata/" + name; }

// A whole file as bytes (zkfarm::read_file, base/files.h).
inline std::vector<std::uint8_t> read_file(const std::string& path) {
  const std::string text = zkfarm::read_file(path);
  return std::vector<std::uint8_t>(text.begin(), text.end());
}

inline std::vector<std::uint8_t> fixture_bytes(const std::string& name) {
  return read_file(fixture(name));
}

// A fresh path in the test's scratch directory.
inline std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  std::string base = dir ? dir : "/tmp";
  static int counter = 0;
  return base + "/zkfarm_formats_" + std::to_string(::getpid()) + "_" +
         std::to_string(counter++) + "_" + name;
}

inline std::shared_ptr<const FileBytes> in_memory(const std::vector<std::uint8_t>& bytes,
                                                  const std::string& name = "mem") {
  return FileBytes::copy(bytes, name);
}

inline void put_u32(std::vector<std::uint8_t>& b, std::size_t at, std::uint32_t v) {
  store_u32le(b.data() + at, v);
}
inline void put_u64(std::vector<std::uint8_t>& b, std::size_t at, std::uint64_t v) {
  store_u64le(b.data() + at, v);
}

// Offset of the size field of the first section of `type` in a container.
inline std::size_t section_header_offset(const std::vector<std::uint8_t>& b, std::uint32_t type) {
  std::size_t pos = 12;
  const std::uint32_t n = load_u32le(b.data() + 8);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (load_u32le(b.data() + pos) == type) return pos;
    pos += 12 + load_u64le(b.data() + pos + 4);
  }
  throw std::runtime_error("no section " + std::to_string(type));
}
// Offset of the body of the first section of `type`.
inline std::size_t section_body_offset(const std::vector<std::uint8_t>& b, std::uint32_t type) {
  return section_header_offset(b, type) + 12;
}

// Runs parse on every strict prefix of bytes; each must throw FormatError.
inline void expect_every_prefix_fails(const std::vector<std::uint8_t>& bytes,
                                      const std::function<void(std::vector<std::uint8_t>)>& parse) {
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    std::vector<std::uint8_t> prefix(bytes.begin(), bytes.begin() + n);
    try {
      parse(prefix);
      ADD_FAILURE() << "prefix of " << n << " bytes parsed without error";
    } catch (const FormatError&) {
    }
  }
}

// Flips each byte in turn (xor 0xff); parse must succeed or throw FormatError
// (any other exception fails the test via gtest's handler).
inline void expect_byte_flips_safe(const std::vector<std::uint8_t>& bytes,
                                   const std::function<void(std::vector<std::uint8_t>)>& parse,
                                   std::size_t stride = 1) {
  for (std::size_t i = 0; i < bytes.size(); i += stride) {
    std::vector<std::uint8_t> copy = bytes;
    copy[i] ^= 0xff;
    try {
      parse(copy);
    } catch (const FormatError&) {
    }
  }
}

// Runs f and returns the FormatError message ("" and a test failure if none).
template <class F>
std::string format_error_of(F&& f) {
  try {
    f();
  } catch (const FormatError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a FormatError";
  return "";
}

}  // namespace zkfarm::testing
