// digest.cc -- see digest.h.
#include "base/digest.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "base/hex.h"

namespace zkfarm {

namespace {

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

// One-shot digest of bytes into out (EVP_MAX_MD_SIZE bytes); returns its length.
unsigned int digest_into(const EVP_MD* md, const void* data, std::size_t size, unsigned char* out) {
  unsigned int length = 0;
  if (EVP_Digest(data, size, out, &length, md, nullptr) != 1)
    throw std::runtime_error(std::string(EVP_MD_get0_name(md)) + " failed (OpenSSL)");
  return length;
}

}  // namespace

Sha256Digest sha256(std::span<const std::uint8_t> bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  if (digest_into(EVP_sha256(), bytes.data(), bytes.size(), digest) != 32)
    throw std::runtime_error("SHA-256 failed (OpenSSL): wrong digest length");
  Sha256Digest out;
  std::copy(digest, digest + 32, out.begin());
  return out;
}

std::string sha256_hex(std::span<const std::uint8_t> bytes) { return to_hex(sha256(bytes)); }

std::string sha256_file_hex(const std::string& path) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer, maybe
  // forever. The type is checked on the open descriptor, then the flag is
  // cleared so that reads of the regular file block as usual.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "open " + path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::system_error(err, std::generic_category(), "stat " + path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error(path + ": not a regular file");
  }
  if (const int flags = ::fcntl(fd, F_GETFL); flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::system_error(err, std::generic_category(), "fcntl " + path);
  }
  std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    ::close(fd);
    throw std::runtime_error("SHA-256 failed (OpenSSL)");
  }
  std::vector<unsigned char> buffer(4u << 20);
  for (;;) {
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      throw std::system_error(err, std::generic_category(), "read " + path);
    }
    if (n == 0) break;
    EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(ctx.get(), digest, &length) != 1) throw std::runtime_error("SHA-256 failed (OpenSSL)");
  return to_hex(std::span<const std::uint8_t>(digest, length));
}

Sha256Stream::Sha256Stream() : context_(EVP_MD_CTX_new()) {
  if (!context_ || EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(context_), EVP_sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(context_));
    throw std::runtime_error("SHA-256 failed (OpenSSL)");
  }
}

Sha256Stream::~Sha256Stream() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(context_)); }

void Sha256Stream::update(std::span<const std::uint8_t> bytes) {
  if (EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(context_), bytes.data(), bytes.size()) != 1)
    throw std::runtime_error("SHA-256 failed (OpenSSL)");
}

std::string Sha256Stream::finish_hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(context_), digest, &length) != 1)
    throw std::runtime_error("SHA-256 failed (OpenSSL)");
  return to_hex(std::span<const std::uint8_t>(digest, length));
}

std::string sha1_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  const unsigned int length = digest_into(EVP_sha1(), bytes.data(), bytes.size(), digest);
  return to_hex(std::span<const std::uint8_t>(digest, length));
}

}  // namespace zkfarm
