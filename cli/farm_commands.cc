// farm_commands.cc -- circuit add, submit, status, wait, result, workers,
// cancel and keygen (see farm_commands.h for the options and exit codes).
//
// The commands are thin: validation, Redis transitions and the key layout
// live in cluster/farm_api.h, so the CLI, the tests and any other client
// share one implementation. This file turns arguments into FarmOptions and
// job JSON, and results into files and readable output.
#include "cli/farm_commands.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "base/digest.h"
#include "base/files.h"
#include "base/hex.h"
#include "cli/args.h"
#include "cli/run_guarded.h"
#include "cluster/artifacts.h"
#include "cluster/curve_keys.h"
#include "cluster/defaults.h"
#include "cluster/farm_api.h"
#include "schema/job.h"
#include "cluster/job_result.h"
#include "base/redact.h"
#include "cluster/redis_client.h"
#include "cluster/tenants.h"
#include "formats/binfile.h"

namespace zkfarm::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr int kExitOk = 0;
constexpr int kExitJobFailed = 1;

// run_guarded, with the farm's own errors saying what they are. Redis
// messages never carry the password (RedisUrl::redacted).
int run_farm_guarded(const char* command, const char* usage, const std::function<int()>& body) {
  return run_guarded(command, usage, [&] {
    try {
      return body();
    } catch (const JobError& e) {
      throw std::runtime_error(std::string("invalid job: ") + e.what());
    } catch (const RedisError& e) {
      throw std::runtime_error(std::string("Redis: ") + e.what());
    }
  });
}

// An input problem found by the CLI itself (missing file, unknown job): one
// line on stderr, exit 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------------
// Options shared by every farm command

const std::set<std::string> kFarmOptions = {"redis", "prefix", "artifacts"};

#define ZKFARM_FARM_OPTIONS_HELP                                                              \
  "farm options:\n"                                                                          \
  "  --redis URL       redis://[user[:password]@]host[:port][/db]; default $ZKFARM_REDIS,\n" \
  "                    then " ZKFARM_DEFAULT_REDIS_URL "\n"                                  \
  "  --prefix P        Redis key prefix; default $ZKFARM_PREFIX, then " ZKFARM_DEFAULT_KEY_PREFIX "\n" \
  "  --artifacts DIR   artifact store root; default $ZKFARM_ARTIFACTS\n"

std::set<std::string> with_farm_options(std::set<std::string> extra) {
  extra.insert(kFarmOptions.begin(), kFarmOptions.end());
  return extra;
}

std::string option_or_env(const Args& args, const std::string& name, const char* env, const std::string& fallback) {
  if (auto v = args.option(name)) return *v;
  if (const char* e = std::getenv(env); e && *e) return e;
  return fallback;
}

farm::FarmOptions farm_options(const Args& args) {
  farm::FarmOptions options;
  options.redis_url = option_or_env(args, "redis", "ZKFARM_REDIS", kDefaultRedisUrl);
  options.prefix = option_or_env(args, "prefix", "ZKFARM_PREFIX", kDefaultKeyPrefix);
  options.artifacts = option_or_env(args, "artifacts", "ZKFARM_ARTIFACTS", "");
  try {
    RedisUrl::parse(options.redis_url);
  } catch (const std::exception& e) {
    throw UsageError(std::string("--redis: ") + e.what());
  }
  try {
    KeyLayout check(options.prefix);
  } catch (const std::exception& e) {
    throw UsageError(std::string("--prefix: ") + e.what());
  }
  return options;
}

// The "file://" URL of a local witness file (made absolute), for the job.
std::string witness_file_url(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw InputError(path + ": no such witness file");
  return zkfarm::file_url(fs::absolute(path).lexically_normal().string());
}

std::string not_found(const std::string& id) {
  return "no job " + id + " (never submitted, or expired after its TTL)";
}

// ---------------------------------------------------------------------------
// circuit add

const char kCircuitUsage[] =
    "zkfarm circuit add <circuit.zkey> [--r1cs circuit.r1cs] [--witness-generator DIR "
    "[--replace-witness-generator]] [--json] | zkfarm circuit share|unshare <circuit-id> <tenant>...|all";
