// fixed_base_bn254.cu -- the device part of the Bn254 fixed-base multiplication
// (fixed_base.cuh) for G1 and G2. One curve per translation unit keeps
// nvcc's time per file bounded; no curve header is included (only the field
// parameters).
#include "kernels/cuda/fixed_base.cuh"
#include "kernels/field.h"

ZKFARM_INSTANTIATE_GPU_FIXED_BASE(zkfarm::Bn254FqParams, 1, zkfarm::Bn254FrParams)
ZKFARM_INSTANTIATE_GPU_FIXED_BASE(zkfarm::Bn254FqParams, 2, zkfarm::Bn254FrParams)
