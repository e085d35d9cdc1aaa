// zkfarm interop circuit: a short multiplier chain feeding a circomlib Poseidon.
// Small (a few hundred constraints, fits a 2^10 powers of tau), with two public
// inputs and one public output so the verification key has a non-trivial IC.
// Compiled once per curve by run_interop.sh (bn128, and --prime bls12381; the
// Poseidon constants are BN254's but are valid, smaller, BLS12-381 scalars).
pragma circom 2.0.0;

include "poseidon.circom";

template MultiplierPoseidon(nMul) {
    signal input a;            // private
    signal input b;            // private
    signal input salt;         // public
    signal input expected;     // public: must equal a^(nMul) * b
    signal output digest;      // public: Poseidon(product, salt)

    signal products[nMul + 1];
    products[0] <== b;
    for (var i = 0; i < nMul; i++) {
        products[i + 1] <== products[i] * a;
    }
    expected === products[nMul];

    component hash = Poseidon(2);
    hash.inputs[0] <== products[nMul];
    hash.inputs[1] <== salt;
    digest <== hash.out;
}

component main {public [salt, expected]} = MultiplierPoseidon(8);