const char kCircuitHelp[] =
    "usage: zkfarm circuit add <circuit.zkey> [--r1cs circuit.r1cs] [--witness-generator DIR\n"
    "                          [--replace-witness-generator]] [--json] [farm options]\n\n"
    "Registers a circuit with the farm: its id is the sha256 of the zkey; the\n"
    "zkey is copied into the artifact store, the PCE (the prover's constraint\n"
    "matrices) and the verifying key are built beside it, and Redis records\n"
    "the circuit. Prints the circuit id (with --json, the whole record).\n"
    "Adding the same zkey again is harmless.\n\n"
    "options:\n"
    "  --r1cs FILE       build the PCE from the circuit's .r1cs: workers then check\n"
    "                    every constraint and name the first unsatisfied one\n"
    "  --witness-generator DIR\n"
    "                    the circuit's C++ witness generator, as `circom --c` writes\n"
    "                    it (<name>_cpp/): built here (g++, nasm, libgmp) into the\n"
    "                    artifact store and checked against the zkey (prime, signals,\n"
    "                    public inputs; with --r1cs, exactly: its outputs and\n"
    "                    input signals must be the .r1cs's); jobs may then carry\n"
    "                    inputs instead of witnesses (zkfarm submit --input).\n"
    "                    A circuit's generator is never replaced silently: one that\n"
    "                    differs from the recorded generator is refused, and so is\n"
    "                    adding one to a circuit another Redis user registered\n"
    "  --replace-witness-generator\n"
    "                    replace the recorded generator by this different one; only\n"
    "                    the Redis user who registered the circuit may (jobs already\n"
    "                    taken in keep the old one's hashes and fail artifactChecksum)\n"
    "  --json            print the circuit record as JSON\n\n"
    "Tenants (`zkfarm tenant`): with a tenant's URL the circuit is the tenant's\n"
    "own (its jobs only; a witness generator is refused: the admin's action).\n"
    "An admin's circuit serves the default tenant, and a tenant only once shared:\n"
    "  zkfarm circuit share <circuit-id> <tenant>... | all     (admin only)\n"
    "  zkfarm circuit unshare <circuit-id> <tenant>... | all\n" ZKFARM_FARM_OPTIONS_HELP
    "\nexit: 0 registered (shared), 2 error (bad zkey/r1cs/generator, no artifact store, unknown\n"
    "      tenant or circuit, Redis)\n";

int run_circuit(const std::vector<std::string>& argv) {
  return run_farm_guarded("circuit", kCircuitUsage, [&] {
    Args args(argv, with_farm_options({"r1cs", "witness-generator"}), {"json", "replace-witness-generator"});
    const auto& pos = args.positional();
    if (pos.empty()) throw UsageError("missing subcommand (add, share, unshare)");
    if (pos[0] == "share" || pos[0] == "unshare") {
      if (pos.size() < 3) throw UsageError("circuit " + pos[0] + " takes a circuit id and tenant names (or all)");
      if (!is_valid_circuit_id(pos[1])) throw UsageError("'" + pos[1] + "' is not a circuit id (64 lowercase hex digits)");
      std::vector<std::string> tenants;
      for (std::size_t i = 2; i < pos.size(); ++i) tenants.push_back(pos[i] == "all" ? "*" : pos[i]);
      const farm::FarmOptions options = farm_options(args);
      RedisClient redis(options.redis_url);
      try {
        if (pos[0] == "share") share_circuit(redis, KeyLayout(options.prefix), pos[1], tenants);
        else unshare_circuit(redis, KeyLayout(options.prefix), pos[1], tenants);
      } catch (const TenantError& e) {
        throw InputError(e.what());
      }
      std::printf("%sd\n", pos[0].c_str());
      return kExitOk;
    }
    if (pos[0] != "add") throw UsageError("unknown subcommand '" + pos[0] + "' (add, share, unshare)");
    if (pos.size() != 2) throw UsageError("circuit add takes exactly one zkey");
    farm::FarmOptions options = farm_options(args);
    if (options.artifacts.empty()) throw UsageError("no artifact store: give --artifacts DIR or set ZKFARM_ARTIFACTS");
    std::error_code ec;
    if (!fs::is_regular_file(pos[1], ec)) throw InputError(pos[1] + ": no such zkey file");
    if (auto r1cs = args.option("r1cs"); r1cs && !fs::is_regular_file(*r1cs, ec))
      throw InputError(*r1cs + ": no such r1cs file");
    if (auto dir = args.option("witness-generator"); dir && !fs::is_directory(*dir, ec))
      throw InputError(*dir + ": no such directory (give the <name>_cpp directory that `circom --c` writes)");
    farm::GeneratorPolicy policy;
    policy.replace = args.flag("replace-witness-generator");
    if (policy.replace && !args.option("witness-generator"))
      throw UsageError("--replace-witness-generator needs --witness-generator DIR");
    CircuitInfo info =
        farm::circuit_add(options, pos[1], args.option("r1cs"), args.option("witness-generator"), policy);
    if (args.flag("json")) {
      json j = {{"id", info.id}, {"curve", curve_name(info.curve)}, {"num_vars", info.num_vars},
                {"num_public", info.num_public}, {"domain_size", info.domain_size},
                {"zkey_bytes", info.zkey_bytes}, {"pce_has_c", info.pce_has_c},
                {"zkey_path", info.zkey_path}, {"pce_path", info.pce_path}, {"vk_path", info.vk_path}};
      if (info.has_witness_generator()) {
        j["witness_generator"] = info.witgen_path;
        j["witness_generator_sha256"] = info.witgen_sha256;
      }
      if (!info.registered_by.empty()) j["registered_by"] = info.registered_by;
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::printf("%s\n", info.id.c_str());
    }
    return kExitOk;
  });
}

// ---------------------------------------------------------------------------
// submit

const char kSubmitUsage[] =
    "zkfarm submit <circuit> <witness.wtns>... | zkfarm submit <circuit> --input <in.json>... | "
    "zkfarm submit <job.json|->";
