// ntt_bn254.cu -- GpuNtt over the BN254 scalar field (ntt.cuh).
#include "kernels/cuda/ntt.cuh"

template class zkfarm::cuda::GpuNtt<zkfarm::Bn254Fr>;
