// Benchmark circuit for input jobs (bench/inputs_bench.sh): a chain of
// circomlib Poseidon(2) hashes, each hashing the previous digest with the
// next element of the input; about 243 constraints per link, so 4250 links
// make a circuit just under 2^20 constraints.
pragma circom 2.0.0;

include "poseidon.circom";

template PoseidonChain(n) {
    signal input seed;        // public
    signal input steps[n];    // private
    signal output digest;     // public

    component hashes[n];
    signal chain[n + 1];
    chain[0] <== seed;
    for (var i = 0; i < n; i++) {
        hashes[i] = Poseidon(2);
        hashes[i].inputs[0] <== chain[i];
        hashes[i].inputs[1] <== steps[i];
        chain[i + 1] <== hashes[i].out;
    }
    digest <== chain[n];
}

component main {public [seed]} = PoseidonChain(LINKS);
