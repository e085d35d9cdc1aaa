// zkfarm input-job circuit: inputs in, witness computed on the farm.
// An array input (so a wrong size is an error), a public input, a public
// output, a circuit assertion a bad input can fail (`expected === ...`) and
// a circomlib Poseidon so the generated code has real templates. Compiled
// per curve by run_inputs.sh to C++ (the farm's witness generator) and to
// wasm (the reference witness).
pragma circom 2.0.0;

include "poseidon.circom";

template InputCheck(n) {
    signal input a;            // public
    signal input b[n];         // private
    signal input expected;     // private: must equal a * b[0] * ... * b[n-1]
    signal output digest;      // public: Poseidon(product, a)

    signal products[n + 1];
    products[0] <== a;
    for (var i = 0; i < n; i++) {
        products[i + 1] <== products[i] * b[i];
    }
    expected === products[n];

    component hash = Poseidon(2);
    hash.inputs[0] <== products[n];
    hash.inputs[1] <== a;
    digest <== hash.out;
}

component main {public [a]} = InputCheck(3);
