// groth16_kernels_bls12_381.cu -- the PCE products and h kernels over the
// BLS12-381 scalar field (groth16_kernels.cuh).
#include "kernels/cuda/groth16_kernels.cuh"

ZKFARM_INSTANTIATE_GROTH16_KERNELS(zkfarm::Bls12381Fr)
