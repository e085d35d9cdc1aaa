// run_guarded.cc -- see run_guarded.h.
#include "cli/run_guarded.h"

#include <cstdio>
#include <exception>

#include "cli/args.h"
#include "prover/prover_error.h"

namespace zkfarm::cli {

int run_guarded(const char* command, const char* usage, const std::function<int()>& body) {
  try {
    return body();
  } catch (const prover::Error& e) {
    std::fprintf(stderr, "zkfarm %s: %s\n", command, e.what());
    return exit_code(e.kind());  // schema/error_code.h
  } catch (const UsageError& e) {
    std::fprintf(stderr, "zkfarm %s: %s\n(usage: %s)\n", command, e.what(), usage);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zkfarm %s: %s\n", command, e.what());
  }
  return 2;
}

}  // namespace zkfarm::cli
