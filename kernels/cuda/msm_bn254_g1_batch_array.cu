// msm_bn254_g1_batch_array.cu -- one part of the Bn254 G1 MSM: the launcher of
// its batch_array kernel, the later batch-affine rounds (batch_affine.cuh,
// msm_launch.cuh), a translation unit of its own so the parts compile in
// parallel.
#include "kernels/cuda/msm_launch.cuh"
#include "kernels/field.h"

ZKFARM_INSTANTIATE_GPU_MSM_PART(zkfarm::Bn254FqParams, 1, batch_array)
