// fixed_base_bn254_g2_table.cu -- one part of the Bn254 G2 fixed-base
// multiplication: the launcher of its table kernel (fixed_base_launch.cuh),
// a translation unit of its own so the parts compile in parallel.
#include "kernels/cuda/fixed_base_launch.cuh"
#include "kernels/field.h"

ZKFARM_INSTANTIATE_GPU_FIXED_BASE_PART(zkfarm::Bn254FqParams, 2, zkfarm::Bn254FrParams, table)
