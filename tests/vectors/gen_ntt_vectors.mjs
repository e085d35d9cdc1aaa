// gen_ntt_vectors.mjs -- prints the NTT test vectors that kernels/ntt_test.cc
// checks, computed by ffjavascript (snarkjs's field library), as JSON.
//
// Regenerate: cd tests/vectors && node gen_ntt_vectors.mjs > ntt_vectors.json
// Needs ffjavascript 0.3.1 (npm install --save-exact ffjavascript@0.3.1).
//
// For each curve's scalar field Fr: s (two-adicity), nqr, shift, every root of
// unity Fr.w[k] (k = 0..s), and for a small deterministic input vector x of
// size 2^3 and 2^5: Fr.fft(x), Fr.ifft(x) and the odd-coset evaluations built
// exactly as snarkjs's groth16_prove.js builds them
// (ifft, batchApplyKey(1, Fr.w[log_n+1]), fft). All values are decimal strings.
import { buildBn128, buildBls12381 } from "ffjavascript";

function input(Fr, n, seed) {
  // x_i = (seed + i)^7 + i: spread over the whole field, no RNG needed.
  const out = [];
  for (let i = 0; i < n; i++) {
    const b = Fr.e(seed + i);
    out.push(Fr.add(Fr.exp(b, 7), Fr.e(i)));
  }
  return out;
}

function toBuff(Fr, arr) {
  const buff = new Uint8Array(arr.length * Fr.n8);
  arr.forEach((v, i) => buff.set(v, i * Fr.n8));
  return buff;
}

function fromBuff(Fr, buff) {
  const out = [];
  for (let i = 0; i < buff.byteLength / Fr.n8; i++) out.push(buff.slice(i * Fr.n8, (i + 1) * Fr.n8));
  return out;
}

async function curveVectors(curve) {
  const Fr = curve.Fr;
  const str = (v) => Fr.toString(v);
  const roots = [];
  for (let k = 0; k <= Fr.s; k++) roots.push(str(Fr.w[k]));
  const transforms = [];
  for (const logN of [3, 5]) {
    const n = 1 << logN;
    const x = input(Fr, n, 1000 + logN);
    const fft = fromBuff(Fr, await Fr.fft(toBuff(Fr, x)));
    const ifft = fromBuff(Fr, await Fr.ifft(toBuff(Fr, x)));
    const coeffs = await Fr.ifft(toBuff(Fr, x));
    const inc = logN == Fr.s ? Fr.shift : Fr.w[logN + 1];
    const shifted = await Fr.batchApplyKey(coeffs, Fr.e(1), inc);
    const odd = fromBuff(Fr, await Fr.fft(shifted));
    transforms.push({
      log_n: logN,
      input: x.map(str),
      fft: fft.map(str),
      ifft: ifft.map(str),
      odd_coset: odd.map(str),
    });
  }
  return { curve: curve.name, s: Fr.s, nqr: str(Fr.nqr), shift: str(Fr.shift), roots, transforms };
}

const out = {};
for (const build of [buildBn128, buildBls12381]) {
  const curve = await build(true);
  out[curve.name] = await curveVectors(curve);
  await curve.terminate();
}
console.log(JSON.stringify(out, null, 1));
