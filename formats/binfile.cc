// binfile.cc -- iden3 container parsing, memory mapping and writing.
#include "formats/binfile.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace zkfarm {

namespace {

constexpr std::size_t kHeaderBytes = 12;         // magic, version, nSections
constexpr std::size_t kSectionHeaderBytes = 12;  // type, size
constexpr std::size_t kWriteBuffer = 1 << 20;

std::string os_error(int err) { return std::system_category().message(err); }

}  // namespace

// ---------------------------------------------------------------------------
// FileBytes

int open_regular_file(const std::string& path, std::uint64_t* size, const std::string& name) {
  const std::string& shown = name.empty() ? path : name;
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer
  // (forever, if none comes), and opening some devices waits for carrier;
  // O_NOCTTY: a terminal named here must not become our controlling tty.
  // The type is checked on the open descriptor (no race with a rename), and
  // only then is the flag cleared, so reads of the regular file block as usual.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) throw FormatError(shown + ": cannot open: " + os_error(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw FormatError(shown + ": cannot stat: " + os_error(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw FormatError(shown + ": not a regular file");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    int err = errno;
    ::close(fd);
    throw FormatError(shown + ": cannot clear O_NONBLOCK: " + os_error(err));
  }
  if (size) *size = static_cast<std::uint64_t>(st.st_size);
  return fd;
}

std::shared_ptr<const FileBytes> FileBytes::map(const std::string& path) {
  std::uint64_t size = 0;
  const int fd = open_regular_file(path, &size);
  return map_descriptor(fd, size, path);
}

std::shared_ptr<const FileBytes> FileBytes::map_descriptor(int fd, std::uint64_t size, std::string name) {
  std::shared_ptr<FileBytes> out(new FileBytes());  // private constructor
  out->name_ = std::move(name);
  out->size_ = static_cast<std::size_t>(size);
  if (out->size_ > 0) {
    void* p = ::mmap(nullptr, out->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw FormatError(out->name_ + ": cannot map " + std::to_string(out->size_) + " bytes: " + os_error(err));
    }
    out->data_ = static_cast<const std::uint8_t*>(p);
    out->mapped_ = true;
  }
  ::close(fd);  // the mapping stays valid
  return out;
}

std::shared_ptr<const FileBytes> FileBytes::copy(std::span<const std::uint8_t> data,
                                                 std::string name) {
  return adopt(std::vector<std::uint8_t>(data.begin(), data.end()), std::move(name));
}

std::shared_ptr<const FileBytes> FileBytes::adopt(std::vector<std::uint8_t> data,
                                                  std::string name) {
  std::shared_ptr<FileBytes> out(new FileBytes());
  out->owned_ = std::move(data);
  out->data_ = out->owned_.data();
  out->size_ = out->owned_.size();
  out->name_ = std::move(name);
  return out;
}

FileBytes::~FileBytes() {
  if (mapped_) ::munmap(const_cast<std::uint8_t*>(data_), size_);
}

// ---------------------------------------------------------------------------
// SectionReader

std::span<const std::uint8_t> SectionReader::bytes(std::size_t n, std::string_view what) {
  if (n > remaining())
    fail("truncated: need " + std::to_string(n) + " bytes for " + std::string(what) +
         " at offset " + std::to_string(pos_) + ", section has " + std::to_string(body_.size()) +
         " bytes");
  auto out = body_.subspan(pos_, n);
  pos_ += n;
  return out;
}

std::uint32_t SectionReader::u32(std::string_view what) { return load_u32le(bytes(4, what).data()); }

std::uint64_t SectionReader::u64(std::string_view what) { return load_u64le(bytes(8, what).data()); }

std::span<const std::uint8_t> SectionReader::array(std::uint64_t count, std::size_t element_size,
                                                   std::string_view what) {
  if (element_size != 0 && count > remaining() / element_size)
    fail("truncated: " + std::string(what) + ": " + std::to_string(count) + " entries of " +
         std::to_string(element_size) + " bytes need more than the " +
         std::to_string(remaining()) + " bytes left at offset " + std::to_string(pos_) +
         " (section has " + std::to_string(body_.size()) + " bytes)");
  return bytes(static_cast<std::size_t>(count) * element_size, what);
}

void SectionReader::expect_end(std::string_view layout) const {
  if (pos_ != body_.size())
    fail("expected " + std::to_string(pos_) + " bytes (" + std::string(layout) + "), found " +
         std::to_string(body_.size()));
}

void SectionReader::fail(const std::string& what) const { throw FormatError(where_ + ": " + what); }

// ---------------------------------------------------------------------------
// BinFile

