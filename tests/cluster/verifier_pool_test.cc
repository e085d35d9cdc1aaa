// verifier_pool_test.cc -- the verifier pool with one and several threads on
// real proofs (the snarkjs fixtures of both curves), valid and tampered,
// several circuits mixed: every valid proof accepted, every bad one rejected
// with a reason, each in its own request, and proofs checked in batches.
#include "coordinator/verifier_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "base/digest.h"
#include "formats/snarkjs_json.h"

namespace zkfarm {
namespace {

namespace fs = std::filesystem;

struct Request {
  std::size_t index = 0;  // into the test's expectations
  PartitionVerifier::Item item;
};

struct Fixture {
  CircuitInfo circuit;
  std::string proof;                        // wire encoding
  std::vector<std::uint8_t> public_inputs;  // canonical LE
};

// Registers the fixture's verifying key in store under id (a circuit record
// as `circuit add` writes it, reduced to what the verifier reads) and reads
// its proof and public signals.
template <class Curve>
Fixture load_fixture(const fs::path& store, const std::string& id, const std::string& name, CurveId curve) {
  const std::string vk_text = read_text_file("formats/testdata/" + name + "_verification_key.json");
  fs::create_directories(store / id);
  std::ofstream(store / id / "vk.json") << vk_text;
  Fixture f;
  f.circuit.id = id;
  f.circuit.curve = curve;
  f.circuit.vk_path = ArtifactStore::vk_relative(id);
  f.circuit.vk_sha256 =
      sha256_hex(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(vk_text.data()), vk_text.size()));
  f.circuit.num_public = verification_key_from_json<Curve>(vk_text, name).num_public();
  f.proof = encode_proof<Curve>(read_proof<Curve>("formats/testdata/" + name + "_proof.json"));
  for (const auto& x : read_public_signals<typename Curve::Fr>("formats/testdata/" + name + "_public.json")) {
    const std::size_t at = f.public_inputs.size();
    f.public_inputs.resize(at + Curve::Fr::kBytes);
    x.to_le_bytes(f.public_inputs.data() + at);
  }
  return f;
}

class VerifierPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    store_ = fs::path(tmp ? tmp : "/tmp") / "verifier_pool_store";
    fs::remove_all(store_);
    // Two circuits per curve (the same key under two ids): batches group by
    // circuit, so a request mix of four circuits makes four groups.
    fixtures_ = {load_fixture<Bn254>(store_, "bn-a", "bn128", CurveId::kBn254),
                 load_fixture<Bn254>(store_, "bn-b", "bn128", CurveId::kBn254),
                 load_fixture<Bls12381>(store_, "bls-a", "bls12381", CurveId::kBls12381),
                 load_fixture<Bls12381>(store_, "bls-b", "bls12381", CurveId::kBls12381)};
  }

  // n requests over the four circuits; every fifth has a wrong public input
  // (a well-formed proof the pairing check refuses), every seventh a proof
  // cut short (refused before any pairing). expected_[i]: request i valid.
  std::vector<Request> requests(std::size_t n) {
    std::vector<Request> out;
    expected_.assign(n, true);
    for (std::size_t i = 0; i < n; ++i) {
      const Fixture& f = fixtures_[i % fixtures_.size()];
      Request r{i, {f.circuit, f.proof, f.public_inputs}};
      if (i % 5 == 3) {
        r.item.public_inputs[0] ^= 1;  // still below r: the low byte of a small value
        expected_[i] = false;
      } else if (i % 7 == 6) {
        r.item.proof.pop_back();
        expected_[i] = false;
      }
      out.push_back(std::move(r));
    }
    return out;
  }

  struct Seen {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<int> valid;  // -1 not yet, 0 rejected, 1 accepted
    std::vector<std::string> reasons;
    std::size_t done = 0, batches = 0, batched_proofs = 0, largest_batch = 0;
    std::set<std::thread::id> verifying_threads;
  };

  // Runs n requests through a pool of `threads`, all queued before it starts
  // (a backlog). Waits until every request is answered.
  void run(unsigned threads, std::size_t n, Seen& seen) {
    seen.valid.assign(n, -1);
    seen.reasons.assign(n, "");
    VerifierPool<Request> pool(
        ArtifactStore(store_.string()), threads,
        [&](Request&& r, PartitionVerifier::Outcome&& o) {
          std::lock_guard<std::mutex> lock(seen.mutex);
          EXPECT_EQ(seen.valid.at(r.index), -1) << "request " << r.index << " answered twice";
          seen.valid.at(r.index) = o.valid ? 1 : 0;
          seen.reasons.at(r.index) = o.reason;
          if (o.valid) {
            EXPECT_NE(o.proof_json.find("pi_a"), std::string::npos);
          }
          ++seen.done;
          seen.changed.notify_all();
        },
        [&](CurveId, std::size_t proofs, double seconds) {
          std::lock_guard<std::mutex> lock(seen.mutex);
          EXPECT_GE(seconds, 0);
          ++seen.batches;
          seen.verifying_threads.insert(std::this_thread::get_id());
          seen.batched_proofs += proofs;
          seen.largest_batch = std::max(seen.largest_batch, proofs);
        });
    for (auto& r : requests(n)) pool.push(std::move(r));
    pool.start();
    std::unique_lock<std::mutex> lock(seen.mutex);
    ASSERT_TRUE(seen.changed.wait_for(lock, std::chrono::minutes(2), [&] { return seen.done == n; }))
        << seen.done << " of " << n << " answered";
  }

  void expect_outcomes(const Seen& seen) {
    for (std::size_t i = 0; i < expected_.size(); ++i) {
      EXPECT_EQ(seen.valid[i], expected_[i] ? 1 : 0) << "request " << i << ": " << seen.reasons[i];
      if (!expected_[i]) {
        EXPECT_FALSE(seen.reasons[i].empty()) << "request " << i << " rejected without a reason";
      }
    }
  }

  fs::path store_;
  std::vector<Fixture> fixtures_;
  std::vector<bool> expected_;
};

