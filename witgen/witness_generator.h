// witness_generator.h -- circom's C++ witness generators as zkfarm artifacts:
// build one once, check it against its circuit, run it on a job's input in a
// sandboxed child process.
//
// A generator directory is what `circom --c` writes (<name>_cpp/): main.cpp,
// calcwit.cpp/.hpp, circom.hpp, fr.cpp/.hpp/.asm, <name>.cpp, <name>.dat.
// build_generator() compiles it (g++ and nasm, linked with libgmp; circom's
// main.cpp includes nlohmann/json.hpp) in a scratch copy -- the source
// directory is never written -- into two files of the output directory:
//   witness-generator       circom's program: `witness-generator in.json out.wtns`
//   witness-generator.dat   its constants (circom's main reads <argv[0]>.dat)
// and probes it with a small program of ours linked against the same
// objects, which prints the field prime, the witness size and the input
// signals, so the generator can be checked against the zkey before it is
// accepted (check_generator).
//
// Compilers run as child processes with an argument vector (no shell), like
// the generator itself. run_generator() treats the generator as hostile
// (anyone who may register a circuit ships one, and it runs on every
// worker): each run gets
//   - its own user, mount, PID, IPC, network and UTS namespaces (clone(2)
//     with CLONE_NEW*): the worker's uid is the only one mapped (to 1000
//     inside, so the generator holds no capabilities), the network is an
//     unconfigured loopback, and the file system is a read-only tmpfs root
//     holding /usr, the loader's /lib links and ld.so.cache (read-only),
//     a private copy of the generator's .dat at /gen (read-only; the
//     program itself runs from a sealed memory copy) and the run's
//     directory at /run (read-write, no exec) -- no /proc, /dev, /etc,
//     witness roots, artifact store or keys;
//   - an empty environment, every signal unblocked and at its default;
//   - a seccomp filter (seccomp_filter() in the .cc lists what it denies:
//     ptrace, process_vm_*, mount, namespaces, keyctl, bpf, perf,
//     io_uring, kexec, modules, ...);
//   - CPU-time, address-space, file-size (the circuit's witness size) and
//     core-dump limits and a wall-clock timeout;
//   - no inherited descriptors but stdin (/dev/null), stdout and stderr
//     (one pipe, read back and quoted in errors).
// The first process of the PID namespace is a small init of ours that
// forks the generator and reports its status: when init exits, or is
// killed at the timeout, the kernel kills whatever the generator left in
// the namespace (a setsid() child included), so nothing outlives a run.
// The witness is checked to be exactly the circuit's size before it is
// read.
//
// Why the kernel interfaces and not bubblewrap: the same namespaces and
// filter at the cost of one library already packaged with every Debian
// (libseccomp), no second program to install, find on PATH and keep in
// step on every worker host, no shelling out from the product, and a
// failure that names the exact step (mount, pivot_root, uid_map) in the
// worker's error. What a run costs: BENCHMARKS.md, "Witness generator
// sandbox".
//
// Where namespaces are unavailable (a container without user namespaces,
// a seccomp profile denying clone(CLONE_NEWUSER)) runs fail with a
// RunFailure naming the cause; check_sandbox() tells a worker at start.
// RunLimits::sandbox = false (the worker's --witgen-sandbox=off) runs the
// generator with the limits, empty environment and signal reset only.
//
// Thread safety: every function is safe to call from several threads at once
// (nothing shared; the fork()ed child only calls async-signal-safe functions
// before execv).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "formats/curve_id.h"

