// groth16_kernels_bn254.cu -- the PCE products and h kernels over the BN254
// scalar field (groth16_kernels.cuh).
#include "kernels/cuda/groth16_kernels.cuh"

ZKFARM_INSTANTIATE_GROTH16_KERNELS(zkfarm::Bn254Fr)
