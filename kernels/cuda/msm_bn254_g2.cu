// msm_bn254_g2.cu -- msm_device<Bn254, Bn254::G2> (msm.cuh): one curve and group
// per translation unit keeps nvcc's time and memory per file bounded.
#include "kernels/bn254.h"
#include "kernels/cuda/msm.cuh"

ZKFARM_INSTANTIATE_GPU_MSM(zkfarm::Bn254, zkfarm::Bn254::G2)
