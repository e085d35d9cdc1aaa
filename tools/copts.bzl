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