const char kSubmitHelp[] =
    "usage: zkfarm submit <circuit> <witness>... [options] [farm options]\n"
    "       zkfarm submit <circuit> --input <input.json>... [options] [farm options]\n"
    "       zkfarm submit <job.json | -> [farm options]\n\n"
    "Queues a proving job and prints its id. The first form makes one partition\n"
    "per witness: <circuit> is a circuit id (64 hex digits, as printed by\n"
    "`zkfarm circuit add`) or the circuit's .zkey file; each witness is a local\n"
    ".wtns path (sent as a file:// reference: every coordinator and worker host\n"
    "must see it at the same path), a file:// or redis:// URL, or with --inline\n"
    "the file's bytes themselves (tiny witnesses only, up to 1 MiB each).\n"
    "With --input, each file is instead the circuit's input signals (circom's\n"
    "input.json, up to 1 MiB): the worker proving the partition computes its\n"
    "witness with the circuit's witness generator (circuit add\n"
    "--witness-generator). Job JSON may mix witnesses and inputs.\n"
    "The second form submits job JSON as documented in cluster/README.md (a\n"
    "file ending in .json, or - for standard input).\n\n"
    "options:\n"
    "  --id ID           job id (default: a random one)\n"
    "  --priority P      critical | high | normal | low (default normal)\n"
    "  --deadline T      unix seconds, or +N for N seconds from now: the job fails\n"
    "                    if it is not done by then; earlier deadlines go first\n"
    "                    among jobs of one priority\n"
    "  --inline          embed the witness files in the job\n"
    "  --input           the files are input.json files, not witnesses\n"
    "  --witness-url-base URL\n"
    "                    name each local witness file by URL + its file name\n"
    "                    (http:// or https://, served by any web server or\n"
    "                    object store) and record its sha256 and size, which\n"
    "                    the coordinator and the workers check\n" ZKFARM_FARM_OPTIONS_HELP
    "\nexit: 0 queued, 2 error (invalid job, unknown circuit, duplicate id, Redis)\n";

std::string circuit_id_argument(const std::string& arg) {
  if (is_valid_circuit_id(arg)) return arg;
  std::error_code ec;
  if (fs::is_regular_file(arg, ec)) return sha256_file_hex(arg);
  throw InputError("'" + arg + "' is neither a circuit id (64 lowercase hex digits) nor a zkey file");
}

double deadline_argument(const std::string& text) {
  const bool relative = !text.empty() && text[0] == '+';
  double v = 0;
  try {
    std::size_t used = 0;
    v = std::stod(text.substr(relative ? 1 : 0), &used);
    if (used != text.size() - (relative ? 1 : 0) || !std::isfinite(v) || v < 0) throw std::invalid_argument("");
  } catch (const std::exception&) {
    throw UsageError("--deadline needs unix seconds or +SECONDS, got '" + text + "'");
  }
  if (!relative) return v;
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() + v;
}

int run_submit(const std::vector<std::string>& argv) {
  return run_farm_guarded("submit", kSubmitUsage, [&] {
    Args args(argv, with_farm_options({"id", "priority", "deadline", "witness-url-base"}), {"inline", "input"});
    std::string url_base = args.option("witness-url-base").value_or("");
    if (!url_base.empty()) {
      if (const std::string problem = check_http_url(url_base); !problem.empty())
        throw UsageError("--witness-url-base " + redact_url(url_base) + ": " + problem);
      if (url_base.find_first_of("?#") != std::string::npos)
        throw UsageError("--witness-url-base must not have a query string or fragment");
      if (args.flag("inline")) throw UsageError("give one of --inline and --witness-url-base");
      if (url_base.back() != '/') url_base += '/';
    }
    const auto& pos = args.positional();
    if (pos.empty()) throw UsageError("nothing to submit");
    farm::FarmOptions options = farm_options(args);
    std::string job_text;
    const bool job_file = pos.size() == 1 && (pos[0] == "-" || fs::path(pos[0]).extension() == ".json");
    if (job_file) {
      for (const char* o : {"id", "priority", "deadline"})
        if (args.option(o)) throw UsageError(std::string("--") + o + " applies to the <circuit> <witness>... form only");
      if (args.flag("inline")) throw UsageError("--inline applies to the <circuit> <witness>... form only");
      if (args.flag("input")) throw UsageError("--input applies to the <circuit> <input.json>... form only");
      if (!url_base.empty()) throw UsageError("--witness-url-base applies to the <circuit> <witness>... form only");
      job_text = pos[0] == "-" ? std::string(std::istreambuf_iterator<char>(std::cin), {}) : read_file(pos[0]);
    } else {
      if (pos.size() < 2) throw UsageError("give a circuit and at least one witness (or one job .json file)");
      json job = {{"circuit", circuit_id_argument(pos[0])}, {"partitions", json::array()}};
      if (auto id = args.option("id")) job["id"] = *id;
      if (auto p = args.option("priority")) job["priority"] = *p;
      if (auto d = args.option("deadline")) job["deadline"] = deadline_argument(*d);
      if (args.flag("input") && args.flag("inline")) throw UsageError("--input and --inline exclude each other");
      for (std::size_t i = 1; i < pos.size(); ++i) {
        const std::string& w = pos[i];
        if (args.flag("input")) {
          std::error_code ec;
          if (!fs::is_regular_file(w, ec)) throw InputError(w + ": no such input file");
          const auto size = fs::file_size(w, ec);
          if (size > kMaxInputBytes)
            throw InputError(w + ": " + std::to_string(size) + " bytes; an input is at most " +
                             std::to_string(kMaxInputBytes) + " bytes");
          json input;
          try {
            input = json::parse(read_file(w));
          } catch (const json::parse_error& e) {
            throw InputError(w + ": not JSON: " + e.what());
          }
          if (!input.is_object()) throw InputError(w + ": expected an object of input signals (circom's input.json)");
          job["partitions"].push_back({{"input", std::move(input)}});
        } else if (w.rfind("file://", 0) == 0 || w.rfind("redis://", 0) == 0 || is_http_url(w)) {
          if (args.flag("inline") || !url_base.empty())
            throw UsageError(std::string(args.flag("inline") ? "--inline" : "--witness-url-base") +
                             " needs local witness files, got URL " + redact_url(w));
          job["partitions"].push_back({{"witness", w}});
        } else if (!url_base.empty()) {
          std::error_code ec;
          if (!fs::is_regular_file(w, ec)) throw InputError(w + ": no such witness file");
          std::string name;
          for (unsigned char c : fs::path(w).filename().string()) {
            if (std::isalnum(c) || c == '.' || c == '_' || c == '-' || c == '~') {
              name += static_cast<char>(c);
            } else {
              static const char* kHex = "0123456789ABCDEF";
              name += '%';
              name += kHex[c >> 4];
              name += kHex[c & 15];
            }
          }
          job["partitions"].push_back(
              {{"witness", url_base + name}, {"sha256", sha256_file_hex(w)}, {"size", fs::file_size(w)}});
        } else if (args.flag("inline")) {
          std::string bytes = read_file(w);
          if (bytes.size() > kMaxInlineWitnessBytes)
            throw InputError(w + ": " + std::to_string(bytes.size()) + " bytes is too big to inline (at most " +
                             std::to_string(kMaxInlineWitnessBytes) + "); pass it by path");
          job["partitions"].push_back(
              {{"witness_base64", base64_encode(std::vector<std::uint8_t>(bytes.begin(), bytes.end()))}});
        } else {
          job["partitions"].push_back({{"witness", witness_file_url(w)}});
        }
      }
      job_text = job.dump();
    }
    std::printf("%s\n", farm::submit(options, job_text).c_str());
    return kExitOk;
  });
}

