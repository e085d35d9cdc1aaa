// cli_test.cc -- the `zkfarm` farm commands, run as the real binary against
// a real farm (redis-server, zkfarm-coordinator, zkfarm-worker processes):
// circuit add, submit, status, wait, result, workers, cancel and keygen,
// their output files and their exit codes (0 ok, 1 job failed/not done,
// 2 usage or input error).
#include <sys/stat.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/hex.h"
#include "cluster/curve_keys.h"
#include "formats/snarkjs_json.h"
#include "kernels/groth16_verifier.h"
#include "tests/cluster/farm_fixture.h"

namespace zkfarm::testing {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
namespace fs = std::filesystem;

class CliTest : public FarmTest {
 protected:
  // Runs `zkfarm args...` with the farm's --redis/--prefix/--artifacts
  // given through the environment (as an operator's shell would).
  CommandResult zkfarm(std::vector<std::string> args, std::map<std::string, std::string> env = {},
                       std::chrono::milliseconds timeout = std::chrono::seconds(120),
                       const std::string& stdin_path = "") {
    args.insert(args.begin(), runfile("cli/zkfarm"));
    env.emplace("ZKFARM_REDIS", options_.redis_url);
    env.emplace("ZKFARM_ARTIFACTS", options_.artifacts);
    CommandResult r = run_command(args, dir_->path(), env, timeout, stdin_path);
    last_ = "exit " + std::to_string(r.exit_code) + "\nstdout: " + r.out + "\nstderr: " + r.err;
    return r;
  }
  static std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }
  std::string last_;
};

template <class Curve>
bool verifies(const std::string& vk_fixture, const std::string& proof_path, const std::string& public_path) {
  auto vk = read_verification_key<Curve>(runfile("formats/testdata/" + vk_fixture));
  auto inputs = public_signals_from_json<typename Curve::Fr>(read_file(public_path), public_path);
  auto proof = proof_from_json<Curve>(read_file(proof_path), proof_path);
  return groth16_verify<Curve>(vk, std::span<const typename Curve::Fr>(inputs), proof);
}

