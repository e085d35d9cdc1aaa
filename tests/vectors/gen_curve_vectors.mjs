// gen_curve_vectors.mjs -- prints the curve and pairing test vectors that
// kernels/curve_vectors_test.cc checks, computed by @noble/curves (an
// implementation independent of ours), as JSON.
//
// Regenerate: cd tests/vectors && node gen_curve_vectors.mjs > curve_vectors.json
// Needs @noble/curves 1.9.7 (pinned in package.json).
//
// For BN254 ("bn128") and BLS12-381 ("bls12381"), with a fixed list of
// scalars k (small ones, r - 1, and values spread over the field):
//   g1[i], g2[i]  = [k_i] G1, [k_i] G2 (affine, canonical decimal strings;
//                   G2 coordinates as [c0, c1]; the identity as null),
//   sums          = [k_i] G + [k_{i+1}] G for both groups,
//   pairings      = e([a] G1, [b] G2) for a few (a, b), as the 12 Fq
//                   coefficients of Fq12 in the order c0.c0.c0, c0.c0.c1,
//                   c0.c1.c0, ..., c1.c2.c1 (noble's tower is ours:
//                   Fq12 = Fq6[w]/(w^2 - v), Fq6 = Fq2[v]/(v^3 - xi)),
//   compressed    = (BLS12-381 only) zcash-format hex of g1[i] and g2[i].
import { bn254 } from "@noble/curves/bn254";
import { bls12_381 } from "@noble/curves/bls12-381";

function scalars(r) {
  const out = [0n, 1n, 2n, 3n, 5n, 255n, 65537n, r - 1n, r - 2n, (r - 1n) / 2n];
  // A few values spread over [0, r): (seed + i)^37 + i mod r.
  for (let i = 0n; i < 4n; i++) out.push(((0x5eedn + i) ** 37n + i) % r);
  return out;
}

const dec = (x) => x.toString(10);
const fp2 = (a) => [dec(a.c0), dec(a.c1)];
function affine(point, isG2) {
  if (point.equals(point.constructor.ZERO)) return null;
  const a = point.toAffine();
  return isG2 ? { x: fp2(a.x), y: fp2(a.y) } : { x: dec(a.x), y: dec(a.y) };
}
function fq12(f) {
  const out = [];
  for (const c of [f.c0, f.c1]) for (const d of [c.c0, c.c1, c.c2]) out.push(dec(d.c0), dec(d.c1));
  return out;
}
const mul = (base, k) => (k === 0n ? base.constructor.ZERO : base.multiply(k));

function curveVectors(curve, withCompression) {
  const r = curve.fields.Fr.ORDER;
  const G1 = curve.G1.ProjectivePoint.BASE;
  const G2 = curve.G2.ProjectivePoint.BASE;
  const ks = scalars(r);
  const p1 = ks.map((k) => mul(G1, k));
  const p2 = ks.map((k) => mul(G2, k));
  const out = {
    scalars: ks.map(dec),
    g1: p1.map((p) => affine(p, false)),
    g2: p2.map((p) => affine(p, true)),
    g1_sums: p1.slice(0, -1).map((p, i) => affine(p.add(p1[i + 1]), false)),
    g2_sums: p2.slice(0, -1).map((p, i) => affine(p.add(p2[i + 1]), true)),
    pairings: [],
  };
  for (const [ia, ib] of [[1, 1], [2, 3], [10, 11], [7, 12]]) {
    out.pairings.push({
      a: dec(ks[ia]),
      b: dec(ks[ib]),
      value: fq12(curve.pairing(p1[ia], p2[ib])),
    });
  }
  if (withCompression) {
    out.g1_compressed = p1.map((p) => p.toHex(true));
    out.g2_compressed = p2.map((p) => p.toHex(true));
  }
  return out;
}

const vectors = {
  generator: "tests/vectors/gen_curve_vectors.mjs with @noble/curves 1.9.7",
  bn128: curveVectors(bn254, false),
  bls12381: curveVectors(bls12_381, true),
};
console.log(JSON.stringify(vectors, null, 1));