BinFile::BinFile(std::shared_ptr<const FileBytes> file, const Spec& spec)
    : file_(std::move(file)), spec_(spec) {
  if (spec.magic.size() != 4) throw std::logic_error("BinFile: magic must have 4 characters");
  const auto bytes = file_->bytes();
  if (bytes.size() < kHeaderBytes)
    fail_file("file too short for an iden3 header: expected at least " +
              std::to_string(kHeaderBytes) + " bytes, found " + std::to_string(bytes.size()));
  if (std::memcmp(bytes.data(), spec.magic.data(), 4) != 0) {
    // The file's own bytes are never echoed (a farm daemon reports this
    // error to whoever named the file); a known container type is named.
    std::string found = "something else";
    for (const char* known : {"r1cs", "wtns", "zkey"})
      if (std::memcmp(bytes.data(), known, 4) == 0) found = std::string("a .") + known + " file";
    fail_file("wrong magic: expected \"" + std::string(spec.magic) + "\" (a ." + std::string(spec.magic) +
              " file), found " + found);
  }
  version_ = load_u32le(bytes.data() + 4);
  if (version_ < spec.min_version || version_ > spec.max_version)
    fail_file("unsupported " + std::string(spec.magic) + " version: expected " +
              (spec.min_version == spec.max_version
                   ? std::to_string(spec.min_version)
                   : std::to_string(spec.min_version) + ".." + std::to_string(spec.max_version)) +
              ", found " + std::to_string(version_));
  const std::uint32_t n_sections = load_u32le(bytes.data() + 8);
  // Each section needs at least its 12-byte header: bound the count before reserving.
  if (n_sections > (bytes.size() - kHeaderBytes) / kSectionHeaderBytes)
    fail_file("header announces " + std::to_string(n_sections) +
              " sections, but the file has room for at most " +
              std::to_string((bytes.size() - kHeaderBytes) / kSectionHeaderBytes));
  sections_.reserve(n_sections);
  std::uint64_t pos = kHeaderBytes;
  for (std::uint32_t i = 0; i < n_sections; ++i) {
    if (bytes.size() - pos < kSectionHeaderBytes)
      fail_file("section table entry " + std::to_string(i) + " at offset " + std::to_string(pos) +
                " is truncated: need 12 bytes, file has " + std::to_string(bytes.size() - pos) +
                " left");
    Section s;
    s.type = load_u32le(bytes.data() + pos);
    s.size = load_u64le(bytes.data() + pos + 4);
    s.offset = pos + kSectionHeaderBytes;
    if (s.size > bytes.size() - s.offset)
      fail(s.type, "section size " + std::to_string(s.size) + " at offset " +
                       std::to_string(s.offset) + " runs past the end of the file (" +
                       std::to_string(bytes.size()) + " bytes, " +
                       std::to_string(bytes.size() - s.offset) + " left)");
    sections_.push_back(s);
    pos = s.offset + s.size;
  }
  if (pos != bytes.size())
    fail_file("expected " + std::to_string(pos) + " bytes (" + std::to_string(n_sections) +
              " sections), found " + std::to_string(bytes.size()) + " (trailing garbage)");
}

std::size_t BinFile::count(std::uint32_t type) const {
  std::size_t n = 0;
  for (const auto& s : sections_) n += s.type == type;
  return n;
}

const Section* BinFile::find_unique(std::uint32_t type) const {
  const Section* found = nullptr;
  for (const auto& s : sections_) {
    if (s.type != type) continue;
    if (found) fail(type, "section appears more than once (the format allows exactly one)");
    found = &s;
  }
  return found;
}

std::span<const std::uint8_t> BinFile::unique(std::uint32_t type) const {
  const Section* s = find_unique(type);
  if (!s) fail_file("missing " + describe(type).substr(name().size() + 2));
  return file_->bytes().subspan(s->offset, s->size);
}

std::optional<std::span<const std::uint8_t>> BinFile::optional(std::uint32_t type) const {
  const Section* s = find_unique(type);
  if (!s) return std::nullopt;
  return file_->bytes().subspan(s->offset, s->size);
}

SectionReader BinFile::reader(std::uint32_t type) const {
  return SectionReader(unique(type), describe(type));
}

std::uint64_t BinFile::offset_of(std::uint32_t type) const {
  const Section* s = find_unique(type);
  if (!s) fail_file("missing " + describe(type).substr(name().size() + 2));
  return s->offset;
}

std::string BinFile::describe(std::uint32_t type) const {
  std::string out = name() + ": section " + std::to_string(type);
  const char* n = spec_.section_name ? spec_.section_name(type) : nullptr;
  if (n) out += std::string(" (") + n + ")";
  return out;
}

void BinFile::fail(std::uint32_t type, const std::string& what) const {
  throw FormatError(describe(type) + ": " + what);
}

void BinFile::fail_file(const std::string& what) const { throw FormatError(name() + ": " + what); }

// ---------------------------------------------------------------------------
// read_exact

