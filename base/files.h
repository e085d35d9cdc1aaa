// files.h -- whole-file reads and atomic writes.
//
// Every file zkfarm writes for others to read (artifacts in the store, the
// CLI's outputs, a worker's cached copies) is written to a temp file beside
// its destination, fsync'ed and renamed over it, so a reader sees the old
// file or the complete new one, never a torn one, even across a crash.
//
// Errors are std::system_error whose message names the path (what() reads
// like "open proof.json: No such file or directory").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zkfarm {

// The whole contents of a file. Throws std::system_error naming the path.
std::string read_file(const std::string& path);

// Writes a file atomically: the data goes to "<path>.tmp.<pid>.<n>" in the
// same directory; commit() fsyncs it and renames it over path. A writer
// destroyed without commit() removes its temp file.
class AtomicFileWriter {
 public:
  // Creates the temp file (mode & ~umask).
  explicit AtomicFileWriter(std::string path, unsigned mode = 0644);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  // Appends data at position().
  void write(std::span<const std::uint8_t> data);
  // Overwrites already-written bytes at an absolute offset (header patches);
  // position() is unchanged.
  void write_at(std::uint64_t offset, std::span<const std::uint8_t> data);
  std::uint64_t position() const { return position_; }
  // fsync now, so that a later commit() only renames (unless more is
  // written in between): lets the fsync's wait overlap other work while the
  // destination stays untouched. Throws std::system_error naming the file.
  void sync();
  // fsync (unless sync() already did since the last write) + rename; after
  // it the writer is inert.
  void commit();

 private:
  [[noreturn]] void io_fail(const std::string& op);
  std::string path_;
  std::string tmp_path_;
  int fd_ = -1;
  std::uint64_t position_ = 0;
  bool committed_ = false;
  bool synced_ = false;
};

// Replaces path with bytes atomically (AtomicFileWriter).
void write_file_atomically(const std::string& path, std::string_view bytes, unsigned mode = 0644);

// Copies from to `to` atomically (temp copy, fsync, rename): a reader of `to`
// never sees a partial copy. Throws std::system_error naming the file.
void copy_file_atomically(const std::string& from, const std::string& to);

}  // namespace zkfarm
