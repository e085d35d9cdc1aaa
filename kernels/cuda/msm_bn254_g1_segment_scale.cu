// msm_bn254_g1_segment_scale.cu -- one part of the Bn254 G1 MSM: the launcher of
// its segment_scale kernel (msm_launch.cuh), a translation unit of its own so the
// parts compile in parallel.
#include "kernels/cuda/msm_launch.cuh"
#include "kernels/field.h"

ZKFARM_INSTANTIATE_GPU_MSM_PART(zkfarm::Bn254FqParams, 1, segment_scale)