// ---------------------------------------------------------------------------
// status

const char kStatusUsage[] = "zkfarm status <job-id>";
const char kStatusHelp[] =
    "usage: zkfarm status <job-id> [farm options]\n\n"
    "Prints the job's state as one line of JSON: id, state (queued, running,\n"
    "done, failed, cancelled), circuit, priority, partitions, proved, attempts\n"
    "(failed attempts so far), submitted_at/started_at/finished_at (unix\n"
    "seconds), coordinator, error_code/error for a failed job, and for a\n"
    "running job waiting_for_witness (input partitions that workers hold\n"
    "waiting for, or in, witness generation).\n" ZKFARM_FARM_OPTIONS_HELP
    "\nexit: 0 queued, running or done; 1 failed or cancelled; 2 unknown job or error\n";

int exit_for_state(const farm::JobStatus& s) {
  return s.state == kStateFailed || s.state == kStateCancelled ? kExitJobFailed : kExitOk;
}

int run_status(const std::vector<std::string>& argv) {
  return run_farm_guarded("status", kStatusUsage, [&] {
    Args args(argv, kFarmOptions, {});
    args.expect_positional(1, kStatusUsage);
    auto s = farm::status(farm_options(args), args.positional()[0]);
    if (!s) throw InputError(not_found(args.positional()[0]));
    std::printf("%s\n", s->to_json().c_str());
    return exit_for_state(*s);
  });
}

// ---------------------------------------------------------------------------
// wait

const char kWaitUsage[] = "zkfarm wait <job-id> [--timeout S]";
const char kWaitHelp[] =
    "usage: zkfarm wait <job-id> [--timeout S] [--quiet] [farm options]\n\n"
    "Waits until the job is done, failed or cancelled, then prints its status\n"
    "JSON (as `zkfarm status`). Meanwhile a progress bar of proved partitions\n"
    "is drawn on stderr when it is a terminal; otherwise one line is printed\n"
    "on stderr whenever the state or the number of proved partitions changes.\n\n"
    "options:\n"
    "  --timeout S       give up after S seconds (default: wait forever)\n"
    "  --quiet           no progress output\n" ZKFARM_FARM_OPTIONS_HELP
    "\nexit: 0 done; 1 failed, cancelled or still running at the timeout;\n"
    "      2 unknown job or error\n";

class ProgressBar {
 public:
  ProgressBar(std::string id, bool quiet) : id_(std::move(id)), quiet_(quiet), terminal_(isatty(STDERR_FILENO)) {}

  void show(const farm::JobStatus& s) {
    if (quiet_) return;
    if (terminal_) {
      const std::uint32_t total = std::max<std::uint32_t>(s.partitions, 1);
      const int width = 30;
      const int filled = static_cast<int>(width * static_cast<double>(s.proved) / total);
      std::string bar(static_cast<std::size_t>(filled), '#');
      bar.resize(width, '.');
      std::fprintf(stderr, "\r%s [%s] %u/%u partitions  %-9s %6.1f s", id_.c_str(), bar.c_str(), s.proved,
                   s.partitions, s.state.c_str(), elapsed());
      std::fflush(stderr);
      drawn_ = true;
      return;
    }
    if (s.state == last_state_ && s.proved == last_proved_) return;
    last_state_ = s.state;
    last_proved_ = s.proved;
    std::fprintf(stderr, "%s: %s, %u/%u partitions proved (%.1f s)\n", id_.c_str(), s.state.c_str(), s.proved,
                 s.partitions, elapsed());
  }
  void end() {
    if (drawn_) std::fputc('\n', stderr);
    drawn_ = false;
  }