void read_exact(int fd, std::uint64_t offset, std::uint8_t* out, std::size_t n,
                const std::string& name) {
  std::size_t done = 0;
  while (done < n) {
    std::size_t chunk = std::min<std::size_t>(n - done, std::size_t(1) << 30);
    ssize_t got = ::pread(fd, out + done, chunk, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::system_category(), "read " + name);
    }
    if (got == 0)
      throw FormatError(name + ": unexpected end of file at offset " +
                        std::to_string(offset + done) + " (needed " + std::to_string(n) +
                        " bytes from offset " + std::to_string(offset) + ")");
    done += static_cast<std::size_t>(got);
  }
}

// ---------------------------------------------------------------------------
// BinFileWriter

namespace {
// Magic and version; the section count (bytes 8..11) is patched by commit().
void write_container_header(std::uint8_t* out, std::string_view magic, std::uint32_t version) {
  if (magic.size() != 4) throw std::logic_error("BinFileWriter: magic must have 4 characters");
  std::memcpy(out, magic.data(), 4);
  store_u32le(out + 4, version);
  store_u32le(out + 8, 0);
}
}  // namespace

BinFileWriter::BinFileWriter(std::string path, std::string_view magic, std::uint32_t version) {
  std::uint8_t header[kHeaderBytes];
  write_container_header(header, magic, version);
  file_ = std::make_unique<AtomicFileWriter>(std::move(path));
  buffer_.reserve(kWriteBuffer);
  raw_write(header, sizeof header);
}

BinFileWriter::BinFileWriter(std::vector<std::uint8_t>* memory, std::string_view magic,
                             std::uint32_t version)
    : memory_(memory) {
  std::uint8_t header[kHeaderBytes];
  write_container_header(header, magic, version);
  memory_->clear();
  raw_write(header, sizeof header);
}

BinFileWriter::~BinFileWriter() = default;  // an uncommitted AtomicFileWriter removes its temp

void BinFileWriter::raw_write(const std::uint8_t* data, std::size_t n) {
  position_ += n;
  if (memory_) {
    memory_->insert(memory_->end(), data, data + n);
    return;
  }
  if (buffer_.size() + n > kWriteBuffer) flush_buffer();
  if (n >= kWriteBuffer) {
    file_->write({data, n});
  } else {
    buffer_.insert(buffer_.end(), data, data + n);
  }
}

void BinFileWriter::flush_buffer() {
  if (file_ && !buffer_.empty()) file_->write(buffer_);
  buffer_.clear();
}

void BinFileWriter::patch(std::uint64_t at, std::span<const std::uint8_t> bytes) {
  if (memory_) {
    std::memcpy(memory_->data() + at, bytes.data(), bytes.size());
    return;
  }
  flush_buffer();
  file_->write_at(at, bytes);
}

void BinFileWriter::begin_section(std::uint32_t type) {
  if (open_section_size_at_) throw std::logic_error("BinFileWriter: section already open");
  if (written_sections_ == 0xffffffffu) throw std::logic_error("BinFileWriter: too many sections");
  write_u32(type);
  open_section_size_at_ = position_;
  write_u64(0);
}

void BinFileWriter::align_next_section_body() {
  if (open_section_size_at_) throw std::logic_error("BinFileWriter: section open");
  if ((position_ + kSectionHeaderBytes) % 8 == 0) return;
  begin_section(kPaddingSection);
  end_section();
  if ((position_ + kSectionHeaderBytes) % 8 != 0)
    throw std::logic_error("BinFileWriter: sections must keep 4-byte granularity to be aligned");
}

void BinFileWriter::write(std::span<const std::uint8_t> data) { raw_write(data.data(), data.size()); }

void BinFileWriter::write_u32(std::uint32_t v) {
  std::uint8_t b[4];
  store_u32le(b, v);
  raw_write(b, 4);
}

void BinFileWriter::write_u64(std::uint64_t v) {
  std::uint8_t b[8];
  store_u64le(b, v);
  raw_write(b, 8);
}

void BinFileWriter::end_section() {
  if (!open_section_size_at_) throw std::logic_error("BinFileWriter: no open section");
  const std::uint64_t at = *open_section_size_at_;
  std::uint8_t size[8];
  store_u64le(size, position_ - at - 8);
  patch(at, size);
  open_section_size_at_.reset();
  ++written_sections_;
}

void BinFileWriter::commit() {
  if (open_section_size_at_) throw std::logic_error("BinFileWriter: commit with an open section");
  if (committed_) throw std::logic_error("BinFileWriter: commit twice");
  committed_ = true;
  std::uint8_t count[4];
  store_u32le(count, written_sections_);
  patch(8, count);
  if (memory_) return;
  flush_buffer();
  file_->commit();
}

}  // namespace zkfarm
