// binfile.h -- the iden3 binary container under .r1cs, .wtns and .zkey files.
//
// Layout (all little-endian): 4-byte magic, u32 version, u32 nSections, then
// nSections sections of (u32 type, u64 size, size bytes of body), in any
// order. This file gives:
//   * FormatError, the one exception every parser in formats/ throws for bad
//     input; its message names the file, the section and expected vs found;
//   * FileBytes: a whole file, memory-mapped read-only (big keys are used in
//     place) or an owned in-memory copy (tests, fuzzing, data from a socket);
//   * BinFile: the validated section table of a container, with lookups that
//     enforce "exactly one section of this type" where the format says so;
//   * SectionReader: a bounds-checked little-endian cursor over one section;
//   * ArrayView<T>: a typed view of an array in the file, zero-copy when the
//     bytes are aligned for T, else an aligned private copy (the only place in
//     formats/ where bytes are reinterpreted as typed objects);
//   * BinFileWriter: writes a container through AtomicFileWriter
//     (base/files.h: readers never see a half-written file), or into memory.
//
// Thread safety: all readers are immutable after construction and may be
// shared across threads. A BinFileWriter is used by one thread.
//
// A mapped file must not be truncated by another process while mapped (the
// kernel would raise SIGBUS on access); artifacts are written once, via
// rename, and never modified in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/files.h"  // AtomicFileWriter

namespace zkfarm {

// Bad input file: wrong magic/version, section bounds, sizes, primes, values.
// what() reads like "proof.zkey: section 9 (H): expected ..., found ...".
class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The bytes of one whole file, read-only. Either a private read-only mmap of
// a file or an owned heap copy. Non-copyable; share through shared_ptr so that
// views into the bytes (zkey point sections) keep it alive.
class FileBytes {
 public:
  // Maps path read-only. Returns the mapping (an empty file gives an empty
  // span). Throws FormatError naming the path and the OS error if the file
  // cannot be opened, stat'ed or mapped, or is not a regular file (a FIFO is
  // refused at once: see open_regular_file()).
  static std::shared_ptr<const FileBytes> map(const std::string& path);
  // Maps size bytes of the regular file open on fd (from open_regular_file)
  // and closes fd, also on error; name is what error messages call it.
  // Throws FormatError if the mapping fails.
  static std::shared_ptr<const FileBytes> map_descriptor(int fd, std::uint64_t size, std::string name);
  // Copies data into an owned buffer; name is what error messages call it.
  static std::shared_ptr<const FileBytes> copy(std::span<const std::uint8_t> data, std::string name);
  // Takes ownership of data.
  static std::shared_ptr<const FileBytes> adopt(std::vector<std::uint8_t> data, std::string name);

  ~FileBytes();
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;

  std::span<const std::uint8_t> bytes() const { return {data_, size_}; }
  const std::string& name() const { return name_; }
  bool is_mapped() const { return mapped_; }

 private:
  FileBytes() = default;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  bool mapped_ = false;
  std::vector<std::uint8_t> owned_;
  std::string name_;
};

// One entry of the section table: the body is bytes [offset, offset + size).
struct Section {
  std::uint32_t type = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

// Bounds-checked little-endian cursor over a section body. Every read names
// what it reads, so a truncated section fails with e.g.
// "x.r1cs: section 2 (constraints): truncated: need 4 bytes for the A count
// of constraint 7 at offset 1000, section has 1002 bytes".
class SectionReader {
 public:
  SectionReader(std::span<const std::uint8_t> body, std::string where)
      : body_(body), where_(std::move(where)) {}

  std::uint32_t u32(std::string_view what);
  std::uint64_t u64(std::string_view what);
  // The next n bytes.
  std::span<const std::uint8_t> bytes(std::size_t n, std::string_view what);
  // The next count * element_size bytes; the product is overflow-checked and
  // compared with what is left before anything else happens, so a lying
  // count fails here instead of in an allocation.
  std::span<const std::uint8_t> array(std::uint64_t count, std::size_t element_size,
                                      std::string_view what);