namespace zkfarm::witgen {

// A generator directory that cannot be used: missing or extra files, a
// compiler failure (the compiler's output quoted), a probe that fails, or a
// mismatch with the circuit. The message says what was expected and found.
class GeneratorError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The input was refused by the generator: a failed circuit assertion, an
// unknown signal, a wrong array size, a value the generator cannot parse, a
// crash, a timeout or the memory limit. what() quotes the generator's own
// message (at most kMaxQuotedOutput bytes of it).
class BadInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The run could not be attempted for a reason that is not the input's
// fault (no temporary directory, fork failed, binary missing).
class RunFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The generator's files are not the ones its circuit records (a sha256
// differs): nothing was run. what() names the file and both digests.
class GeneratorMismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr std::size_t kMaxQuotedOutput = 2048;
inline constexpr const char* kBinaryName = "witness-generator";

// What the probe reports about a built generator.
// One of the main component's input signals, as the generator's .dat lists
// them: circom finds an input.json key by the FNV-1a hash of its name.
struct InputSignal {
  std::uint64_t hash = 0;       // fnv1a64(name)
  std::uint64_t signal_id = 0;  // circom's signal number of its first element
  std::uint64_t size = 0;       // elements (an array input, flattened)
};

struct GeneratorInfo {
  std::string name;                // <name> of <name>.cpp
  CurveId curve = CurveId::kBn254;
  std::uint32_t witness_size = 0;  // values in the .wtns it writes (= the zkey's signals)
  std::uint32_t input_start = 0;   // witness index of the first input signal (1 + outputs)
  std::uint32_t input_count = 0;   // input signals, public and private
  std::vector<InputSignal> inputs;
  // Signal number of each leading witness value (indices 0 up to
  // input_start + input_count): where each public signal comes from.
  std::vector<std::uint64_t> witness_signals;
};

// Where a public input's value is in a partition's input.json: the key whose
// name hashes to `hash`, element `index` of its value flattened (nested
// arrays in order, as circom reads them).
struct PublicInputRef {
  std::uint64_t hash = 0;
  std::uint64_t index = 0;
};

// circom's hash of an input name (64-bit FNV-1a).
std::uint64_t fnv1a64(std::string_view text);

struct BuildOptions {
  std::string cxx = "g++";
  std::string nasm = "nasm";
  // circom's Makefile uses -O3; so do we (the witness time is what it buys).
  std::string optimize = "-O3";
};

// Compiles `source_dir` into `out_dir` (created; the two files are written
// under temporary names and renamed) and probes the result. Throws
// GeneratorError naming the directory and what is wrong.
GeneratorInfo build_generator(const std::string& source_dir, const std::string& out_dir,
                              const BuildOptions& options = {});

// The signal counts of a circuit's .r1cs header, when the operator gave one:
// the key alone says only how many signals are public, not how many of them
// are outputs, nor how many inputs are private.
struct SignalCounts {
  std::uint32_t outputs = 0;         // nPubOut
  std::uint32_t public_inputs = 0;   // nPubIn
  std::uint32_t private_inputs = 0;  // nPrvIn
};

// Throws GeneratorError unless `info` fits a circuit of `curve` with
// `num_vars` signals and `num_public` public signals (outputs + public
// inputs: at least the outputs, at most outputs + inputs). With `counts`
// (from the circuit's .r1cs) the check is exact: the generator's outputs
// and input signals must be the circuit's, one for one.
void check_generator(const GeneratorInfo& info, CurveId curve, std::uint32_t num_vars, std::uint32_t num_public,
                     const SignalCounts* counts = nullptr);

// The public inputs of a circuit of `num_public` public signals (the
// outputs first, then the public inputs): for each public signal, nothing
// for an output (the generator computes it) or where its value is in an
// input.json. With this the coordinator knows a partition's public inputs
// from its input alone and never takes a worker's word for them. Throws
// GeneratorError when a public signal after the outputs is not one of the
// generator's input signals.
std::vector<std::optional<PublicInputRef>> public_input_map(const GeneratorInfo& info, std::uint32_t num_public);

// The map as stored with the circuit (JSON: null for an output, [hash as
// 16 hex digits, index] for a public input), and back; parsing throws
// std::invalid_argument naming what is wrong.
std::string public_input_map_json(const std::vector<std::optional<PublicInputRef>>& map);
std::vector<std::optional<PublicInputRef>> parse_public_input_map(std::string_view text);

// The value of each public input of `map` in `input_json` (decimal, as
// written; check_input_values checks the range), and "" for each output.
// Throws std::invalid_argument when the input has no key for a public input
// or too few elements in it.
std::vector<std::string> public_input_values(std::string_view input_json,
                                             const std::vector<std::optional<PublicInputRef>>& map);

struct RunLimits {
  std::chrono::milliseconds timeout{60000};  // wall clock
  std::uint64_t cpu_seconds = 60;            // RLIMIT_CPU
  std::uint64_t memory_bytes = 4ull << 30;   // RLIMIT_AS
  std::uint64_t output_bytes = 8ull << 30;   // RLIMIT_FSIZE (the .wtns), at most the circuit's witness
  // Namespaces and seccomp (see the top of this file). Off only by an
  // operator's explicit choice (--witgen-sandbox=off): then rlimits only.
  bool sandbox = true;
};

// A generator to run: its program and the sha256s its circuit records for
// the program and for <binary>.dat. An empty digest is not compared (a
// generator the caller built itself); an empty dat_sha256 with no .dat
// file runs the program without one.
struct GeneratorFiles {
  std::string binary;
  std::string sha256 = "";
  std::string dat_sha256 = "";
};

// Runs the generator (its .dat beside it) on `input_json` in a new
// directory under `temp_parent`, sandboxed unless limits.sandbox is false,
// returns the .wtns bytes and removes the directory. Every run reads the
// program and its .dat once into sealed memory copies (base/sealed_copy.h),
// hashes them, and executes that very copy of the program (execveat) with
// a private copy of the .dat at /gen: a file replaced or rewritten in the
// store after the check is never what runs. `witness_bytes`: the size of
// the circuit's witness (wtns_file_bytes(num_vars)); a witness of another
// size is refused before it is read. Throws GeneratorMismatch (a digest
// differs: not run), BadInput (the input's fault, or a generator that
// misbehaved: message quoting the generator) or RunFailure (ours: no
// directory, no namespaces, binary missing or unreadable).
std::vector<std::uint8_t> run_generator(const GeneratorFiles& generator, std::string_view input_json,
                                        const std::string& temp_parent, const RunLimits& limits,
                                        std::uint64_t witness_bytes);

// Sets up a sandbox under `temp_parent` and runs /usr/bin/true in it: a
// worker's check at start. Throws RunFailure saying what is missing (user
// namespaces, mount permission, the seccomp filter) and what to do.
void check_sandbox(const std::string& temp_parent);

// Makes this process a child subreaper (PR_SET_CHILD_SUBREAPER):
// descendants of generator runs or builds orphaned by their parents are
// reparented here rather than to the host's init, and each run_generator()
// or build step reaps those that have exited. Throws RunFailure if the
// kernel refuses.
void become_subreaper();

// Checks an input.json document before any generator sees it: an object
// whose values are, at any depth of arrays and objects (circom buses), non-
// negative integers given as decimal strings or JSON integers, each below
// the field prime of `curve`. Throws std::invalid_argument naming the
// signal path ("b[1]: 2188... is not below the BN254 scalar field prime").
// circom's C++ code would reduce an out-of-field value and truncate 3.5;
// zkfarm refuses both, so every generator agrees on what an input means.
void check_input_values(std::string_view input_json, CurveId curve);

// The scalar field prime of a curve in decimal.
std::string_view field_prime_decimal(CurveId curve);

}  // namespace zkfarm::witgen
