"""Compiler flags shared by every zkfarm C++ target.

The one definition of zkfarm's flags: Bazel loads this file, and
tests/gpu/build_bundle.sh (the plain nvcc/g++ build for GPU hosts without
Bazel) evaluates it with python3 to get the same lists. Keep it to constant
lists of strings (Starlark that is also Python): no load(), no functions.
"""

# -Werror for our code only; system headers are -isystem so they do not trip it.
ZKFARM_COPTS = [
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wno-unused-parameter",
    "-Wno-missing-field-initializers",
]

ZKFARM_TEST_COPTS = ZKFARM_COPTS + ["-Wno-sign-compare"]

# nvcc flags for every .cu file (used by //tools:cuda.bzl). One architecture
# (H200 = sm_90) plus compute_90 PTX so newer GPUs can JIT it; adding more
# -gencode pairs multiplies device compile time, so add them only when needed.
ZKFARM_NVCC_COPTS = [
    "-std=c++20",
    "-O3",
    "-gencode",
    "arch=compute_90,code=sm_90",
    "-gencode",
    "arch=compute_90,code=compute_90",
    "-Xcompiler",
    "-fPIC",
    "-Xcompiler",
    "-Wall,-Wextra,-Werror,-Wno-unused-parameter",
    "--Werror",
    "all-warnings",
]