  std::size_t offset() const { return pos_; }
  std::size_t remaining() const { return body_.size() - pos_; }
  std::span<const std::uint8_t> body() const { return body_; }
  const std::string& where() const { return where_; }

  // Throws FormatError unless every byte was consumed ("expected N bytes,
  // found M"). `layout` describes what the section should have held.
  void expect_end(std::string_view layout) const;
  [[noreturn]] void fail(const std::string& what) const;

 private:
  std::span<const std::uint8_t> body_;
  std::size_t pos_ = 0;
  std::string where_;
};

// Little-endian loads from unaligned bytes (the caller has checked bounds).
inline std::uint32_t load_u32le(const std::uint8_t* p) {
  return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
         std::uint32_t(p[3]) << 24;
}
inline std::uint64_t load_u64le(const std::uint8_t* p) {
  return std::uint64_t(load_u32le(p)) | std::uint64_t(load_u32le(p + 4)) << 32;
}
inline void store_u32le(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = std::uint8_t(v >> (8 * i));
}
inline void store_u64le(std::uint8_t* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = std::uint8_t(v >> (8 * i));
}

// The validated header and section table of one container.
class BinFile {
 public:
  // Returns a short name for a section type ("H", "constraints"), or nullptr.
  using SectionNamer = const char* (*)(std::uint32_t type);

  struct Spec {
    std::string_view magic;          // exactly 4 characters: "r1cs", "wtns", "zkey"
    std::uint32_t min_version = 1;   // accepted versions, inclusive
    std::uint32_t max_version = 1;
    SectionNamer section_name = nullptr;
  };

  // Parses file's header and section table. Returns the table; throws
  // FormatError for a file shorter than the header, a wrong magic, a version
  // outside [min_version, max_version], a table entry past the end of the
  // file, or bytes left over after the last section.
  BinFile(std::shared_ptr<const FileBytes> file, const Spec& spec);

  std::uint32_t version() const { return version_; }
  const std::vector<Section>& sections() const { return sections_; }
  const std::string& name() const { return file_->name(); }
  const std::shared_ptr<const FileBytes>& file() const { return file_; }

  // Number of sections of this type.
  std::size_t count(std::uint32_t type) const;
  // The body of the only section of this type. Throws FormatError if there is
  // none ("missing section 2 (constraints)") or more than one.
  std::span<const std::uint8_t> unique(std::uint32_t type) const;
  // As unique(), but returns nullopt when the section is absent.
  std::optional<std::span<const std::uint8_t>> optional(std::uint32_t type) const;
  // A cursor over unique(type).
  SectionReader reader(std::uint32_t type) const;
  // Offset of the only section of this type from the start of the file.
  std::uint64_t offset_of(std::uint32_t type) const;

  // "name: section 9 (H)".
  std::string describe(std::uint32_t type) const;
  [[noreturn]] void fail(std::uint32_t type, const std::string& what) const;
  [[noreturn]] void fail_file(const std::string& what) const;

 private:
  const Section* find_unique(std::uint32_t type) const;

  std::shared_ptr<const FileBytes> file_;
  Spec spec_;
  std::uint32_t version_ = 0;
  std::vector<Section> sections_;
};

// An array of trivially copyable T stored in a file. Zero-copy when the bytes
// are suitably aligned (always for files our writers produce, usually for
// snarkjs's); otherwise the bytes are copied once into aligned memory. The
// view keeps the file alive.
template <class T>
class ArrayView {
  static_assert(std::is_trivially_copyable_v<T> && std::is_standard_layout_v<T>,
                "ArrayView<T> needs a plain-data T");

