// msm_bn254_g2_records.cu -- one part of the Bn254 G2 MSM: the launcher of
// its records kernel (msm_launch.cuh), a translation unit of its own so the
// parts compile in parallel.
#include "kernels/cuda/msm_launch.cuh"
#include "kernels/field.h"

ZKFARM_INSTANTIATE_GPU_MSM_PART(zkfarm::Bn254FqParams, 2, records)
