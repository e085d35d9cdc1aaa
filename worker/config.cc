// config.cc -- see config.h.
#include "worker/config.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace zkfarm {

std::uint32_t default_witgen_workers(bool on_device) {
  if (!on_device) return 1;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max(1u, cores > 2 ? cores - 2 : 1u);
}

std::string default_witgen_temp_dir() {
  if (::access("/dev/shm", W_OK | X_OK) == 0) return "/dev/shm";
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

}  // namespace zkfarm