 private:
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  std::string id_;
  bool quiet_, terminal_, drawn_ = false;
  std::string last_state_;
  std::uint32_t last_proved_ = ~0u;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

int run_wait(const std::vector<std::string>& argv) {
  return run_farm_guarded("wait", kWaitUsage, [&] {
    Args args(argv, with_farm_options({"timeout"}), {"quiet"});
    args.expect_positional(1, kWaitUsage);
    const std::string id = args.positional()[0];
    farm::FarmOptions options = farm_options(args);
    const auto timeout = args.uint_option("timeout");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout.value_or(0));
    ProgressBar bar(id, args.flag("quiet"));
    for (;;) {
      // Short waits so the bar moves with every proved partition; the done
      // marker still wakes us at once when the job ends.
      auto step = std::chrono::milliseconds(500);
      if (timeout) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        step = std::max(std::chrono::milliseconds(0), std::min(step, left));
      }
      auto s = farm::wait(options, id, step);
      if (!s) {
        bar.end();
        throw InputError(not_found(id));
      }
      bar.show(*s);
      if (s->terminal()) {
        bar.end();
        std::printf("%s\n", s->to_json().c_str());
        if (s->state != kStateDone)
          std::fprintf(stderr, "zkfarm wait: job %s %s%s%s\n", id.c_str(), s->state.c_str(),
                       s->error.empty() ? "" : ": ", s->error.c_str());
        return exit_for_state(*s);
      }
      if (timeout && std::chrono::steady_clock::now() >= deadline) {
        bar.end();
        std::printf("%s\n", s->to_json().c_str());
        std::fprintf(stderr, "zkfarm wait: job %s still %s after %llu s\n", id.c_str(), s->state.c_str(),
                     static_cast<unsigned long long>(*timeout));
        return kExitJobFailed;
      }
    }
  });
}

// ---------------------------------------------------------------------------
// result

const char kResultUsage[] = "zkfarm result <job-id> [--out DIR]";
const char kResultHelp[] =
    "usage: zkfarm result <job-id> [--out DIR] [farm options]\n\n"
    "Fetches the result of a done job. Without --out the assembled result JSON\n"
    "is printed. With --out DIR it writes:\n"
    "  DIR/result.json            the assembled result (every partition, worker,\n"
    "                             device uuid and per-stage timings)\n"
    "  DIR/proof_<i>.json         partition i's proof, snarkjs JSON\n"
    "  DIR/public_<i>.json        partition i's public signals, snarkjs JSON\n"
    "  DIR/proof.json, public.json  the same, when the job has one partition\n"
    "  DIR/proofs.bin             BLS12-381 only: the compressed proofs, 192 bytes\n"
    "                             per partition in partition order (Filecoin)\n"
    "so `snarkjs groth16 verify vk.json public_0.json proof_0.json` checks one.\n\n"
    "options:\n"
    "  --out DIR         write files into DIR (created if missing)\n" ZKFARM_FARM_OPTIONS_HELP
    "\nexit: 0 written; 1 the job failed, was cancelled or is not done yet;\n"
    "      2 unknown job or error\n";

int run_result(const std::vector<std::string>& argv) {
  return run_farm_guarded("result", kResultUsage, [&] {
    Args args(argv, with_farm_options({"out"}), {});
    args.expect_positional(1, kResultUsage);
    const std::string id = args.positional()[0];
    farm::FarmOptions options = farm_options(args);
    auto s = farm::status(options, id);
    if (!s) throw InputError(not_found(id));
    if (s->state != kStateDone) {
      std::fprintf(stderr, "zkfarm result: job %s is %s%s%s\n", id.c_str(), s->state.c_str(),
                   s->error.empty() ? "" : ": ", s->error.c_str());
      return kExitJobFailed;
    }
    auto text = farm::result(options, id);
    if (!text) throw InputError("job " + id + " is done but its result is gone (expired?)");
    auto out_dir = args.option("out");
    if (!out_dir) {
      std::printf("%s\n", text->c_str());
      return kExitOk;
    }
    JobResult result;
    try {
      result = parse_job_result(*text);
    } catch (const ResultFormatError& e) {
      throw std::runtime_error("result of " + id + " is malformed: " + e.what());
    }
    const fs::path dir(*out_dir);
    fs::create_directories(dir);
    const auto& partitions = result.partitions;
    for (const PartitionResult& p : partitions) {
      const std::string index = std::to_string(p.partition);
      write_file_atomically(dir / ("proof_" + index + ".json"), p.proof.dump(1) + "\n");
      write_file_atomically(dir / ("public_" + index + ".json"), p.public_signals.dump(1) + "\n");
    }
    if (partitions.size() == 1) {
      write_file_atomically(dir / "proof.json", partitions[0].proof.dump(1) + "\n");
      write_file_atomically(dir / "public.json", partitions[0].public_signals.dump(1) + "\n");
    }
    if (result.proofs_hex) {
      auto bytes = from_hex(*result.proofs_hex, "proofs_hex");
      if (bytes.size() != 192 * partitions.size())
        throw std::runtime_error("result of " + id + " has " + std::to_string(bytes.size()) +
                                 " bytes of compressed proofs, expected 192 x " +
                                 std::to_string(partitions.size()));
      write_file_atomically(dir / "proofs.bin", std::string(bytes.begin(), bytes.end()));
    }
    write_file_atomically(dir / "result.json", to_json(result).dump(1) + "\n");
    std::fprintf(stderr, "zkfarm result: %zu partition proof%s of %s written to %s\n", partitions.size(),
                 partitions.size() == 1 ? "" : "s", id.c_str(), dir.string().c_str());
    return kExitOk;
  });
}

