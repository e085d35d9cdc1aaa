// sealed_copy.cc -- see sealed_copy.h.
#include "base/sealed_copy.h"

#include <fcntl.h>
#include <sys/mman.h>  // memfd_create
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "base/digest.h"

namespace zkfarm {

namespace {

// Closes its descriptor unless released.
struct Descriptor {
  int fd = -1;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

[[noreturn]] void fail(int err, const std::string& what) {
  throw std::system_error(err, std::generic_category(), what);
}

}  // namespace

SealedCopy SealedCopy::of_file(const std::string& path) {
  // O_NONBLOCK: a FIFO is refused below instead of waited on.
  Descriptor source{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)};
  if (source.fd < 0) fail(errno, "open " + path);
  struct stat st {};
  if (::fstat(source.fd, &st) != 0) fail(errno, "stat " + path);
  if (!S_ISREG(st.st_mode)) throw std::runtime_error(path + ": not a regular file");
  if (const int flags = ::fcntl(source.fd, F_GETFL); flags < 0 || ::fcntl(source.fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
    fail(errno, "fcntl " + path);
  const std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
  Descriptor copy{::memfd_create("zkfarm-sealed-copy", MFD_CLOEXEC | MFD_ALLOW_SEALING)};
  if (copy.fd < 0) fail(errno, "memfd_create for a copy of " + path);
  // Through one buffer: each piece is hashed while it is in the CPU's cache
  // and written to the copy; no mapping of the copy is ever writable.
  constexpr std::size_t kPiece = 1u << 20;
  std::vector<std::uint8_t> buffer(static_cast<std::size_t>(std::min<std::uint64_t>(std::max<std::uint64_t>(size, 1), kPiece)));
  Sha256Stream hash;
  std::uint64_t done = 0;
  for (;;) {
    const ssize_t n = ::read(source.fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(errno, "read " + path);
    if (n == 0) break;
    done += static_cast<std::uint64_t>(n);
    if (done > size)
      throw std::runtime_error(path + ": changed size while being read (grew past " + std::to_string(size) + " bytes)");
    const std::span<const std::uint8_t> piece(buffer.data(), static_cast<std::size_t>(n));
    hash.update(piece);
    for (std::size_t written = 0; written < piece.size();) {
      const ssize_t w = ::write(copy.fd, piece.data() + written, piece.size() - written);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) fail(w < 0 ? errno : EIO, "writing the copy of " + path);
      written += static_cast<std::size_t>(w);
    }
  }
  if (done != size)
    throw std::runtime_error(path + ": changed size while being read (" + std::to_string(size) + " bytes at first, " +
                             std::to_string(done) + " then)");
  std::string digest = hash.finish_hex();
  if (::fcntl(copy.fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
    fail(errno, "sealing the copy of " + path);
  // A read-only descriptor of the same copy: a program is executed only
  // from a file nobody holds open for writing (older kernels answer
  // ETXTBSY otherwise). Without /proc the sealed read-write one serves.
  SealedCopy out;
  const std::string self = "/proc/self/fd/" + std::to_string(copy.fd);
  const int read_only = ::open(self.c_str(), O_RDONLY | O_CLOEXEC);
  out.fd_ = read_only >= 0 ? read_only : copy.release();
  out.size_ = size;
  out.sha256_ = std::move(digest);
  out.source_ = path;
  return out;
}

SealedCopy::SealedCopy(SealedCopy&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      size_(other.size_),
      sha256_(std::move(other.sha256_)),
      source_(std::move(other.source_)) {}

SealedCopy& SealedCopy::operator=(SealedCopy&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
    sha256_ = std::move(other.sha256_);
    source_ = std::move(other.source_);
  }
  return *this;
}

SealedCopy::~SealedCopy() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace zkfarm
