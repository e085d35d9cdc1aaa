// files.cc -- see files.h.
#include "base/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

namespace zkfarm {

namespace {

// A unique temp name beside path, so rename() stays within one file system.
std::string temp_name(const std::string& path) {
  static std::atomic<std::uint64_t> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

[[noreturn]] void throw_errno(int err, const std::string& what) {
  throw std::system_error(err, std::generic_category(), what);
}

// fsync of a file written by someone else (fs::copy_file).
void fsync_path(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_errno(errno, "open " + path);
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    throw_errno(err, "fsync " + path);
  }
  ::close(fd);
}

}  // namespace

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_errno(errno, path);
  std::string out(std::istreambuf_iterator<char>(in), {});
  if (in.bad()) throw_errno(errno, "read " + path);
  return out;
}

AtomicFileWriter::AtomicFileWriter(std::string path, unsigned mode)
    : path_(std::move(path)), tmp_path_(temp_name(path_)) {
  fd_ = ::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd_ < 0) io_fail("create");
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_path_.c_str());
}

void AtomicFileWriter::io_fail(const std::string& op) {
  throw std::system_error(errno, std::system_category(), op + " " + tmp_path_);
}

void AtomicFileWriter::write(std::span<const std::uint8_t> data) {
  write_at(position_, data);
  position_ += data.size();
}

void AtomicFileWriter::write_at(std::uint64_t offset, std::span<const std::uint8_t> data) {
  if (fd_ < 0) throw std::logic_error("AtomicFileWriter: write after commit");
  synced_ = false;
  std::size_t done = 0;
  while (done < data.size()) {
    // Linux transfers at most ~2 GiB per call.
    std::size_t chunk = std::min<std::size_t>(data.size() - done, std::size_t(1) << 30);
    ssize_t n = ::pwrite(fd_, data.data() + done, chunk, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      io_fail("write");
    }
    done += static_cast<std::size_t>(n);
  }
}

void AtomicFileWriter::sync() {
  if (fd_ < 0) throw std::logic_error("AtomicFileWriter: sync after commit");
  if (::fsync(fd_) != 0) io_fail("fsync");
  synced_ = true;
}

void AtomicFileWriter::commit() {
  if (fd_ < 0) throw std::logic_error("AtomicFileWriter: commit twice");
  if (!synced_ && ::fsync(fd_) != 0) io_fail("fsync");
  if (::close(fd_) != 0) {
    fd_ = -1;
    io_fail("close");
  }
  fd_ = -1;
  if (::rename(tmp_path_.c_str(), path_.c_str()) != 0)
    throw std::system_error(errno, std::system_category(), "rename " + tmp_path_ + " to " + path_);
  committed_ = true;
}

void write_file_atomically(const std::string& path, std::string_view bytes, unsigned mode) {
  AtomicFileWriter out(path, mode);
  out.write(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  out.commit();
}

void copy_file_atomically(const std::string& from, const std::string& to) {
  namespace fs = std::filesystem;
  const std::string tmp = temp_name(to);
  try {
    fs::copy_file(from, tmp, fs::copy_options::overwrite_existing);
    fsync_path(tmp);
    fs::rename(tmp, to);
  } catch (const fs::filesystem_error& e) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw std::system_error(e.code(), "copy " + from + " to " + to);
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
}

}  // namespace zkfarm