// ---------------------------------------------------------------------------
// workers

const char kWorkersUsage[] = "zkfarm workers [--json]";
const char kWorkersHelp[] =
    "usage: zkfarm workers [--json] [farm options]\n\n"
    "Lists the workers the farm's coordinators have seen recently (a record\n"
    "expires a while after its worker goes away): id, state (alive, or gone\n"
    "after a clean exit or a missed heartbeat), host, device, tasks in\n"
    "progress, free credits, faults (invalid proofs, timeouts), whether it is\n"
    "quarantined (readmit with SREM <prefix>quarantine <id>), seconds since\n"
    "its last heartbeat, and the circuits it holds resident.\n\n"
    "options:\n"
    "  --json            one JSON array instead of a table\n" ZKFARM_FARM_OPTIONS_HELP
    "\nexit: 0 listed, 2 error\n";

int run_workers(const std::vector<std::string>& argv) {
  return run_farm_guarded("workers", kWorkersUsage, [&] {
    Args args(argv, kFarmOptions, {"json"});
    args.expect_positional(0, kWorkersUsage);
    auto list = farm::workers(farm_options(args));
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    if (args.flag("json")) {
      std::string out = "[";
      for (std::size_t i = 0; i < list.size(); ++i) out += (i ? "," : "") + list[i].to_json();
      std::printf("%s]\n", out.c_str());
      return kExitOk;
    }
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::printf("%-16s %-6s %-14s %-28s %5s %7s %6s %-11s %9s  %s\n", "WORKER", "STATE", "HOST", "DEVICE", "TASKS",
                "CREDITS", "FAULTS", "QUARANTINED", "SEEN(s)", "LOADED");
    for (const auto& w : list) {
      std::string loaded;
      std::stringstream ids(w.loaded);
      for (std::string c; std::getline(ids, c, ',');) loaded += (loaded.empty() ? "" : ",") + c.substr(0, 12);
      std::printf("%-16s %-6s %-14s %-28s %5u %7u %6u %-11s %9.1f  %s\n", w.id.c_str(), w.state.c_str(),
                  w.host.c_str(), w.device.c_str(), w.tasks, w.credits, w.faults, w.quarantined ? "yes" : "no",
                  w.last_seen > 0 ? std::max(0.0, now - w.last_seen) : -1.0, loaded.empty() ? "-" : loaded.c_str());
    }
    if (list.empty()) std::fprintf(stderr, "zkfarm workers: no workers seen\n");
    return kExitOk;
  });
}

// ---------------------------------------------------------------------------
// cancel

const char kCancelUsage[] = "zkfarm cancel <job-id>";
const char kCancelHelp[] =
    "usage: zkfarm cancel <job-id> [farm options]\n\n"
    "Cancels a job. A queued job is cancelled at once (prints \"cancelled\"); for\n"
    "a running one the cancel is handed to its coordinator, which stops its\n"
    "tasks within a moment (prints \"requested\"; `zkfarm wait` then reports\n"
    "the cancelled state).\n" ZKFARM_FARM_OPTIONS_HELP
    "\nexit: 0 cancelled or requested; 1 the job had already ended (prints its\n"
    "      state); 2 unknown job or error\n";

int run_cancel(const std::vector<std::string>& argv) {
  return run_farm_guarded("cancel", kCancelUsage, [&] {
    Args args(argv, kFarmOptions, {});
    args.expect_positional(1, kCancelUsage);
    const std::string id = args.positional()[0];
    const std::string outcome = farm::cancel(farm_options(args), id);
    if (outcome == "unknown") throw InputError(not_found(id));
    if (outcome.rfind("terminal:", 0) == 0) {
      std::printf("%s\n", outcome.substr(9).c_str());
      std::fprintf(stderr, "zkfarm cancel: job %s had already ended (%s)\n", id.c_str(), outcome.substr(9).c_str());
      return kExitJobFailed;
    }
    std::printf("%s\n", outcome.c_str());
    return kExitOk;
  });
}

// ---------------------------------------------------------------------------
// tenant

const char kTenantUsage[] =
    "zkfarm tenant add|set NAME [--weight W] [--reserved-workers N] [--max-queued-jobs N] "
    "[--max-active-partitions N] [--max-job-bytes N] | tenant list [--json] | tenant rotate NAME | "
    "tenant remove NAME";
