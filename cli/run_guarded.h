// run_guarded.h -- how every zkfarm command turns an exception into a message
// and an exit code.
#pragma once

#include <functional>

namespace zkfarm::cli {

// Runs body and returns its exit code. An exception becomes one line on
// stderr, "zkfarm COMMAND: what". A prover::Error exits with
// exit_code(kind) (schema/error_code.h: 2 bad input, 3 the machine failed); any other
// exception exits 2, and a UsageError adds the command's usage line. (The
// farm commands wrap body so that their errors say what they are:
// "invalid job: ...", "Redis: ...".)
int run_guarded(const char* command, const char* usage, const std::function<int()>& body);

}  // namespace zkfarm::cli
