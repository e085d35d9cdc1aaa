// prover_backend.cc -- the ProverBackend defaults shared by every backend.
#include "worker/prover_backend.h"

#include <unistd.h>

#include <fstream>

namespace zkfarm {

std::uint64_t ProverBackend::memory_used_bytes() const {
  // /proc/self/statm: size resident shared text lib data dt, in pages.
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size_pages = 0, resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return 0;
  const long page_size = ::sysconf(_SC_PAGESIZE);
  return page_size > 0 ? resident_pages * static_cast<std::uint64_t>(page_size) : 0;
}

}  // namespace zkfarm