const char kTenantHelp[] =
    "usage: zkfarm tenant add NAME [figures] [farm options]\n"
    "       zkfarm tenant set NAME [figures] [farm options]\n"
    "       zkfarm tenant list [--json] [farm options]\n"
    "       zkfarm tenant rotate NAME [farm options]\n"
    "       zkfarm tenant remove NAME [farm options]\n\n"
    "Manages the farm's tenants (the admin's Redis credentials only: a tenant's\n"
    "user is refused). A tenant is a Redis ACL user that reaches only its own\n"
    "namespace, <prefix>t:NAME: -- its queues, jobs, results, events and\n"
    "circuits -- and the farm's client functions; with its URL, `zkfarm\n"
    "submit/status/wait/result/cancel` work as usual on its own jobs.\n"
    "  add     makes the user and the record, prints the tenant's Redis URL and,\n"
    "          on a second line, its status page token, once (neither is kept\n"
    "          anywhere: Redis stores their sha256)\n"
    "  set     changes the figures (those not given keep their values)\n"
    "  list    the tenants and their figures\n"
    "  rotate  a new password and status page token (printed once, as by add);\n"
    "          the old password stops working for new connections at once, the\n"
    "          old token at the page's next request\n"
    "  remove  deletes the user (its connections are closed) and the record;\n"
    "          its keys stay until their TTLs\n"
    "When the server has an ACL file (aclfile in redis.conf) the users are saved\n"
    "into it (ACL SAVE); otherwise they last until Redis restarts.\n\n"
    "figures:\n"
    "  --weight W                 its share against other tenants with work (default 1)\n"
    "  --reserved-workers N       workers it gets first while it has work (default 0)\n"
    "  --max-queued-jobs N        quota: jobs queued at once (0: no limit)\n"
    "  --max-active-partitions N  quota: partitions running at once (0: no limit)\n"
    "  --max-job-bytes N          quota: bytes of one job's entry (0: no limit)\n" ZKFARM_FARM_OPTIONS_HELP
    "\nexit: 0 done, 2 error (bad name or figure, no such tenant, exists, Redis)\n";

// The figures given on the command line, over `record`.
void tenant_figures(const Args& args, TenantRecord& record) {
  if (auto w = args.option("weight")) {
    try {
      std::size_t used = 0;
      record.weight = std::stod(*w, &used);
      if (used != w->size()) throw std::invalid_argument(*w);
    } catch (const std::exception&) {
      throw UsageError("--weight needs a number, got '" + *w + "'");
    }
  }
  if (auto n = args.uint_option("reserved-workers")) {
    if (*n > 1000000) throw UsageError("--reserved-workers " + std::to_string(*n) + " is more than 1000000");
    record.reserved_workers = static_cast<std::uint32_t>(*n);
  }
  if (auto n = args.uint_option("max-queued-jobs")) record.max_queued_jobs = *n;
  if (auto n = args.uint_option("max-active-partitions")) record.max_active_partitions = *n;
  if (auto n = args.uint_option("max-job-bytes")) record.max_job_bytes = *n;
}

int run_tenant(const std::vector<std::string>& argv) {
  return run_farm_guarded("tenant", kTenantUsage, [&] {
    Args args(argv,
              with_farm_options({"weight", "reserved-workers", "max-queued-jobs", "max-active-partitions",
                                 "max-job-bytes"}),
              {"json"});
    const auto& pos = args.positional();
    if (pos.empty()) throw UsageError("missing subcommand (add, set, list, rotate, remove)");
    const std::string& sub = pos[0];
    const bool figures = args.option("weight") || args.option("reserved-workers") || args.option("max-queued-jobs") ||
                         args.option("max-active-partitions") || args.option("max-job-bytes");
    if (sub == "list") {
      args.expect_positional(1, kTenantUsage);
    } else if (sub == "add" || sub == "set" || sub == "rotate" || sub == "remove") {
      if (pos.size() != 2) throw UsageError("tenant " + sub + " takes exactly one NAME");
      if (!is_valid_tenant_name(pos[1]))
        throw UsageError("'" + pos[1] + "' is not a tenant name (" + kTenantNameRule + ")");
    } else {
      throw UsageError("unknown subcommand '" + sub + "' (add, set, list, rotate, remove)");
    }
    if (figures && sub != "add" && sub != "set") throw UsageError("figures apply to tenant add and set only");
    const farm::FarmOptions options = farm_options(args);
    RedisClient redis(options.redis_url);
    const KeyLayout keys(options.prefix);
    try {
      if (sub == "list") {
        const std::vector<std::string> names = tenant_names(redis, keys);
        if (args.flag("json")) {
          std::string out = "[";
          for (const auto& name : names) {
            if (auto r = load_tenant(redis, keys, name)) out += (out.size() > 1 ? "," : "") + r->to_json();
          }
          std::printf("%s]\n", out.c_str());
          return kExitOk;
        }
        std::printf("%-24s %8s %8s %12s %12s %14s  %s\n", "TENANT", "WEIGHT", "RESERVED", "MAX-QUEUED", "MAX-ACTIVE",
                    "MAX-JOB-BYTES", "USER");
        for (const auto& name : names) {
          std::optional<TenantRecord> r;
          try {
            r = load_tenant(redis, keys, name);
          } catch (const TenantError& e) {
            std::fprintf(stderr, "zkfarm tenant list: %s\n", e.what());
            continue;
          }
          if (!r) continue;
          std::printf("%-24s %8g %8u %12llu %12llu %14llu  %s\n", r->name.c_str(), r->weight, r->reserved_workers,
                      static_cast<unsigned long long>(r->max_queued_jobs),
                      static_cast<unsigned long long>(r->max_active_partitions),
                      static_cast<unsigned long long>(r->max_job_bytes), r->user.c_str());
        }
        if (names.empty()) std::fprintf(stderr, "zkfarm tenant list: no tenants (every job is the default tenant's)\n");
        return kExitOk;
      }
      const std::string& name = pos[1];
      if (sub == "add" || sub == "rotate") {
        TenantCredentials credentials;
        if (sub == "add") {
          TenantRecord record;
          record.name = name;
          tenant_figures(args, record);
          credentials = add_tenant(redis, keys, record);
        } else {
          credentials = rotate_tenant(redis, keys, name);
        }
        std::printf("%s\n%s\n", credentials.url(options.redis_url).c_str(), credentials.status_token.c_str());
        std::fprintf(stderr,
                     "zkfarm tenant %s: tenant %s's Redis URL (first line) and status page token (second line) "
                     "are printed above, once: hand them to the tenant (ZKFARM_REDIS; the page's bearer token)%s\n",
                     sub.c_str(), name.c_str(),
                     save_acl(redis) ? "; the user is saved in the server's ACL file"
                                     : "; the server has no ACL file: the user lasts until Redis restarts "
                                       "(docs/OPERATIONS.md, \"Tenants\")");
        return kExitOk;
      }
      if (sub == "set") {
        std::optional<TenantRecord> record = load_tenant(redis, keys, name);
        if (!record) throw InputError("no tenant " + name);
        tenant_figures(args, *record);
        set_tenant(redis, keys, *record);
        std::printf("%s\n", record->to_json().c_str());
        return kExitOk;
      }
      remove_tenant(redis, keys, name);
      std::printf("removed\n");
      return kExitOk;
    } catch (const TenantError& e) {
      throw InputError(e.what());
    }
  });
}