TEST_F(VerifierPoolTest, OneThreadTakesTheWholeBacklogAsOneBatchPerCurve) {
  Seen seen;
  run(1, 40, seen);
  expect_outcomes(seen);
  EXPECT_EQ(seen.batches, 2u) << "one verify() per curve for a backlog taken at once";
  EXPECT_EQ(seen.batched_proofs, 40u);
}

TEST_F(VerifierPoolTest, SeveralThreadsShareABacklogAndStillRejectEveryBadProof) {
  Seen seen;
  run(4, 120, seen);
  expect_outcomes(seen);
  EXPECT_EQ(seen.batched_proofs, 120u) << "every proof checked once";
  EXPECT_GT(seen.largest_batch, 1u) << "a backlog is verified in batches, not proof by proof";
  EXPECT_GE(seen.verifying_threads.size(), 2u) << "a backlog is shared between the threads";
  EXPECT_GE(seen.batches, 2u);
}

TEST_F(VerifierPoolTest, AnUnusableVerifyingKeyRejectsItsProofsWithTheReason) {
  std::ofstream(store_ / "bn-a" / "vk.json") << "{}";  // no longer the recorded sha256
  Seen seen;
  run(2, 8, seen);
  for (std::size_t i = 0; i < 8; ++i) {
    if (i % 4 == 0) {  // bn-a: every one refused, saying why
      EXPECT_EQ(seen.valid[i], 0) << "request " << i;
      EXPECT_NE(seen.reasons[i].find("verifier: "), std::string::npos) << seen.reasons[i];
    }
  }
}

TEST_F(VerifierPoolTest, AShortQueueGoesToOneThreadAsOneBatch) {
  Seen seen;
  run(4, 10, seen);  // under kVerifyMinShare: one thread takes it all
  expect_outcomes(seen);
  EXPECT_EQ(seen.batches, 2u) << "one verify() per curve";
  EXPECT_EQ(seen.batched_proofs, 10u);
}

TEST(VerifierPool, RefusesZeroThreads) {
  EXPECT_THROW(VerifierPool<Request>(ArtifactStore("/nonexistent"), 0, [](Request&&, PartitionVerifier::Outcome&&) {}),
               std::invalid_argument);
}

}  // namespace
}  // namespace zkfarm
