// digest.h -- SHA-256 (and SHA-1 for Redis script ids) through OpenSSL's EVP
// interface, the one place zkfarm calls libcrypto.
//
// SHA-256 names circuits (the digest of the zkey), checks verification keys
// and guards the PCE file; with SHA-NI one core hashes 1-2 GB/s.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace zkfarm {

using Sha256Digest = std::array<std::uint8_t, 32>;

// The SHA-256 of bytes. Throws std::runtime_error if OpenSSL fails.
Sha256Digest sha256(std::span<const std::uint8_t> bytes);
// The same as 64 lower-case hex digits.
std::string sha256_hex(std::span<const std::uint8_t> bytes);
// SHA-256 of a whole file, read in 4 MiB pieces (files of any size), as hex.
// Throws std::system_error naming the path on an open or read error, and
// std::runtime_error for something that is not a regular file (a FIFO is
// refused at once, never waited on).
std::string sha256_file_hex(const std::string& path);
// SHA-256 of bytes given piece by piece (a file streamed through a
// buffer). Throws std::runtime_error if OpenSSL fails.
class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;
  void update(std::span<const std::uint8_t> bytes);
  // The digest of everything given, as hex; the stream is spent after it.
  std::string finish_hex();

 private:
  void* context_;  // EVP_MD_CTX
};
// SHA-1 as 40 hex digits (Redis names scripts by it; not for security).
std::string sha1_hex(std::string_view bytes);

}  // namespace zkfarm
