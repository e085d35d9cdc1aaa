// msm_bls12_381_g2.cu -- msm_device<Bls12381, Bls12381::G2> (msm.cuh): one curve and group
// per translation unit keeps nvcc's time and memory per file bounded.
#include "kernels/bls12_381.h"
#include "kernels/cuda/msm.cuh"

ZKFARM_INSTANTIATE_GPU_MSM(zkfarm::Bls12381, zkfarm::Bls12381::G2)
