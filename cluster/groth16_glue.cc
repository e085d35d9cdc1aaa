// groth16_glue.cc -- see groth16_glue.h.
#include "cluster/groth16_glue.h"

#include <variant>

#include "base/digest.h"

#include "formats/snarkjs_json.h"
#include "kernels/bls12_381_compress.h"
#include "kernels/groth16_verifier.h"

namespace zkfarm {

struct PartitionVerifier::KeyCache {
  std::variant<Groth16VerifyingKey<Bn254>, Groth16VerifyingKey<Bls12381>> key;
  template <class Curve>
  const Groth16VerifyingKey<Curve>& get() const {
    return std::get<Groth16VerifyingKey<Curve>>(key);
  }
};

std::shared_ptr<PartitionVerifier::KeyCache> PartitionVerifier::key_for(const CircuitInfo& circuit) {
  if (auto it = keys_.find(circuit.id); it != keys_.end()) return it->second;
  const std::string path = store_.absolute(circuit.vk_path);
  std::string text = read_text_file(path);
  const std::string digest = sha256_hex(
      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
  if (!circuit.vk_sha256.empty() && digest != circuit.vk_sha256)
    throw std::runtime_error(path + ": sha256 " + digest + " does not match the circuit record's " +
                             circuit.vk_sha256);
  auto cache = std::make_shared<KeyCache>();
  cache->key = dispatch_curve(circuit.curve, [&](auto curve) -> decltype(KeyCache::key) {
    return verification_key_from_json<decltype(curve)>(text, path);
  });
  if (std::visit([](const auto& vk) { return vk.num_public(); }, cache->key) != circuit.num_public)
    throw std::runtime_error(path + ": verifying key's public input count differs from the circuit record");
  keys_[circuit.id] = cache;
  return cache;
}

namespace {

template <class Curve>
void verify_group(const Groth16VerifyingKey<Curve>& vk, const std::vector<PartitionVerifier::Item>& items,
                  const std::vector<std::size_t>& group, std::vector<PartitionVerifier::Outcome>& out) {
  using Fr = typename Curve::Fr;
  std::vector<Groth16Proof<Curve>> proofs;
  std::vector<std::vector<Fr>> inputs;
  std::vector<std::size_t> decoded;  // indices into items with decodable input
  for (std::size_t i : group) {
    const auto& item = items[i];
    try {
      auto proof = decode_proof<Curve>(std::span<const std::uint8_t>(
          reinterpret_cast<const std::uint8_t*>(item.proof.data()), item.proof.size()));
      std::vector<Fr> x;
      if (item.public_inputs.size() % Fr::kBytes != 0)
        throw std::invalid_argument("public inputs are not a whole number of field elements");
      for (std::size_t offset = 0; offset < item.public_inputs.size(); offset += Fr::kBytes) {
        auto v = Fr::from_le_bytes(item.public_inputs.data() + offset);
        if (!v) throw std::invalid_argument("public input is not below r");
        x.push_back(*v);
      }
      proofs.push_back(proof);
      inputs.push_back(std::move(x));
      decoded.push_back(i);
    } catch (const std::exception& e) {
      out[i].valid = false;
      out[i].reason = e.what();
    }
  }
  if (decoded.empty()) return;
  bool batch_ok = false;
  try {
    batch_ok = groth16_verify_batch<Curve>(vk, std::span<const std::vector<Fr>>(inputs),
                                           std::span<const Groth16Proof<Curve>>(proofs));
  } catch (const std::exception&) {
    batch_ok = false;  // find the culprit one by one below
  }
  for (std::size_t k = 0; k < decoded.size(); ++k) {
    const std::size_t i = decoded[k];
    bool ok = batch_ok;
    if (!batch_ok) {
      try {
        ok = groth16_verify<Curve>(vk, std::span<const Fr>(inputs[k]), proofs[k]);
        if (!ok) out[i].reason = "proof failed the pairing check";
      } catch (const std::exception& e) {
        ok = false;
        out[i].reason = e.what();
      }
    }
    out[i].valid = ok;
    if (!ok) continue;
    out[i].proof_json = proof_to_json<Curve>(proofs[k]);
    out[i].public_json = public_signals_to_json<Fr>(std::span<const Fr>(inputs[k]));
    if constexpr (std::is_same_v<Curve, Bls12381>) {
      const auto bytes = bls12_381::compress_proof(proofs[k]);
      out[i].compressed.assign(bytes.begin(), bytes.end());
    }
  }
}

}  // namespace

std::vector<PartitionVerifier::Outcome> PartitionVerifier::verify(const std::vector<Item>& items) {
  std::vector<Outcome> out(items.size());
  std::map<std::string, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < items.size(); ++i) groups[items[i].circuit.id].push_back(i);
  for (const auto& [id, group] : groups) {
    const CircuitInfo& circuit = items[group.front()].circuit;
    auto key = key_for(circuit);
    dispatch_curve(circuit.curve, [&](auto curve) {
      using Curve = decltype(curve);
      verify_group<Curve>(key->template get<Curve>(), items, group, out);
      return 0;
    });
  }
  return out;
}

}  // namespace zkfarm
