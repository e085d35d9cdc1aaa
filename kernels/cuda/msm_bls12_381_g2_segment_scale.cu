// msm_bls12_381_g2_segment_scale.cu -- one part of the Bls12381 G2 MSM: the launcher of
// its segment_scale kernel (msm_launch.cuh), a translation unit of its own so the
// parts compile in parallel.
#include "kernels/cuda/msm_launch.cuh"
#include "kernels/field.h"

ZKFARM_INSTANTIATE_GPU_MSM_PART(zkfarm::Bls12381FqParams, 2, segment_scale)