TEST_F(CliTest, CircuitAddSubmitWaitResultWorkers) {
  // circuit add: the id is the zkey's sha256, the same the API computed.
  CommandResult add = zkfarm({"circuit", "add", runfile("formats/testdata/bn128_mul.zkey"), "--r1cs",
                              runfile("formats/testdata/bn128_mul.r1cs")});
  ASSERT_EQ(add.exit_code, 0) << last_;
  EXPECT_EQ(trim(add.out), bn254_.id);
  CommandResult add_bls = zkfarm({"circuit", "add", runfile("formats/testdata/bls12381_mul.zkey"), "--json"});
  ASSERT_EQ(add_bls.exit_code, 0) << last_;
  json bls_info = json::parse(add_bls.out);
  EXPECT_EQ(bls_info["id"], bls12381_.id);
  EXPECT_EQ(bls_info["curve"], "bls12381");

  start_coordinator();
  start_worker("w1");
  start_worker("w2");

  // submit <circuit> <wtns>...: three partitions by path, the id printed.
  const std::string bn_wtns = witness_file("bn128_mul.wtns");
  CommandResult sub = zkfarm({"submit", bn254_.id, bn_wtns, bn_wtns, bn_wtns, "--id", "cli-bn"});
  ASSERT_EQ(sub.exit_code, 0) << last_;
  EXPECT_EQ(trim(sub.out), "cli-bn");

  // wait: plain progress lines on stderr (not a terminal), status JSON out.
  CommandResult waited = zkfarm({"wait", "cli-bn", "--timeout", "90"});
  ASSERT_EQ(waited.exit_code, 0) << last_ << logs();
  json final_status = json::parse(waited.out);
  EXPECT_EQ(final_status["state"], "done");
  EXPECT_EQ(final_status["proved"], 3);
  EXPECT_NE(waited.err.find("cli-bn: "), std::string::npos) << waited.err;
  EXPECT_NE(waited.err.find("3/3 partitions proved"), std::string::npos) << waited.err;

  // On a terminal (a pty from script(1)) wait draws the progress bar.
  if (std::filesystem::exists("/usr/bin/script")) {
    CommandResult tty = run_command({"/usr/bin/script", "-qec", runfile("cli/zkfarm") + " wait cli-bn --timeout 60",
                                     "/dev/null"},
                                    dir_->path(), {{"ZKFARM_REDIS", options_.redis_url}});
    EXPECT_EQ(tty.exit_code, 0) << tty.out << tty.err;
    EXPECT_NE(tty.out.find("[" + std::string(30, '#') + "] 3/3 partitions"), std::string::npos) << tty.out;
  }

  CommandResult st = zkfarm({"status", "cli-bn"});
  ASSERT_EQ(st.exit_code, 0) << last_;
  EXPECT_EQ(json::parse(st.out)["state"], "done");

  // result --out: snarkjs JSON per partition, each verifying.
  const std::string out_bn = dir_->file("out-bn");
  CommandResult res = zkfarm({"result", "cli-bn", "--out", out_bn});
  ASSERT_EQ(res.exit_code, 0) << last_;
  for (int i = 0; i < 3; ++i) {
    const std::string proof = out_bn + "/proof_" + std::to_string(i) + ".json";
    const std::string pub = out_bn + "/public_" + std::to_string(i) + ".json";
    ASSERT_TRUE(fs::exists(proof) && fs::exists(pub)) << i;
    EXPECT_TRUE(verifies<Bn254>("bn128_verification_key.json", proof, pub)) << "partition " << i;
  }
  EXPECT_FALSE(fs::exists(out_bn + "/proofs.bin"));  // BN254: no Filecoin encoding
  EXPECT_EQ(json::parse(read_file(out_bn + "/result.json"))["partitions"].size(), 3u);
  // Without --out the assembled JSON goes to stdout.
  CommandResult res_stdout = zkfarm({"result", "cli-bn"});
  ASSERT_EQ(res_stdout.exit_code, 0) << last_;
  EXPECT_EQ(json::parse(res_stdout.out)["id"], "cli-bn");

  // BLS12-381 by zkey path, inline witness, high priority, a deadline far
  // ahead, options before positionals and --redis on the command line.
  CommandResult sub_bls = zkfarm({"submit", "--priority", "high", "--deadline", "+600", "--inline", "--redis",
                                  options_.redis_url, runfile("formats/testdata/bls12381_mul.zkey"),
                                  witness_file("bls12381_mul.wtns")},
                                 {{"ZKFARM_REDIS", "redis://127.0.0.1:1"}});
  ASSERT_EQ(sub_bls.exit_code, 0) << last_;
  const std::string bls_id = trim(sub_bls.out);
  EXPECT_EQ(bls_id.rfind("job-", 0), 0u) << bls_id;
  ASSERT_EQ(zkfarm({"wait", bls_id, "--timeout", "90", "--quiet"}).exit_code, 0) << last_ << logs();
  const std::string out_bls = dir_->file("out-bls");
  ASSERT_EQ(zkfarm({"result", bls_id, "--out", out_bls}).exit_code, 0) << last_;
  EXPECT_TRUE(verifies<Bls12381>("bls12381_verification_key.json", out_bls + "/proof.json", out_bls + "/public.json"));
  EXPECT_TRUE(verifies<Bls12381>("bls12381_verification_key.json", out_bls + "/proof_0.json",
                                 out_bls + "/public_0.json"));
  const std::string bin = read_file(out_bls + "/proofs.bin");
  ASSERT_EQ(bin.size(), 192u);
  const std::string proofs_hex = json::parse(*farm::result(options_, bls_id))["proofs_hex"];
  EXPECT_EQ(to_hex(bin), proofs_hex);

  // A job JSON file, and job JSON on stdin.
  const std::string job_path = dir_->file("job.json");
  write_file(job_path, job_json("from-file", bn254_.id, {"file://" + bn_wtns}));
  CommandResult from_file = zkfarm({"submit", job_path});
  ASSERT_EQ(from_file.exit_code, 0) << last_;
  EXPECT_EQ(trim(from_file.out), "from-file");
  write_file(dir_->file("stdin.json"), job_json("from-stdin", bn254_.id, {"file://" + bn_wtns}));
  CommandResult from_stdin = zkfarm({"submit", "-"}, {}, std::chrono::seconds(60), dir_->file("stdin.json"));
  ASSERT_EQ(from_stdin.exit_code, 0) << last_;
  EXPECT_EQ(trim(from_stdin.out), "from-stdin");
  EXPECT_EQ(zkfarm({"wait", "from-file", "--timeout", "90"}).exit_code, 0) << last_;
  EXPECT_EQ(zkfarm({"wait", "from-stdin", "--timeout", "90"}).exit_code, 0) << last_;

  // workers: both, with their device and the circuits they hold.
  CommandResult table = zkfarm({"workers"});
  ASSERT_EQ(table.exit_code, 0) << last_;
  EXPECT_NE(table.out.find("WORKER"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("w1"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("w2"), std::string::npos) << table.out;
  // Worker records are refreshed every couple of seconds from heartbeats,
  // which carry the resident circuits.
  json workers;
  EXPECT_TRUE(eventually(
      [&] {
        CommandResult listed = zkfarm({"workers", "--json"});
        if (listed.exit_code != 0) return false;
        workers = json::parse(listed.out);
        std::string loaded_all;
        for (const auto& w : workers) loaded_all += w["loaded"].get<std::string>();
        return loaded_all.find(bn254_.id) != std::string::npos;
      },
      30s))
      << last_;
  ASSERT_EQ(workers.size(), 2u) << last_;
  for (const auto& w : workers) {
    EXPECT_EQ(w["state"], "alive");
    EXPECT_FALSE(w["device"].get<std::string>().empty());
    EXPECT_EQ(w["quarantined"], false);
    EXPECT_EQ(w["faults"], 0);
  }

  // A job that fails (BLS witness for a BN254 circuit): wait and status
  // exit 1 with the error, result refuses with 1.
  CommandResult bad = zkfarm({"submit", bn254_.id, witness_file("bls12381_mul.wtns"), "--id", "wrong-curve"});
  ASSERT_EQ(bad.exit_code, 0) << last_;
  CommandResult bad_wait = zkfarm({"wait", "wrong-curve", "--timeout", "90"});
  EXPECT_EQ(bad_wait.exit_code, 1) << last_;
  EXPECT_EQ(json::parse(bad_wait.out)["error_code"], "wrongCurve");
  EXPECT_NE(bad_wait.err.find("BLS12-381"), std::string::npos) << bad_wait.err;
  EXPECT_EQ(zkfarm({"status", "wrong-curve"}).exit_code, 1) << last_;
  EXPECT_EQ(zkfarm({"result", "wrong-curve", "--out", dir_->file("nothing")}).exit_code, 1) << last_;
  EXPECT_FALSE(fs::exists(dir_->file("nothing/proof_0.json")));
  // Cancelling an ended job: exit 1, its state printed.
  CommandResult late_cancel = zkfarm({"cancel", "cli-bn"});
  EXPECT_EQ(late_cancel.exit_code, 1) << last_;
  EXPECT_EQ(trim(late_cancel.out), "done");
}

TEST_F(CliTest, QueuedJobsCancelAndTimeOut) {
  // No coordinator: jobs stay queued.
  const std::string wtns = witness_file("bn128_mul.wtns");
  ASSERT_EQ(zkfarm({"submit", bn254_.id, wtns, "--id", "stuck"}).exit_code, 0) << last_;
  CommandResult st = zkfarm({"status", "stuck"});
  ASSERT_EQ(st.exit_code, 0) << last_;
  EXPECT_EQ(json::parse(st.out)["state"], "queued");
  CommandResult waited = zkfarm({"wait", "stuck", "--timeout", "1"});
  EXPECT_EQ(waited.exit_code, 1) << last_;
  EXPECT_NE(waited.err.find("still queued"), std::string::npos) << waited.err;
  CommandResult cancel = zkfarm({"cancel", "stuck"});
  EXPECT_EQ(cancel.exit_code, 0) << last_;
  EXPECT_EQ(trim(cancel.out), "cancelled");
  CommandResult after = zkfarm({"wait", "stuck", "--timeout", "5"});
  EXPECT_EQ(after.exit_code, 1) << last_;
  EXPECT_EQ(json::parse(after.out)["state"], "cancelled");
  CommandResult again = zkfarm({"cancel", "stuck"});
  EXPECT_EQ(again.exit_code, 1) << last_;
  EXPECT_EQ(trim(again.out), "cancelled");
}

TEST_F(CliTest, UsageAndInputErrorsExitTwo) {
  const std::string wtns = witness_file("bn128_mul.wtns");
  struct Case {
    std::vector<std::string> args;
    std::string expected;  // in stderr
  };
  const std::vector<Case> cases = {
      {{"submit"}, "nothing to submit"},
      {{"submit", bn254_.id}, "at least one witness"},
      {{"submit", std::string(64, 'e'), wtns}, "unknown circuit"},
      {{"submit", bn254_.id, dir_->file("missing.wtns")}, "missing.wtns: no such witness file"},
      {{"submit", "not-a-circuit", wtns}, "neither a circuit id"},
      {{"submit", bn254_.id, wtns, "--priority", "urgent"}, "priority"},
      {{"submit", bn254_.id, wtns, "--deadline", "soon"}, "--deadline"},
      {{"submit", bn254_.id, wtns, "--id", "bad id!"}, "id"},
      {{"submit", bn254_.id, wtns, "--bogus"}, "unknown option --bogus"},
      {{"status"}, "expected 1 arguments"},
      {{"status", "nope"}, "no job nope"},
      {{"wait", "nope", "--timeout", "1"}, "no job nope"},
      {{"wait", "x", "--timeout", "-3"}, "--timeout"},
      {{"result", "nope"}, "no job nope"},
      {{"cancel", "nope"}, "no job nope"},
      {{"circuit"}, "missing subcommand"},
      {{"circuit", "remove", "x"}, "unknown subcommand 'remove'"},
      {{"circuit", "add", dir_->file("missing.zkey")}, "no such zkey file"},
      {{"circuit", "add", wtns}, "zkey"},
      {{"status", "x", "--redis", "http://127.0.0.1"}, "--redis"},
      {{"keygen", "extra"}, "expected 0 arguments"},
  };
  for (const auto& c : cases) {
    CommandResult r = zkfarm(c.args);
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    EXPECT_EQ(r.exit_code, 2) << joined << "\n" << last_;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << joined << "\n" << last_;
    EXPECT_EQ(r.out, "") << joined;
  }
  // Bad job JSON names the field.
  const std::string job_path = dir_->file("bad.json");
  write_file(job_path, R"({"circuit": ")" + bn254_.id + R"(", "partitons": []})");
  CommandResult bad_json = zkfarm({"submit", job_path});
  EXPECT_EQ(bad_json.exit_code, 2) << last_;
  EXPECT_NE(bad_json.err.find("invalid job"), std::string::npos) << last_;
  EXPECT_NE(bad_json.err.find("partitons"), std::string::npos) << last_;
  // Redis unreachable: a clear error, exit 2, no hang.
  CommandResult down = zkfarm({"status", "x"}, {{"ZKFARM_REDIS", "redis://127.0.0.1:1"}}, std::chrono::seconds(30));
  EXPECT_EQ(down.exit_code, 2) << last_;
  EXPECT_NE(down.err.find("Redis"), std::string::npos) << last_;
  // A wrong password is named as such and never echoed.
  CommandResult auth = zkfarm({"status", "x", "--redis", "redis://:hunter2@127.0.0.1:" + std::to_string(redis_->port())});
  EXPECT_EQ(auth.exit_code, 2) << last_;
  EXPECT_EQ(auth.err.find("hunter2"), std::string::npos) << last_;
  // --help for every farm command: exit 0, mentions the farm options.
  for (const char* command : {"circuit", "submit", "status", "wait", "result", "workers", "cancel"}) {
    CommandResult help = zkfarm({command, "--help"});
    EXPECT_EQ(help.exit_code, 0) << command;
    EXPECT_NE(help.out.find("--redis URL"), std::string::npos) << command;
    EXPECT_NE(help.out.find("exit:"), std::string::npos) << command;
  }
  CommandResult top = zkfarm({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  for (const char* command : {"circuit", "submit", "wait", "workers", "keygen", "prove"})
    EXPECT_NE(top.out.find(command), std::string::npos) << command;
}

TEST_F(CliTest, KeygenWritesUsableKeyFiles) {
  const std::string prefix = dir_->file("worker-1");
  CommandResult r = zkfarm({"keygen", "--out", prefix});
  ASSERT_EQ(r.exit_code, 0) << last_;
  const std::string secret = read_curve_key_file(prefix + ".secret");
  const std::string pub = read_curve_key_file(prefix + ".public");
  EXPECT_TRUE(is_curve_key(secret));
  EXPECT_TRUE(is_curve_key(pub));
  EXPECT_EQ(curve_public_key(secret), pub);
  EXPECT_EQ(trim(r.out), pub);
  EXPECT_EQ(read_curve_allowlist(prefix + ".public"), std::set<std::string>{pub});  // usable as an allowlist
  struct stat st {};
  ASSERT_EQ(::stat((prefix + ".secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // No silent overwrite; --force replaces both.
  CommandResult again = zkfarm({"keygen", "--out", prefix});
  EXPECT_EQ(again.exit_code, 2) << last_;
  EXPECT_NE(again.err.find("exists"), std::string::npos) << last_;
  EXPECT_EQ(read_curve_key_file(prefix + ".secret"), secret);
  ASSERT_EQ(zkfarm({"keygen", "--out", prefix, "--force"}).exit_code, 0) << last_;
  EXPECT_NE(read_curve_key_file(prefix + ".secret"), secret);
  // Without --out: two lines, a matching pair.
  CommandResult printed = zkfarm({"keygen"});
  ASSERT_EQ(printed.exit_code, 0) << last_;
  std::istringstream lines(printed.out);
  std::string word_pub, key_pub, word_sec, key_sec;
  lines >> word_pub >> key_pub >> word_sec >> key_sec;
  EXPECT_EQ(word_pub, "public");
  EXPECT_EQ(word_sec, "secret");
  EXPECT_EQ(curve_public_key(key_sec), key_pub);
}

}  // namespace
}  // namespace zkfarm::testing
