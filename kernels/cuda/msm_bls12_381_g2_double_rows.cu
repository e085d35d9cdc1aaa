// msm_bls12_381_g2_double_rows.cu -- one part of the Bls12381 G2 MSM: the
// launcher of its double_rows kernel, the affine doublings of the shifted bases
// (batch_affine.cuh, msm_launch.cuh), a translation unit of its own so the
// parts compile in parallel.
#include "kernels/cuda/msm_launch.cuh"
#include "kernels/field.h"

ZKFARM_INSTANTIATE_GPU_MSM_PART(zkfarm::Bls12381FqParams, 2, double_rows)
