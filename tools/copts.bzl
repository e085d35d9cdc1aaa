"""Compiler flags shared by every zkfarm C++ target."""

# -Werror for our code only; system headers are -isystem so they do not trip it.
ZKFARM_COPTS = [
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wno-unused-parameter",
    "-Wno-missing-field-initializers",
]

ZKFARM_TEST_COPTS = ZKFARM_COPTS + ["-Wno-sign-compare"]