// ---------------------------------------------------------------------------
// keygen

const char kKeygenUsage[] = "zkfarm keygen [--out PREFIX] [--force]";
const char kKeygenHelp[] =
    "usage: zkfarm keygen [--out PREFIX] [--force]\n\n"
    "Makes a ZeroMQ CURVE key pair (Z85 text) for the coordinator or a worker.\n"
    "With --out, writes PREFIX.secret (mode 0600) and PREFIX.public and prints\n"
    "the public key; without, prints \"public KEY\" and \"secret KEY\" lines.\n\n"
    "The coordinator takes its secret with --curve-secret-key-file and the\n"
    "workers' public keys, one per line, with --curve-allowlist; a worker\n"
    "takes its secret with --curve-secret-key-file and the coordinator's\n"
    "public key with --curve-server-key.\n\n"
    "options:\n"
    "  --out PREFIX      write the key files PREFIX.secret and PREFIX.public\n"
    "  --force           overwrite existing key files\n"
    "\nexit: 0 written, 2 error\n";

int run_keygen(const std::vector<std::string>& argv) {
  return run_farm_guarded("keygen", kKeygenUsage, [&] {
    Args args(argv, {"out"}, {"force"});
    args.expect_positional(0, kKeygenUsage);
    const CurveKeyPair pair = generate_curve_keypair();
    auto prefix = args.option("out");
    if (!prefix) {
      std::printf("public %s\nsecret %s\n", pair.public_key.c_str(), pair.secret_key.c_str());
      return kExitOk;
    }
    const std::string secret_path = *prefix + ".secret", public_path = *prefix + ".public";
    std::error_code ec;
    if (!args.flag("force"))
      for (const auto& p : {secret_path, public_path})
        if (fs::exists(p, ec)) throw InputError(p + " exists (use --force to replace it)");
    if (args.flag("force")) fs::remove(secret_path, ec);  // the file mode is only set on create
    write_curve_key_file(secret_path, pair.secret_key);
    write_file_atomically(public_path, "# zkfarm CURVE public key (Z85)\n" + pair.public_key + "\n");
    std::printf("%s\n", pair.public_key.c_str());
    return kExitOk;
  });
}

}  // namespace

const std::vector<Command>& farm_commands() {
  static const std::vector<Command> commands = {
      {"circuit", "register a circuit (zkey) with the farm: circuit add", kCircuitHelp, run_circuit},
      {"submit", "queue a proving job on the farm; prints its id", kSubmitHelp, run_submit},
      {"status", "a farm job's state as JSON", kStatusHelp, run_status},
      {"wait", "wait for a farm job to end (progress bar on a terminal)", kWaitHelp, run_wait},
      {"result", "fetch a done job's proofs (snarkjs JSON, Filecoin binary)", kResultHelp, run_result},
      {"workers", "the farm's workers: device, circuits, faults, quarantine", kWorkersHelp, run_workers},
      {"cancel", "cancel a farm job", kCancelHelp, run_cancel},
      {"tenant", "the farm's tenants and their credentials (admin): add, set, list, rotate, remove", kTenantHelp,
       run_tenant},
      {"keygen", "make a CURVE key pair for coordinator/worker encryption", kKeygenHelp, run_keygen},
  };
  return commands;
}

}  // namespace zkfarm::cli
