// sealed_copy.h -- a file's bytes read once into a sealed memfd and hashed:
// what a worker then maps or executes is exactly the bytes it hashed.
//
// Checking a file by its path and then opening the path again (to map a
// key, or to execve a program) leaves a window in which the file can be
// replaced, or rewritten in place, under the check. A SealedCopy closes it:
// the file is read once into an anonymous memory file (memfd_create), the
// copy is hashed, and the copy is sealed (F_SEAL_WRITE, _SHRINK, _GROW,
// _SEAL: neither this process nor anyone else can change it afterwards).
// Callers map the copy (FileBytes::map_descriptor on a dup of fd()) or
// execute it (execveat(fd(), "", ..., AT_EMPTY_PATH)); nothing reads the
// original path again.
//
// The copy is memory (shmem, counted in the process's cgroup like the page
// cache the original would have used); it lives as long as a descriptor
// of it or a mapping does. Cost: one read and one SHA-256 pass over the
// file (BENCHMARKS.md, "Hashing what runs").
#pragma once

#include <cstdint>
#include <string>

namespace zkfarm {

class SealedCopy {
 public:
  // Copies the regular file at path (a FIFO or device is refused before
  // it is read) and hashes the copy. Throws std::system_error naming the
  // path and the step (open, stat, memfd_create, read, seal) on an OS
  // error, std::runtime_error for something that is not a regular file or
  // a file that changed size while it was read.
  static SealedCopy of_file(const std::string& path);

  SealedCopy(SealedCopy&& other) noexcept;
  SealedCopy& operator=(SealedCopy&& other) noexcept;
  SealedCopy(const SealedCopy&) = delete;
  SealedCopy& operator=(const SealedCopy&) = delete;
  ~SealedCopy();

  // A read-only, close-on-exec descriptor of the sealed copy, owned by this
  // object (dup() it to keep it longer).
  int fd() const { return fd_; }
  std::uint64_t size() const { return size_; }
  // SHA-256 of the copy's bytes, 64 lower-case hex digits.
  const std::string& sha256() const { return sha256_; }
  // The path it was copied from (for messages).
  const std::string& source() const { return source_; }

 private:
  SealedCopy() = default;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::string sha256_;
  std::string source_;
};

}  // namespace zkfarm
