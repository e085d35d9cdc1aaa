// Benchmark circuit for bench/prove_vs_rapidsnark.sh: circomlib's SHA-256
// of BITS private input bits; the digest is packed into two public 128-bit
// outputs. About 29,400 constraints per 512-bit block (a 512-bit message
// pads to two blocks).
pragma circom 2.0.0;

include "sha256/sha256.circom";
include "bitify.circom";

template Sha256Bench(nBits) {
    signal input in[nBits];   // private, each 0 or 1
    signal output digest[2];  // public: high and low 128 bits

    component hash = Sha256(nBits);
    for (var i = 0; i < nBits; i++) hash.in[i] <== in[i];
    component pack[2];
    for (var k = 0; k < 2; k++) {
        pack[k] = Bits2Num(128);
        for (var i = 0; i < 128; i++) pack[k].in[i] <== hash.out[k * 128 + 127 - i];
        digest[k] <== pack[k].out;
    }
}

component main = Sha256Bench(BITS);
