// curves.h -- every curve zkfarm proves on: Bn254 ("bn128") and Bls12381
// ("bls12381"). Code generic over the curve takes one of these traits
// structs as a template parameter (see docs/INTERFACES.md).
#pragma once

#include "kernels/bls12_381.h"
#include "kernels/bn254.h"
