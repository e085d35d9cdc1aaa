// groth16_glue.h -- where the farm meets the Groth16 core: the wire
// encoding of proofs, and batched verification of partition proofs.
//
// Wire encoding (schema Result.proof): uncompressed affine points,
// coordinates canonical little-endian, A.x A.y B.x.c0 B.x.c1 B.y.c0 B.y.c1 C.x
// C.y, n8q bytes each (256 bytes on BN254, 384 on BLS12-381). Canonical
// rather than Montgomery so the bytes mean the same to every implementation.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "cluster/artifacts.h"
#include "formats/curve_id.h"
#include "kernels/curves.h"
#include "kernels/groth16_types.h"

namespace zkfarm {

template <class Curve>
std::string encode_proof(const Groth16Proof<Curve>& proof) {
  constexpr std::size_t n = Curve::Fq::kBytes;
  std::string out(8 * n, '\0');
  auto* p = reinterpret_cast<std::uint8_t*>(out.data());
  proof.a.x.to_le_bytes(p + 0 * n);
  proof.a.y.to_le_bytes(p + 1 * n);
  proof.b.x.c0.to_le_bytes(p + 2 * n);
  proof.b.x.c1.to_le_bytes(p + 3 * n);
  proof.b.y.c0.to_le_bytes(p + 4 * n);
  proof.b.y.c1.to_le_bytes(p + 5 * n);
  proof.c.x.to_le_bytes(p + 6 * n);
  proof.c.y.to_le_bytes(p + 7 * n);
  return out;
}

// Decodes encode_proof's bytes. Throws std::invalid_argument on a wrong size
// or a coordinate >= q. (On-curve and subgroup checks are the verifier's.)
template <class Curve>
Groth16Proof<Curve> decode_proof(std::span<const std::uint8_t> bytes) {
  using Fq = typename Curve::Fq;
  constexpr std::size_t n = Fq::kBytes;
  if (bytes.size() != 8 * n)
    throw std::invalid_argument("proof has " + std::to_string(bytes.size()) + " bytes, expected " +
                                std::to_string(8 * n) + " for " + Curve::kName);
  auto coord = [&](int i) {
    auto v = Fq::from_le_bytes(bytes.data() + i * n);
    if (!v) throw std::invalid_argument("proof coordinate " + std::to_string(i) + " is not below q");
    return *v;
  };
  Groth16Proof<Curve> proof;
  proof.a.x = coord(0);
  proof.a.y = coord(1);
  proof.b.x.c0 = coord(2);
  proof.b.x.c1 = coord(3);
  proof.b.y.c0 = coord(4);
  proof.b.y.c1 = coord(5);
  proof.c.x = coord(6);
  proof.c.y = coord(7);
  return proof;
}

// Verifies partition proofs for the coordinator. Verifying keys come from
// <store>/<id>/vk.json (written by circuit add; small, so the coordinator
// never reads multi-GB keys), checked against the sha256 in the circuit
// record, and cached. Thread-compatible: one verifier per thread.
class PartitionVerifier {
 public:
  struct Item {
    CircuitInfo circuit;
    std::string proof;  // wire encoding
    // The public inputs, canonical LE, back to back (Fr::kBytes each).
    std::vector<std::uint8_t> public_inputs;
  };
  struct Outcome {
    bool valid = false;
    std::string reason;       // why not, when !valid
    std::string proof_json;   // snarkjs proof.json, when valid
    std::string public_json;  // snarkjs public.json, when valid
    std::string compressed;   // Filecoin 192-byte encoding (BLS12-381 only), when valid
  };

  explicit PartitionVerifier(ArtifactStore store) : store_(std::move(store)) {}

  // Verifies items (any mix of circuits). Proofs of one circuit are checked
  // together with groth16_verify_batch; when a batch fails, each proof is
  // checked alone to find the bad ones. Returns one outcome per item, in
  // order. Never throws for bad proofs; throws std::runtime_error when a
  // verifying key cannot be loaded.
  std::vector<Outcome> verify(const std::vector<Item>& items);

 private:
  struct KeyCache;
  std::shared_ptr<KeyCache> key_for(const CircuitInfo& circuit);
  ArtifactStore store_;
  std::map<std::string, std::shared_ptr<KeyCache>> keys_;
};

}  // namespace zkfarm
