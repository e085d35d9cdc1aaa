// fixed_base_bls12_381_g1_accumulate.cu -- one part of the Bls12381 G1 fixed-base
// multiplication: the launcher of its accumulate kernel (fixed_base_launch.cuh),
// a translation unit of its own so the parts compile in parallel.
#include "kernels/cuda/fixed_base_launch.cuh"
#include "kernels/field.h"

ZKFARM_INSTANTIATE_GPU_FIXED_BASE_PART(zkfarm::Bls12381FqParams, 1, zkfarm::Bls12381FrParams, accumulate)
