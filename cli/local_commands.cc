// local_commands.cc -- prove, verify, setup and the other single-machine
// commands of the zkfarm CLI (see local_commands.h for the exit codes).
//
// Every command picks its curve from the files it is given (the zkey's or
// r1cs's prime, the JSON's "curve" field) and then runs a template
// instantiated for that curve; `prove` runs through the prover service
// (prover/prover.h), as the farm's workers do. Errors are exceptions inside;
// run_guarded turns them into one line on stderr and an exit code.
#include "cli/local_commands.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/files.h"
#include "cli/args.h"
#include "cli/progress.h"
#include "cli/run_guarded.h"
#include "circuits/groth16_setup.h"
#include "circuits/synthetic_circuit.h"
#include "formats/binfile.h"
#include "formats/pce.h"
#include "formats/r1cs.h"
#include "formats/snarkjs_json.h"
#include "formats/zkey.h"
#include "kernels/bls12_381_compress.h"
#include "kernels/curves.h"
#include "kernels/groth16_verifier.h"
#include "kernels/parallel.h"
#include "kernels/stopwatch.h"
#include "prover/prover.h"
#include "prover/prover_error.h"
#ifdef ZKFARM_HAS_CUDA
#include "circuits/setup_device.h"
#endif

namespace zkfarm::cli {
namespace {

// ---------------------------------------------------------------------------
// prove

const char kProveUsage[] =
    "zkfarm prove <circuit.zkey> <witness.wtns> <proof.json> <public.json> [options]";
const char kProveHelp[] =
    "usage: zkfarm prove <circuit.zkey> <witness.wtns> <proof.json> <public.json> [options]\n\n"
    "Proves with a snarkjs Groth16 key (BN254 or BLS12-381) and a circom witness;\n"
    "writes proof.json and public.json exactly as snarkjs does (rapidsnark's\n"
    "argument order, so zkfarm is a drop-in replacement).\n\n"
    "options:\n"
    "  --r1cs FILE     the circuit's .r1cs: every constraint is checked first and\n"
    "                  the first unsatisfied one is named\n"
    "  --pce FILE      use a PCE built by `zkfarm pce` instead of the key's\n"
    "                  coefficient section (faster start for big circuits)\n"
    "  --seed N        fixed blinding factors r, s derived from N (tests only)\n"
    "  --device N      prove on CUDA device N (key and PCE uploaded to it)\n"
    "  --device-memory-budget B  device memory to use at most (e.g. 24GiB; default\n"
    "                  none): key points that do not fit are streamed from pinned\n"
    "                  host memory at every proof (--timings shows the plan)\n"
    "  --msm-window-bits C  GPU MSM window bits, 2..24 (default auto: each\n"
    "                  MSM's cost-model choice)\n"
    "  --msm-waves W   GPU MSM bucket-accumulation waves, 1..64 (default auto)\n"
    "  --shifted-tables on|off  precomputed shifted H bases where the device\n"
    "                  has room, a small circuit's witness queries' too\n"
    "                  (default on; ZKFARM_SHIFTED_BASES=0 also turns them off)\n"
    "  --cpu           prove on the CPU even when a GPU is present\n"
    "  --timings       print per-stage seconds, host RAM and device memory use\n"
    "                  as JSON on stderr\n"
    "  --progress      progress lines on stderr even when it is not a terminal\n\n"
    "Without --device or --cpu, a build with CUDA proves on GPU 0 when this\n"
    "process sees one, else on the CPU; stderr says which. A device that does\n"
    "not exist is an error at start. Both backends give the same proof for the\n"
    "same --seed.\n\n"
    "Without --r1cs a witness that does not satisfy the circuit is caught by\n"
    "verifying the proof before writing it (exit 2, nothing written).\n"
    "exit: 0 proved; 2 bad input (an argument, a file, or a witness that does not\n"
    "fit or satisfy the circuit); 3 the machine failed (out of memory, a device\n"
    "fault): running again, or elsewhere, may succeed\n";

// Host memory of this process from /proc/self/status, in bytes: the current
// and the peak resident set (VmRSS, VmHWM); 0 where unavailable.
struct HostMemory {
  std::uint64_t rss = 0, peak_rss = 0;
};
HostMemory host_memory() {
  HostMemory m;
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    auto kib = [&](const char* key) -> std::uint64_t {
      return line.rfind(key, 0) == 0 ? std::stoull(line.substr(std::strlen(key))) * 1024 : 0;
    };
    if (auto v = kib("VmRSS:")) m.rss = v;
    if (auto v = kib("VmHWM:")) m.peak_rss = v;
  }
  return m;
}

// --device N, --cpu, or the default (GPU 0 when the build has CUDA and the
// process sees a device). Opens the device first thing, so a bad ordinal
// fails before any file is read. Says on stderr where the proof runs.
std::unique_ptr<prover::Prover> open_prover(const Args& args) {
  const std::optional<std::uint64_t> device = args.uint_option("device");
  if (device && args.flag("cpu")) throw UsageError("give at most one of --device N and --cpu");
  if (device && *device > 1023) throw UsageError("--device: no CUDA device " + std::to_string(*device));
  if (device || (!args.flag("cpu") && prover::Prover::cuda_device_count() > 0)) {
    prover::DeviceConfig config;
    try {
      config = prover::parse_device_config(args.option("device-memory-budget").value_or("none"),
                                           args.option("msm-window-bits").value_or("auto"),
                                           args.option("msm-waves").value_or("auto"),
                                           args.option("shifted-tables").value_or("on"));
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    if (prover::shifted_tables_off_by_environment(std::getenv("ZKFARM_SHIFTED_BASES"))) config.shifted_tables = false;
    auto on_device = prover::Prover::cuda(device ? int(*device) : 0, config);
    std::fprintf(stderr, "zkfarm prove: proving on the GPU, %s\n", on_device->device().summary.c_str());
    return on_device;
  }
  std::fprintf(stderr, "zkfarm prove: proving on the CPU (%zu threads)%s\n", parallel_threads(),
               args.flag("cpu") ? "" : ": no CUDA device");
  return prover::Prover::cpu();
}

// proof.json and public.json, written atomically and only once the proof
// passes the self-check (Prover::verify): nothing is written for a witness
// that does not satisfy the circuit. public.json's bytes follow from the
// witness alone, so its temp file is written and fsynced on a thread of its
// own while the proof runs (the constructor starts it); finish() writes and
// fsyncs proof.json's on a second thread while this one checks the proof,
// and renames both into place once the check and both fsyncs succeed. The
// fsyncs wait on the disk and the check is CPU: on this kind of disk an
// fsync took 0.1-4 ms, two in a row 3-20 ms under load, so after the proof
// only one remains, beside the ~1 ms check. Whatever did not reach the
// renames is removed by the writers' destructors.
class ProofOutputs {
 public:
  ProofOutputs(std::string proof_path, const std::string& public_path, const prover::PublicSignals& signals)
      : proof_path_(std::move(proof_path)) {
    std::string text = std::visit(
        [](const auto& typed) {
          using Fr = typename std::decay_t<decltype(typed)>::value_type;
          return public_signals_to_json<Fr>(std::span<const Fr>(typed));
        },
        signals);
    public_writer_ = std::thread([this, public_path, text = std::move(text)] {
      try {
        public_out_.emplace(public_path);
        public_out_->write(bytes(text));
        public_out_->sync();
      } catch (...) {
        public_error_ = std::current_exception();
      }
    });
  }
  ~ProofOutputs() {
    if (public_writer_.joinable()) public_writer_.join();
  }
  ProofOutputs(const ProofOutputs&) = delete;
  ProofOutputs& operator=(const ProofOutputs&) = delete;

  // Checks the proof while proof.json is written, then puts both files in
  // place. Throws the check's Error when it fails (the temp files are
  // removed), else the first write error (std::system_error naming the
  // file).
  void finish(const prover::Prover& prover, const prover::Circuit& circuit, const prover::Proof& proof,
              const std::string& witness_name, prover::Timings* timings) {
    const std::string proof_text = std::visit(
        [](const auto& typed) {
          using Curve = typename std::decay_t<decltype(typed)>::Curve;
          return proof_to_json<Curve>(typed.proof);
        },
        proof);
    std::optional<AtomicFileWriter> proof_out;
    std::exception_ptr proof_error;
    std::thread proof_writer([&] {
      try {
        proof_out.emplace(proof_path_);
        proof_out->write(bytes(proof_text));
        proof_out->sync();
      } catch (...) {
        proof_error = std::current_exception();
      }
    });
    try {
      prover.verify(circuit, proof, witness_name, timings);
    } catch (...) {
      proof_writer.join();
      throw;  // the writers' destructors remove the temp files
    }
    proof_writer.join();
    public_writer_.join();
    if (proof_error) std::rethrow_exception(proof_error);
    if (public_error_) std::rethrow_exception(public_error_);
    proof_out->commit();
    public_out_->commit();
  }

 private:
  static std::span<const std::uint8_t> bytes(const std::string& text) {
    return std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  }

  std::string proof_path_;
  std::optional<AtomicFileWriter> public_out_;
  std::exception_ptr public_error_;
  std::thread public_writer_;  // last: started after the members it uses exist
};

// The CLI's own stages around Prover::prove, for --timings.
struct CliTimings {
  double load = 0;   // the key (and PCE or .r1cs) read, checked and prepared
  double write = 0;  // proof.json and public.json written
};

void print_timings(const prover::Prover& prover, const prover::Circuit& circuit, const prover::Timings& timings,
                   const CliTimings& cli) {
  const prover::Device device = prover.device();
  const bool on_device = device.ordinal >= 0;
  const HostMemory host = host_memory();
  std::fprintf(stderr,
               "{\"backend\": \"%s\", \"load\": %.6f, \"parse_witness\": %.6f, \"witness_check\": %.6f, "
               "\"spmv\": %.6f, \"ntt\": %.6f, \"msm\": %.6f, \"total\": %.6f, \"verify\": %.6f, \"write\": %.6f, "
               "\"host_rss_bytes\": %llu, \"host_peak_rss_bytes\": %llu",
               device.backend.c_str(), cli.load, timings.parse_witness, timings.witness_check, timings.spmv,
               timings.ntt, timings.msm, timings.prove, timings.verify, cli.write,
               static_cast<unsigned long long>(host.rss), static_cast<unsigned long long>(host.peak_rss));
  if (on_device)
    std::fprintf(stderr,
                 ", \"upload_key_pce\": %.6f, \"upload_witness\": %.6f, \"device_resident_bytes\": %llu, "
                 "\"device_scratch_bytes\": %llu, \"device_used_bytes\": %llu, \"device_streamed_bytes\": %llu, "
                 "\"device_skipped_bytes\": %llu, \"device_pce_streamed_bytes\": %llu, "
                 "\"host_pinned_bytes\": %llu, \"memory_plan\": \"%s\"",
                 circuit.upload_seconds, timings.upload_witness,
                 static_cast<unsigned long long>(circuit.device_bytes),
                 static_cast<unsigned long long>(timings.device_scratch_bytes),
                 static_cast<unsigned long long>(prover.memory_used_bytes()),
                 static_cast<unsigned long long>(timings.device_streamed_bytes),
                 static_cast<unsigned long long>(timings.device_skipped_bytes),
                 static_cast<unsigned long long>(timings.device_pce_streamed_bytes),
                 static_cast<unsigned long long>(circuit.host_pinned_bytes), circuit.memory_plan.c_str());
  std::fprintf(stderr, "}\n");
}

int run_prove(const std::vector<std::string>& argv) {
  return run_guarded("prove", kProveUsage, [&] {
    Args args(argv, {"r1cs", "pce", "seed", "device", "device-memory-budget", "msm-window-bits", "msm-waves",
                     "shifted-tables"},
              {"timings", "progress", "cpu"});
    args.expect_positional(4, kProveUsage);
    const auto& pos = args.positional();
    std::unique_ptr<prover::Prover> prover = open_prover(args);
    Progress progress(args.flag("progress"));
    try {
      progress.step("loading circuit " + pos[0]);
      CliTimings cli_timings;
      Stopwatch clock;
      const auto circuit =
          prover->load({pos[0], args.option("pce").value_or(""), args.option("r1cs").value_or("")});
      cli_timings.load = clock.lap();
      progress.step("proving with " + pos[1]);
      prover::ProveRequest request;
      request.seed = args.uint_option("seed");
      prover::Timings timings;
      const auto witness = prover->prepare(*circuit, prover::Prover::open_witness(pos[1]));
      ProofOutputs outputs(pos[2], pos[3], prover::Prover::public_signals(*witness));
      const prover::Proof proof = prover->prove(*circuit, *witness, request, &timings);
      progress.step("checking the proof, writing " + pos[2] + " and " + pos[3]);
      clock.lap();
      outputs.finish(*prover, *circuit, proof, witness->name, &timings);
      cli_timings.write = clock.lap() - timings.verify;
      progress.finish();
      if (args.flag("timings")) print_timings(*prover, *circuit, timings, cli_timings);
      return 0;
    } catch (...) {
      progress.abort();
      throw;
    }
  });
}

// ---------------------------------------------------------------------------
// verify, verify-batch

const char kVerifyUsage[] = "zkfarm verify <verification_key.json> <public.json> <proof.json>";
const char kVerifyHelp[] =
    "usage: zkfarm verify <verification_key.json> <public.json> <proof.json>\n\n"
    "Verifies a Groth16 proof in snarkjs's JSON formats (snarkjs's argument\n"
    "order). The curve comes from the verification key.\n"
    "exit: 0 valid, 1 invalid, 2 error (malformed or mismatched input)\n";

int run_verify(const std::vector<std::string>& argv) {
  return run_guarded("verify", kVerifyUsage, [&] {
    Args args(argv, {}, {});
    args.expect_positional(3, kVerifyUsage);
    const auto& pos = args.positional();
    std::string vk_text = read_text_file(pos[0]);
    CurveId id = snarkjs_json_curve(vk_text, pos[0]);
    bool ok = dispatch_curve(id, [&](auto curve) {
      using Curve = decltype(curve);
      auto vk = verification_key_from_json<Curve>(vk_text, pos[0]);
      auto pub = read_public_signals<typename Curve::Fr>(pos[1]);
      std::string proof_text = read_text_file(pos[2]);
      if (snarkjs_json_curve(proof_text, pos[2]) != id)
        throw std::invalid_argument(pos[2] + ": proof is not on the key's curve " +
                                    curve_display_name(id));
      Groth16Proof<Curve> proof;
      try {
        proof = proof_from_json<Curve>(proof_text, pos[2]);
      } catch (const PointNotInGroupError& e) {
        std::printf("INVALID: %s\n", e.what());
        return false;
      }
      if (pub.size() != vk.num_public())
        throw std::invalid_argument(pos[1] + ": " + std::to_string(pub.size()) +
                                    " public signals, the key expects " +
                                    std::to_string(vk.num_public()));
      return groth16_verify<Curve>(vk, std::span<const typename Curve::Fr>(pub), proof);
    });
    if (ok) std::printf("OK: proof is valid\n");
    else std::printf("INVALID: proof does not verify\n");
    return ok ? 0 : 1;
  });
}

const char kVerifyBatchUsage[] =
    "zkfarm verify-batch <verification_key.json> <public1.json> <proof1.json> "
    "[<public2.json> <proof2.json> ...]";
const char kVerifyBatchHelp[] =
    "usage: zkfarm verify-batch <verification_key.json> <public1.json> <proof1.json> [...]\n\n"
    "Verifies several proofs of one circuit (e.g. the partitions of a Filecoin\n"
    "proof) at once with a random linear combination: k+3 pairings instead of 4k.\n"
    "exit: 0 all valid, 1 at least one invalid, 2 error\n";

int run_verify_batch(const std::vector<std::string>& argv) {
  return run_guarded("verify-batch", kVerifyBatchUsage, [&] {
    Args args(argv, {}, {});
    const auto& pos = args.positional();
    if (pos.size() < 3 || pos.size() % 2 != 1)
      throw UsageError("expected a key and pairs of public/proof files");
    std::string vk_text = read_text_file(pos[0]);
    CurveId id = snarkjs_json_curve(vk_text, pos[0]);
    bool ok = dispatch_curve(id, [&](auto curve) {
      using Curve = decltype(curve);
      using Fr = typename Curve::Fr;
      auto vk = verification_key_from_json<Curve>(vk_text, pos[0]);
      std::vector<std::vector<Fr>> publics;
      std::vector<Groth16Proof<Curve>> proofs;
      for (std::size_t i = 1; i < pos.size(); i += 2) {
        publics.push_back(read_public_signals<Fr>(pos[i]));
        try {
          proofs.push_back(read_proof<Curve>(pos[i + 1]));
        } catch (const PointNotInGroupError& e) {
          std::printf("INVALID: %s\n", e.what());
          return false;
        }
      }
      return groth16_verify_batch<Curve>(vk, std::span<const std::vector<Fr>>(publics),
                                         std::span<const Groth16Proof<Curve>>(proofs));
    });
    std::printf("%s\n", ok ? "OK: all proofs are valid" : "INVALID: the batch does not verify");
    return ok ? 0 : 1;
  });
}

// ---------------------------------------------------------------------------
// export-vk

const char kExportVkUsage[] = "zkfarm export-vk <circuit.zkey> <verification_key.json>";
const char kExportVkHelp[] =
    "usage: zkfarm export-vk <circuit.zkey> <verification_key.json>\n\n"
    "Writes the verification key of a Groth16 .zkey as snarkjs's\n"
    "`zkey export verificationkey` does.\nexit: 0 written, 2 error\n";

int run_export_vk(const std::vector<std::string>& argv) {
  return run_guarded("export-vk", kExportVkUsage, [&] {
    Args args(argv, {}, {});
    args.expect_positional(2, kExportVkUsage);
    const auto& pos = args.positional();
    CurveId id = zkey_curve(FileBytes::map(pos[0]));
    dispatch_curve(id, [&](auto curve) {
      using Curve = decltype(curve);
      ZkeyReadOptions options;
      options.validate_coefficients = false;  // not used here
      auto zkey = read_zkey<Curve>(pos[0], options);
      write_verification_key<Curve>(pos[1], zkey.verifying_key());
      return 0;
    });
    return 0;
  });
}

// ---------------------------------------------------------------------------
// setup

const char kSetupUsage[] = "zkfarm setup <circuit.r1cs> <circuit.zkey> [--seed N] [--device N]";
const char kSetupHelp[] =
    "usage: zkfarm setup <circuit.r1cs> <circuit.zkey> [--seed N] [--device N]\n\n"
    "TEST-ONLY Groth16 setup: makes a snarkjs-compatible proving key from an\n"
    ".r1cs with random toxic waste held by this one process. Anyone who kept\n"
    "the toxic waste could forge proofs: use it for tests and benchmarks, never\n"
    "for production keys (use a multi-party ceremony for those).\n\n"
    "options:\n"
    "  --seed N     derive the toxic waste from N (reproducible, NOT secret)\n"
    "  --device N   make the key's points on GPU N (same .zkey bytes as without)\n"
    "  --progress   progress lines even when stderr is not a terminal\n"
    "exit: 0 written, 2 error\n";

int run_setup_command(const std::vector<std::string>& argv) {
  return run_guarded("setup", kSetupUsage, [&] {
    Args args(argv, {"seed", "device"}, {"progress"});
    args.expect_positional(2, kSetupUsage);
    Progress progress(args.flag("progress"));
    Groth16SetupOptions options;
    options.seed = args.uint_option("seed");
    const std::optional<std::uint64_t> device = args.uint_option("device");
    std::fprintf(stderr, "zkfarm setup: TEST-ONLY key (toxic waste %s)\n",
                 options.seed ? "derived from --seed, NOT secret" : "from the OS CSPRNG, discarded");
    progress.step("setup");
    Groth16SetupReport report;
    if (device) {
#ifdef ZKFARM_HAS_CUDA
      report = cuda::run_setup_device(args.positional()[0], args.positional()[1], options, int(*device)).setup;
#else
      throw UsageError("--device: this zkfarm was built without CUDA");
#endif
    } else {
      report = run_setup(args.positional()[0], args.positional()[1], options);
    }
    progress.finish();
    std::fprintf(stderr,
                 "zkfarm setup: %s, %u signals, %u public, domain %u, %.2f s%s; wrote %s "
                 "(TEST-ONLY)\n",
                 curve_display_name(report.curve), report.num_vars, report.num_public,
                 report.domain_size, report.timings.total, device ? " (points on the GPU)" : "",
                 args.positional()[1].c_str());
    return 0;
  });
}

// ---------------------------------------------------------------------------
// gen-circuit

const char kGenCircuitUsage[] =
    "zkfarm gen-circuit --curve bn254|bls12381 --constraints N --r1cs FILE --wtns FILE "
    "[--public N] [--seed N]";
const char kGenCircuitHelp[] =
    "usage: zkfarm gen-circuit --curve bn254|bls12381 --constraints N --r1cs FILE\n"
    "                          --wtns FILE [--public N] [--seed N]\n\n"
    "Writes a satisfiable synthetic circuit (.r1cs v1) and its witness (.wtns v2)\n"
    "with the PoRep-32G partition profile: 328 public inputs (change with\n"
    "--public), about 2.4 / 1.0 / 2.2 non-zeros per row in A / B / C, about 25%\n"
    "of the private signals in B, and a witness of mostly 0/1 values.\n"
    "Deterministic for a given --seed (default 1).\nexit: 0 written, 2 error\n";

int run_gen_circuit(const std::vector<std::string>& argv) {
  return run_guarded("gen-circuit", kGenCircuitUsage, [&] {
    Args args(argv, {"curve", "constraints", "r1cs", "wtns", "public", "seed"}, {});
    args.expect_positional(0, kGenCircuitUsage);
    auto curve = args.option("curve");
    auto constraints = args.uint_option("constraints");
    auto r1cs = args.option("r1cs");
    auto wtns = args.option("wtns");
    if (!curve || !constraints || !r1cs || !wtns)
      throw UsageError("--curve, --constraints, --r1cs and --wtns are required");
    CurveId id;
    if (*curve == "bn254" || *curve == "bn128") id = CurveId::kBn254;
    else if (*curve == "bls12381" || *curve == "bls12-381") id = CurveId::kBls12381;
    else throw UsageError("--curve must be bn254 or bls12381, got '" + *curve + "'");
    SyntheticCircuitOptions options;
    options.num_constraints = *constraints;
    if (auto pub = args.uint_option("public")) options.num_public = std::uint32_t(*pub);
    if (auto seed = args.uint_option("seed")) options.seed = *seed;
    auto info = generate_synthetic_circuit(id, options, *r1cs, *wtns);
    std::fprintf(stderr, "zkfarm gen-circuit: %s, %llu constraints, %u wires, %u public\n",
                 curve_display_name(id), (unsigned long long)info.num_constraints, info.num_wires,
                 info.num_public);
    return 0;
  });
}

// ---------------------------------------------------------------------------
// pce

const char kPceUsage[] = "zkfarm pce <circuit.zkey|circuit.r1cs> <out.pce>";
const char kPceHelp[] =
    "usage: zkfarm pce <circuit.zkey|circuit.r1cs> <out.pce>\n\n"
    "Builds the pre-compiled constraint evaluator (CSR matrices A, B and, from an\n"
    ".r1cs, C) once, for `zkfarm prove --pce` and the farm's workers.\n"
    "exit: 0 written, 2 error\n";

int run_pce(const std::vector<std::string>& argv) {
  return run_guarded("pce", kPceUsage, [&] {
    Args args(argv, {}, {});
    args.expect_positional(2, kPceUsage);
    const auto& pos = args.positional();
    auto file = FileBytes::map(pos[0]);
    auto bytes = file->bytes();
    std::string magic(bytes.begin(), bytes.begin() + std::min<std::size_t>(4, bytes.size()));
    if (magic == "r1cs") {
      dispatch_curve(r1cs_curve(file), [&](auto curve) {
        using Fr = typename decltype(curve)::Fr;
        save_pce(pce_from_r1cs(parse_r1cs<Fr>(file)), pos[1]);
        return 0;
      });
    } else {
      dispatch_curve(zkey_curve(file), [&](auto curve) {
        using Curve = decltype(curve);
        auto zkey = parse_zkey<Curve>(file);
        save_pce(pce_from_zkey(zkey.coefficients, zkey.num_public), pos[1]);
        return 0;
      });
    }
    return 0;
  });
}

// ---------------------------------------------------------------------------
// plan

const char kPlanUsage[] =
    "zkfarm plan <circuit.zkey> --device-memory-budget B[,B...] [--pce FILE | --r1cs FILE] [--json]";
const char kPlanHelp[] =
    "usage: zkfarm plan <circuit.zkey> --device-memory-budget B[,B...] [--pce FILE | --r1cs FILE] [--json]\n\n"
    "What a GPU worker would do with the circuit under each device memory budget\n"
    "(e.g. 141GB,80GiB,24GiB,16GiB; `none` for no budget): which of the proving\n"
    "key's points and the PCE stay on the device, how many bytes of key cross\n"
    "PCIe at every proof, and the page-locked host memory the worker holds; or,\n"
    "when the circuit cannot be proved within a budget even with its key and PCE\n"
    "in host memory, how much it needs. Needs no GPU: the plan is the worker's own\n"
    "(kernels/cuda/memory_plan.h), made from the key's and PCE's sizes. The PCE\n"
    "is the one `zkfarm prove` would use (--pce, --r1cs, else from the key).\n"
    "--json: one JSON array on stdout, an object per budget (budget, budget_bytes,\n"
    "fits, plan, needed_bytes, device_peak_bytes, resident_bytes, streamed_bytes,\n"
    "host_pinned_bytes; 0 budget_bytes: no budget).\n"
    "exit: 0 every budget fits, 1 some budget does not, 2 error\n";

int run_plan(const std::vector<std::string>& argv) {
  return run_guarded("plan", kPlanUsage, [&] {
    Args args(argv, {"pce", "r1cs", "device-memory-budget"}, {"json"});
    args.expect_positional(1, kPlanUsage);
    const bool json = args.flag("json");
    const auto text = args.option("device-memory-budget");
    if (!text) throw UsageError("--device-memory-budget is required (one budget or a comma-separated list)");
    std::vector<std::size_t> budgets;
    std::vector<std::string> names;
    for (std::size_t at = 0; at <= text->size();) {
      const std::size_t comma = std::min(text->find(',', at), text->size());
      const std::string item = text->substr(at, comma - at);
      std::size_t budget = 0;
      try {
        budget = prover::parse_device_budget(item);
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--device-memory-budget: ") + e.what());
      }
      if (budget == prover::kAutoDeviceBudget)
        throw UsageError("--device-memory-budget: 'auto' is the free memory of a device at start; give a size");
      budgets.push_back(budget);
      names.push_back(item);
      at = comma + 1;
    }
    const auto& pos = args.positional();
    const auto circuit = prover::Prover::cpu()->load(
        {pos[0], args.option("pce").value_or(""), args.option("r1cs").value_or("")});
    auto gib = [](std::uint64_t b) { return double(b) / double(std::uint64_t(1) << 30); };
    if (!json)
      std::printf("%s: %s, %u signals (%u public)\n", pos[0].c_str(), curve_name(circuit->curve()),
                  circuit->num_vars(), circuit->num_public());
    int status = 0;
    nlohmann::json plans = nlohmann::json::array();
    for (std::size_t i = 0; i < budgets.size(); ++i) {
      const prover::DeviceMemoryPlan plan = prover::plan_device_memory(*circuit, budgets[i]);
      if (!plan.fits) status = 1;
      if (json) {
        plans.push_back({{"budget", names[i]},
                         {"budget_bytes", plan.budget},
                         {"fits", plan.fits},
                         {"plan", plan.summary},
                         {"needed_bytes", plan.needed_bytes},
                         {"device_peak_bytes", plan.device_peak_bytes},
                         {"resident_bytes", plan.resident_bytes},
                         {"streamed_bytes", plan.streamed_bytes},
                         {"host_pinned_bytes", plan.host_pinned_bytes}});
        continue;
      }
      if (!plan.fits) {
        std::printf("%s: does not fit: %s\n", names[i].c_str(), plan.summary.c_str());
        continue;
      }
      std::printf("%s: %s; page-locked host memory %.2f GiB\n", names[i].c_str(), plan.summary.c_str(),
                  gib(plan.host_pinned_bytes));
    }
    if (json) std::printf("%s\n", plans.dump().c_str());
    return status;
  });
}

// ---------------------------------------------------------------------------
// encode-proof, decode-proof (Filecoin's 192-byte BLS12-381 encoding)

const char kEncodeUsage[] = "zkfarm encode-proof <proof1.json> [<proof2.json> ...] <out.bin>";
const char kEncodeHelp[] =
    "usage: zkfarm encode-proof <proof1.json> [<proof2.json> ...] <out.bin>\n\n"
    "Writes BLS12-381 proofs in Filecoin's compressed encoding: per proof A (48\n"
    "bytes), B (96), C (48), concatenated in argument order (partition order).\n"
    "exit: 0 written, 2 error\n";

int run_encode_proof(const std::vector<std::string>& argv) {
  return run_guarded("encode-proof", kEncodeUsage, [&] {
    Args args(argv, {}, {});
    const auto& pos = args.positional();
    if (pos.size() < 2) throw UsageError("expected at least one proof and an output file");
    std::string out;
    for (std::size_t i = 0; i + 1 < pos.size(); ++i) {
      std::string text = read_text_file(pos[i]);
      if (snarkjs_json_curve(text, pos[i]) != CurveId::kBls12381)
        throw std::invalid_argument(pos[i] + ": the 192-byte encoding is for BLS12-381 proofs");
      const auto bytes = bls12_381::compress_proof(proof_from_json<Bls12381>(text, pos[i]));
      out.append(bytes.begin(), bytes.end());
    }
    write_file_atomically(pos.back(), out);
    return 0;
  });
}

const char kDecodeUsage[] = "zkfarm decode-proof <in.bin> <out-prefix>";
const char kDecodeHelp[] =
    "usage: zkfarm decode-proof <in.bin> <out-prefix>\n\n"
    "Reads concatenated 192-byte BLS12-381 proofs (Filecoin's encoding) and writes\n"
    "<out-prefix><i>.json in snarkjs's format, one per partition. Every point is\n"
    "checked (flags, on the curve, in the subgroup).\nexit: 0 written, 2 error\n";

int run_decode_proof(const std::vector<std::string>& argv) {
  return run_guarded("decode-proof", kDecodeUsage, [&] {
    Args args(argv, {}, {});
    args.expect_positional(2, kDecodeUsage);
    const auto& pos = args.positional();
    std::string bytes = read_file(pos[0]);
    constexpr std::size_t kProofBytes = bls12_381::kProofCompressedBytes;
    if (bytes.empty() || bytes.size() % kProofBytes != 0)
      throw std::invalid_argument(pos[0] + ": expected a multiple of 192 bytes, found " +
                                  std::to_string(bytes.size()));
    const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
    for (std::size_t i = 0; i < bytes.size() / kProofBytes; ++i, p += kProofBytes) {
      Groth16Proof<Bls12381> proof;
      try {
        proof = bls12_381::decompress_proof(std::span<const std::uint8_t>(p, kProofBytes));
      } catch (const std::exception& e) {
        throw std::invalid_argument(pos[0] + ": proof " + std::to_string(i) + ": " + e.what());
      }
      write_proof<Bls12381>(pos[1] + std::to_string(i) + ".json", proof);
    }
    return 0;
  });
}

}  // namespace

const std::vector<Command>& local_commands() {
  static const std::vector<Command> commands = {
      {"prove", "prove with a .zkey and a .wtns (rapidsnark's arguments)", kProveHelp, run_prove},
      {"verify", "verify a proof (snarkjs's arguments); exit 0 valid, 1 invalid", kVerifyHelp,
       run_verify},
      {"verify-batch", "verify many proofs of one circuit at once", kVerifyBatchHelp,
       run_verify_batch},
      {"setup", "TEST-ONLY Groth16 setup of an .r1cs into a .zkey", kSetupHelp,
       run_setup_command},
      {"export-vk", "write a .zkey's verification_key.json", kExportVkHelp, run_export_vk},
      {"gen-circuit", "write a synthetic PoRep-profile circuit and witness", kGenCircuitHelp,
       run_gen_circuit},
      {"pce", "build a circuit's pre-compiled constraint evaluator", kPceHelp, run_pce},
      {"plan", "a circuit's device memory plan under given budgets (no GPU needed)", kPlanHelp, run_plan},
      {"encode-proof", "BLS12-381 proofs to Filecoin's 192-byte encoding", kEncodeHelp,
       run_encode_proof},
      {"decode-proof", "Filecoin's 192-byte encoding to proof.json files", kDecodeHelp,
       run_decode_proof},
  };
  return commands;
}

}  // namespace zkfarm::cli
