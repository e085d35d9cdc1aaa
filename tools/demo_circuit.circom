// The demo's input job circuit (tools/demo.sh): a multiplier chain with one
// public input and one public output. The farm compiles circom's C++ output
// for it (zkfarm circuit add --witness-generator) and computes each
// partition's witness from an input.json on the worker that proves it.
pragma circom 2.0.0;

template MultiplierChain(n) {
    signal input x;           // public
    signal input factors[n];  // private
    signal output product;    // public: x * factors[0] * ... * factors[n-1]

    signal partial[n + 1];
    partial[0] <== x;
    for (var i = 0; i < n; i++) {
        partial[i + 1] <== partial[i] * factors[i];
    }
    product <== partial[n];
}

component main {public [x]} = MultiplierChain(16);
