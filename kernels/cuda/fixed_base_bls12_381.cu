// fixed_base_bls12_381.cu -- the device part of the Bls12381 fixed-base multiplication
// (fixed_base.cuh) for G1 and G2. One curve per translation unit keeps
// nvcc's time per file bounded; no curve header is included (only the field
// parameters).
#include "kernels/cuda/fixed_base.cuh"
#include "kernels/field.h"

ZKFARM_INSTANTIATE_GPU_FIXED_BASE(zkfarm::Bls12381FqParams, 1, zkfarm::Bls12381FrParams)
ZKFARM_INSTANTIATE_GPU_FIXED_BASE(zkfarm::Bls12381FqParams, 2, zkfarm::Bls12381FrParams)
