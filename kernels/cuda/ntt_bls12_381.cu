// ntt_bls12_381.cu -- GpuNtt over the BLS12-381 scalar field (ntt.cuh).
#include "kernels/cuda/ntt.cuh"

template class zkfarm::cuda::GpuNtt<zkfarm::Bls12381Fr>;
