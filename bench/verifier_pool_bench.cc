// verifier_pool_bench.cc -- the coordinator's proof verification alone: how
// many partition proofs per second its verifier pool (coordinator/
// verifier_pool.h) checks with 1, 2, ... threads, on real proofs.
//
//   bazel run //bench:verifier_pool_bench -- [--threads 1,2] [--proofs N]
//       [--rounds R] [--curve bn254|bls12381]
//
// Each round queues a backlog of N proofs (the fixture circuit's snarkjs
// proof, formats/testdata/bn128_* or bls12381_*) before the pool starts, as a
// coordinator's queue holds them when results come faster than it verifies,
// and times the pool until every outcome is back; the thread counts take
// turns within a round, so a noisy machine slows them alike. Prints one
// Markdown row per thread count: the median and best rounds, the median
// against the first count's, proofs per CPU-second (the pool's efficiency:
// equal for every count when threads do not get in each other's way) and the
// cores the rounds kept busy (what the machine's scheduler gave them). Exit 1 if a proof was refused (the fixture's are
// valid), 2 for bad flags.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "base/digest.h"
#include "coordinator/verifier_pool.h"
#include "formats/snarkjs_json.h"
#include "tests/harness/harness.h"

namespace {

using namespace zkfarm;
using Clock = std::chrono::steady_clock;

struct Request {
  PartitionVerifier::Item item;
};

template <class Curve>
PartitionVerifier::Item fixture_item(const std::string& store, const std::string& name, CurveId curve) {
  const std::string vk_text = read_text_file(testing::runfile("formats/testdata/" + name + "_verification_key.json"));
  std::filesystem::create_directories(store + "/" + name);
  std::ofstream(store + "/" + name + "/vk.json") << vk_text;
  PartitionVerifier::Item item;
  item.circuit.id = name;
  item.circuit.curve = curve;
  item.circuit.vk_path = ArtifactStore::vk_relative(name);
  item.circuit.vk_sha256 =
      sha256_hex(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(vk_text.data()), vk_text.size()));
  item.circuit.num_public = verification_key_from_json<Curve>(vk_text, name).num_public();
  item.proof = encode_proof<Curve>(read_proof<Curve>(testing::runfile("formats/testdata/" + name + "_proof.json")));
  for (const auto& x :
       read_public_signals<typename Curve::Fr>(testing::runfile("formats/testdata/" + name + "_public.json"))) {
    const std::size_t at = item.public_inputs.size();
    item.public_inputs.resize(at + Curve::Fr::kBytes);
    x.to_le_bytes(item.public_inputs.data() + at);
  }
  return item;
}

// This process's user + system CPU seconds so far.
double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

struct Round {
  double seconds = 0, cpu_seconds = 0;
};

// Wall and CPU seconds for a pool of `threads` to verify `proofs` copies of
// item queued before it starts; counts refused ones in *refused.
Round run_round(const std::string& store, const PartitionVerifier::Item& item, unsigned threads, std::size_t proofs,
                std::size_t* refused) {
  std::mutex mutex;
  std::condition_variable changed;
  std::size_t done = 0;
  VerifierPool<Request> pool(ArtifactStore(store), threads, [&](Request&&, PartitionVerifier::Outcome&& outcome) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!outcome.valid) ++*refused;
    if (++done == proofs) changed.notify_all();
  });
  for (std::size_t i = 0; i < proofs; ++i) pool.push(Request{item});
  const auto start = Clock::now();
  const double cpu_start = cpu_seconds();
  pool.start();
  std::unique_lock<std::mutex> lock(mutex);
  changed.wait(lock, [&] { return done == proofs; });
  return Round{std::chrono::duration<double>(Clock::now() - start).count(), cpu_seconds() - cpu_start};
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<unsigned> threads = {1, 2};
  std::size_t proofs = 400, rounds = 5;
  std::string curve = "bn254";
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      const std::string value = argv[++i];
      if (arg == "--threads") {
        threads.clear();
        std::stringstream list(value);
        for (std::string n; std::getline(list, n, ',');) threads.push_back(static_cast<unsigned>(std::stoul(n)));
      } else if (arg == "--proofs") {
        proofs = std::stoul(value);
      } else if (arg == "--rounds") {
        rounds = std::stoul(value);
      } else if (arg == "--curve") {
        curve = value;
      } else {
        throw std::invalid_argument("unknown argument " + arg +
                                    " (usage: verifier_pool_bench [--threads 1,2] [--proofs N] [--rounds R] "
                                    "[--curve bn254|bls12381])");
      }
    }
    if (curve != "bn254" && curve != "bls12381") throw std::invalid_argument("--curve: bn254 or bls12381");
    if (threads.empty() || proofs == 0 || rounds == 0) throw std::invalid_argument("nothing to run");
    for (unsigned t : threads)
      if (t == 0 || t > 256) throw std::invalid_argument("--threads: counts in 1..256");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "verifier_pool_bench: %s\n", e.what());
    return 2;
  }
  testing::TempDir dir;
  const PartitionVerifier::Item item = curve == "bn254"
                                           ? fixture_item<Bn254>(dir.path(), "bn128", CurveId::kBn254)
                                           : fixture_item<Bls12381>(dir.path(), "bls12381", CurveId::kBls12381);
  std::vector<std::vector<double>> rates(threads.size()), per_cpu(threads.size()), cores(threads.size());
  std::size_t refused = 0;
  for (std::size_t r = 0; r < rounds; ++r)
    for (std::size_t k = 0; k < threads.size(); ++k) {
      const Round round = run_round(dir.path(), item, threads[k], proofs, &refused);
      rates[k].push_back(static_cast<double>(proofs) / round.seconds);
      per_cpu[k].push_back(static_cast<double>(proofs) / round.cpu_seconds);
      cores[k].push_back(round.cpu_seconds / round.seconds);
    }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf(
      "| curve | verify threads | proofs per round x rounds | proofs/s median | best | median vs %u thread(s) | "
      "proofs per CPU-second median | cores busy median |\n"
      "|---|---|---|---|---|---|---|---|\n",
      threads[0]);
  for (std::size_t k = 0; k < threads.size(); ++k)
    std::printf("| %s | %u | %zu x %zu | %.0f | %.0f | %.2fx | %.0f | %.2f |\n", curve.c_str(), threads[k], proofs,
                rounds, median(rates[k]), *std::max_element(rates[k].begin(), rates[k].end()),
                median(rates[k]) / median(rates[0]), median(per_cpu[k]), median(cores[k]));
  if (refused > 0) {
    std::fprintf(stderr, "verifier_pool_bench: %zu valid proofs refused\n", refused);
    return 1;
  }
  return 0;
}
