// msm_bls12_381_g1_batch_sorted.cu -- one part of the Bls12381 G1 MSM: the
// launcher of its batch_sorted kernel, the first batch-affine round (reading
// the sorted digits) (batch_affine.cuh, msm_launch.cuh), a translation unit of
// its own so the parts compile in parallel.
#include "kernels/cuda/msm_launch.cuh"
#include "kernels/field.h"

ZKFARM_INSTANTIATE_GPU_MSM_PART(zkfarm::Bls12381FqParams, 1, batch_sorted)