 public:
  ArrayView() = default;
  // bytes must lie inside *file and be a multiple of sizeof(T) (callers
  // check the size first, to name the section in the error); throws
  // std::logic_error otherwise.
  ArrayView(std::shared_ptr<const FileBytes> file, std::span<const std::uint8_t> bytes) {
    if (bytes.size() % sizeof(T) != 0)
      throw std::logic_error("ArrayView: size is not a multiple of the element size");
    const std::size_t n = bytes.size() / sizeof(T);
    if (n == 0) return;
    if (reinterpret_cast<std::uintptr_t>(bytes.data()) % alignof(T) == 0) {
      view_ = std::span<const T>(reinterpret_cast<const T*>(bytes.data()), n);
      file_ = std::move(file);
    } else {
      copy_ = std::make_shared<std::vector<T>>(n);
      std::memcpy(copy_->data(), bytes.data(), bytes.size());
      view_ = std::span<const T>(copy_->data(), n);
    }
  }

  std::span<const T> span() const { return view_; }
  std::size_t size() const { return view_.size(); }
  const T& operator[](std::size_t i) const { return view_[i]; }
  // True when the elements are read in place from the file.
  bool zero_copy() const { return copy_ == nullptr; }

 private:
  std::span<const T> view_;
  std::shared_ptr<const FileBytes> file_;
  std::shared_ptr<std::vector<T>> copy_;
};

// Writes one container. File mode writes to "<path>.tmp.<pid>.<n>" and
// commit() fsyncs and renames it over path; a writer destroyed without commit
// removes its temp file. Memory mode replaces the contents of a caller-owned
// vector. The section count in the header is filled in by commit().
// I/O errors throw std::system_error naming the path.
class BinFileWriter {
 public:
  // Type of the empty sections align_next_section_body() inserts. No iden3
  // format uses 0; snarkjs, rapidsnark and our readers ignore unknown types.
  static constexpr std::uint32_t kPaddingSection = 0;

  BinFileWriter(std::string path, std::string_view magic, std::uint32_t version);
  BinFileWriter(std::vector<std::uint8_t>* memory, std::string_view magic, std::uint32_t version);
  ~BinFileWriter();
  BinFileWriter(const BinFileWriter&) = delete;
  BinFileWriter& operator=(const BinFileWriter&) = delete;

  // Starts a section; throws std::logic_error if one is open.
  void begin_section(std::uint32_t type);
  // Makes the body of the next section start at a multiple of 8 bytes by
  // writing an empty padding section when needed (a section header is 12
  // bytes, so one empty section shifts the next body by 4 mod 8). Used so
  // that point arrays can be used in place through an aligned mmap.
  void align_next_section_body();
  void write(std::span<const std::uint8_t> data);
  void write_u32(std::uint32_t v);
  void write_u64(std::uint64_t v);
  // Closes the open section, patching its size.
  void end_section();
  // Writes the section count into the header, flushes, fsyncs and renames
  // into place. Throws std::logic_error if a section is still open.
  void commit();

  // Current length of the output in bytes.
  std::uint64_t position() const { return position_; }

 private:
  void raw_write(const std::uint8_t* data, std::size_t n);
  void flush_buffer();
  void patch(std::uint64_t at, std::span<const std::uint8_t> bytes);

  std::unique_ptr<AtomicFileWriter> file_;
  std::vector<std::uint8_t>* memory_ = nullptr;
  std::vector<std::uint8_t> buffer_;
  std::uint64_t position_ = 0;
  std::uint32_t written_sections_ = 0;
  std::optional<std::uint64_t> open_section_size_at_;
  bool committed_ = false;
};

// Opens path read-only for reading a regular file. Never blocks on the open
// itself: a FIFO, socket or device is refused without waiting for a writer
// or a carrier (the type is checked on the open descriptor). Returns the
// descriptor (the caller closes it) and stores the file's size in *size when
// size is non-null. Throws FormatError naming the file (`name`, or path when
// name is empty) and the reason ("not a regular file", or the OS error).
int open_regular_file(const std::string& path, std::uint64_t* size, const std::string& name = "");

// Reads exactly n bytes at offset from fd into out, looping over short
// reads. Throws std::system_error (naming `name`) on error or early EOF.
void read_exact(int fd, std::uint64_t offset, std::uint8_t* out, std::size_t n,
                const std::string& name);

}  // namespace zkfarm
