// msm_bn254_g2.cu -- the device part of the Bn254 G2 MSM (msm.cuh). One
// curve and group per translation unit keeps nvcc's time per file bounded;
// no curve header is included (only the field parameters).
#include "kernels/cuda/msm.cuh"
#include "kernels/field.h"

ZKFARM_INSTANTIATE_GPU_MSM_SHIFTED(zkfarm::Bn254FqParams, 2)
ZKFARM_INSTANTIATE_GPU_MSM(zkfarm::Bn254FqParams, 2, zkfarm::Bn254FrParams)
