pragma circom 2.0.0;

// Tiny test circuit for formats/ fixtures: a private input, two public
// inputs, one output, non-unit coefficients and a linear term.
template Mul() {
    signal input a;
    signal input b;
    signal input k;
    signal output c;
    signal t;
    signal u;
    t <== a * b;
    u <== (2 * t + a) * (a - 5 * b);
    c <== u * k + 7 * t + 3;
}

component main {public [b, k]} = Mul();
