#!/usr/bin/env node
// interop_util.js -- small file surgery and comparisons for run_interop.sh.
//
//   json-equal A B             exit 0 if the JSON files are semantically equal
//                              (decimal/hex number strings compared as integers,
//                              key order ignored), else print the first
//                              difference and exit 1.
//   same-keys A B              exit 0 if both JSON objects have the same
//                              top-level keys (proof.json shape), else 1.
//   digit IN OUT KEY           change the last decimal digit of IN[KEY][0]
//                              (e.g. pi_a's x coordinate).
//   swap IN OUT KEY1 KEY2      swap two members of a proof (pi_a <-> pi_c).
//   double-g1 CURVE IN OUT KEY replace the G1 point IN[KEY] by 2*IN[KEY]: still
//                              on the curve and in the subgroup, so only the
//                              pairing check can reject it.
//   bump-public IN OUT INDEX   add 1 to public input INDEX.
//   drop-witness IN OUT        rewrite a .wtns with its last value removed
//                              (header count and section size kept consistent).
//
// Any other failure (unreadable file, bad arguments) exits 2 with a message.
"use strict";

const fs = require("fs");

function die(message) {
  process.stderr.write(`interop_util: ${message}\n`);
  process.exit(2);
}

function readJson(path) {
  try {
    return JSON.parse(fs.readFileSync(path, "utf8"));
  } catch (error) {
    die(`${path}: ${error.message}`);
  }
}

function writeJson(path, value) {
  fs.writeFileSync(path, JSON.stringify(value, null, 1) + "\n");
}

// Strings that are integers (decimal or 0x-hex) are compared by value.
function normalize(value) {
  if (typeof value === "string" && /^(0x[0-9a-fA-F]+|[0-9]+)$/.test(value)) {
    return BigInt(value).toString();
  }
  if (typeof value === "number" && Number.isInteger(value)) return BigInt(value).toString();
  if (Array.isArray(value)) return value.map(normalize);
  if (value !== null && typeof value === "object") {
    const out = {};
    for (const key of Object.keys(value).sort()) out[key] = normalize(value[key]);
    return out;
  }
  return value;
}

// Returns the path of the first difference between a and b, or null.
function firstDifference(a, b, path) {
  if (typeof a !== typeof b || Array.isArray(a) !== Array.isArray(b) || (a === null) !== (b === null)) {
    return `${path}: type ${JSON.stringify(a)?.slice(0, 80)} vs ${JSON.stringify(b)?.slice(0, 80)}`;
  }
  if (Array.isArray(a)) {
    if (a.length !== b.length) return `${path}: length ${a.length} vs ${b.length}`;
    for (let i = 0; i < a.length; i++) {
      const difference = firstDifference(a[i], b[i], `${path}[${i}]`);
      if (difference) return difference;
    }
    return null;
  }
  if (a !== null && typeof a === "object") {
    const keysA = Object.keys(a).sort();
    const keysB = Object.keys(b).sort();
    const onlyA = keysA.filter((key) => !(key in b));
    const onlyB = keysB.filter((key) => !(key in a));
    if (onlyA.length || onlyB.length) {
      return `${path}: keys only in first [${onlyA}], only in second [${onlyB}]`;
    }
    for (const key of keysA) {
      const difference = firstDifference(a[key], b[key], `${path}.${key}`);
      if (difference) return difference;
    }
    return null;
  }
  return a === b ? null : `${path}: ${a} vs ${b}`;
}

function curveG1(curveName) {
  if (curveName === "bn128") return require("@noble/curves/bn254").bn254.G1.ProjectivePoint;
  if (curveName === "bls12381") return require("@noble/curves/bls12-381").bls12_381.G1.ProjectivePoint;
  die(`unknown curve ${curveName} (want bn128 or bls12381)`);
}

