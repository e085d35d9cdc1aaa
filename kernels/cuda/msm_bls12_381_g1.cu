// msm_bls12_381_g1.cu -- the device part of the Bls12381 G1 MSM (msm.cuh). One
// curve and group per translation unit keeps nvcc's time per file bounded;
// no curve header is included (only the field parameters).
#include "kernels/cuda/msm.cuh"
#include "kernels/field.h"

ZKFARM_INSTANTIATE_GPU_MSM_G1_EXTRAS(zkfarm::Bls12381FqParams)
ZKFARM_INSTANTIATE_GPU_MSM(zkfarm::Bls12381FqParams, 1, zkfarm::Bls12381FrParams)
