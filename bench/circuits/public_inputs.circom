// Benchmark circuit for bench/prove_vs_rapidsnark.sh: n public inputs (a
// PoRep partition has 328), each multiplied by a private value, folded into
// one public digest by a chain of `links` circomlib Poseidon(2) hashes (link
// i mixes in product i mod n); about 243 constraints per link plus n.
pragma circom 2.0.0;

include "poseidon.circom";

template PublicInputs(n, links) {
    signal input pub[n];      // public
    signal input priv[n];     // private
    signal output digest;     // public

    signal mixed[n];
    for (var i = 0; i < n; i++) mixed[i] <== pub[i] * priv[i];
    component hashes[links];
    signal chain[links + 1];
    chain[0] <== 0;
    for (var i = 0; i < links; i++) {
        hashes[i] = Poseidon(2);
        hashes[i].inputs[0] <== chain[i];
        hashes[i].inputs[1] <== mixed[i % n];
        chain[i + 1] <== hashes[i].out;
    }
    digest <== chain[links];
}

component main {public [pub]} = PublicInputs(N, LINKS);
