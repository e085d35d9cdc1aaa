// msm_bn254_g2_reduce_group.cu -- one part of the Bn254 G2 MSM: the launcher of
// its reduce_group kernel (msm_launch.cuh), a translation unit of its own so the
// parts compile in parallel.
#include "kernels/cuda/msm_launch.cuh"
#include "kernels/field.h"

ZKFARM_INSTANTIATE_GPU_MSM_PART(zkfarm::Bn254FqParams, 2, reduce_group)