// .wtns: "wtns" u32 version, u32 nSections, sections (u32 type, u64 size, body).
// Section 1: u32 n8, prime (n8 bytes), u32 nWitness. Section 2: nWitness*n8 bytes.
function dropLastWitness(inPath, outPath) {
  const input = fs.readFileSync(inPath);
  if (input.length < 12 || input.toString("latin1", 0, 4) !== "wtns") die(`${inPath}: not a .wtns file`);
  const sectionCount = input.readUInt32LE(8);
  const sections = [];
  let offset = 12;
  for (let i = 0; i < sectionCount; i++) {
    if (offset + 12 > input.length) die(`${inPath}: truncated section table`);
    const type = input.readUInt32LE(offset);
    const size = Number(input.readBigUInt64LE(offset + 4));
    if (offset + 12 + size > input.length) die(`${inPath}: section ${type} overruns the file`);
    sections.push({ type, body: Buffer.from(input.subarray(offset + 12, offset + 12 + size)) });
    offset += 12 + size;
  }
  const header = sections.find((section) => section.type === 1);
  const values = sections.find((section) => section.type === 2);
  if (!header || !values) die(`${inPath}: missing header or witness section`);
  const n8 = header.body.readUInt32LE(0);
  const witnessCount = header.body.readUInt32LE(4 + n8);
  if (witnessCount < 2 || values.body.length !== witnessCount * n8) die(`${inPath}: inconsistent witness section`);
  header.body.writeUInt32LE(witnessCount - 1, 4 + n8);
  values.body = values.body.subarray(0, (witnessCount - 1) * n8);

  const parts = [input.subarray(0, 12)];
  for (const section of sections) {
    const sectionHeader = Buffer.alloc(12);
    sectionHeader.writeUInt32LE(section.type, 0);
    sectionHeader.writeBigUInt64LE(BigInt(section.body.length), 4);
    parts.push(sectionHeader, section.body);
  }
  fs.writeFileSync(outPath, Buffer.concat(parts));
}

function main(argv) {
  const [command, ...args] = argv;
  switch (command) {
    case "json-equal": {
      if (args.length !== 2) die("usage: json-equal A B");
      const difference = firstDifference(normalize(readJson(args[0])), normalize(readJson(args[1])), "$");
      if (difference) {
        process.stdout.write(`differ at ${difference}\n`);
        process.exit(1);
      }
      return;
    }
    case "same-keys": {
      if (args.length !== 2) die("usage: same-keys A B");
      const keysA = Object.keys(readJson(args[0])).sort().join(",");
      const keysB = Object.keys(readJson(args[1])).sort().join(",");
      if (keysA !== keysB) {
        process.stdout.write(`keys [${keysA}] vs [${keysB}]\n`);
        process.exit(1);
      }
      return;
    }
    case "digit": {
      if (args.length !== 3) die("usage: digit IN OUT KEY");
      const proof = readJson(args[0]);
      const value = String(proof[args[2]]?.[0] ?? "");
      if (!/^[0-9]+$/.test(value)) die(`${args[0]}: ${args[2]}[0] is not a decimal string`);
      const last = Number(value[value.length - 1]);
      proof[args[2]][0] = value.slice(0, -1) + String((last + 1) % 10);
      writeJson(args[1], proof);
      return;
    }
    case "swap": {
      if (args.length !== 4) die("usage: swap IN OUT KEY1 KEY2");
      const proof = readJson(args[0]);
      [proof[args[2]], proof[args[3]]] = [proof[args[3]], proof[args[2]]];
      writeJson(args[1], proof);
      return;
    }
    case "double-g1": {
      if (args.length !== 4) die("usage: double-g1 CURVE IN OUT KEY");
      const G1 = curveG1(args[0]);
      const proof = readJson(args[1]);
      const [x, y] = proof[args[3]].map((coordinate) => BigInt(coordinate));
      const doubled = G1.fromAffine({ x, y }).double().toAffine();
      proof[args[3]] = [doubled.x.toString(), doubled.y.toString(), "1"];
      writeJson(args[2], proof);
      return;
    }
    case "bump-public": {
      if (args.length !== 3) die("usage: bump-public IN OUT INDEX");
      const publicInputs = readJson(args[0]);
      const index = Number(args[2]);
      if (!Array.isArray(publicInputs) || index >= publicInputs.length) die(`${args[0]}: no public input ${index}`);
      publicInputs[index] = (BigInt(publicInputs[index]) + 1n).toString();
      writeJson(args[1], publicInputs);
      return;
    }
    case "drop-witness": {
      if (args.length !== 2) die("usage: drop-witness IN OUT");
      dropLastWitness(args[0], args[1]);
      return;
    }
    default:
      die(`unknown command ${command}; see the comment at the top of interop_util.js`);
  }
}

main(process.argv.slice(2));
