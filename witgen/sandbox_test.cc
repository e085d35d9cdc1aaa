// sandbox_test.cc -- run_generator()'s sandbox against a hostile generator
// (testdata/hostile_generator.c, compiled here with the system's C
// compiler): each escape a probe of a live farm found -- the worker's
// environment, a key outside the generator's directory, another job's
// witness under the witness root, /proc/<worker>/environ, cmdline and mem,
// a TCP connection out, a setsid() child outliving the run, a write outside
// the run directory, a witness larger than the circuit's -- fails, while
// the honest run's witness comes back byte for byte. The same escapes are
// run with the sandbox off to show each of them works there (the test can
// fail).
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "witgen/witness_generator.h"

namespace zkfarm::witgen {
namespace {

namespace fs = std::filesystem;

// The circuit's witness size the generator is built for (a .wtns of 4
// BN254 values: 44 + 32 + 4 * 32).
constexpr std::uint64_t kWitnessBytes = 204;
constexpr const char* kSecretVariable = "ZKFARM_SANDBOX_TEST_SECRET";
constexpr const char* kSecret = "redis-password-not-for-generators";
constexpr const char* kEscapeeName = "zkfarm-escapee";

std::vector<std::uint8_t> honest_witness() {
  std::vector<std::uint8_t> bytes(kWitnessBytes);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i * 7 % 251);
  return bytes;
}

class Sandbox : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string pattern = (fs::temp_directory_path() / "sandbox_test.XXXXXX").string();
    // mkdtemp's template: the six X are replaced by a unique suffix.
    const char* made = ::mkdtemp(pattern.data());
    ASSERT_NE(made, nullptr) << "mkdtemp " << pattern << ": " << std::strerror(errno);
    root_ = new fs::path(made);
    // Layout of a worker host: the artifact store with the generator, a
    // witness root with another job's witness, a key, a temp dir for runs.
    fs::create_directories(*root_ / "artifacts/c1/witgen");
    fs::create_directories(*root_ / "witnesses/other-job");
    fs::create_directories(*root_ / "runs");
    std::ofstream(*root_ / "curve.key") << kSecret;
    std::ofstream(*root_ / "witnesses/other-job/p0.wtns") << kSecret;
    binary_ = new std::string((*root_ / "artifacts/c1/witgen/witness-generator").string());
    const std::string command = "cc -O1 -DWITNESS_BYTES=" + std::to_string(kWitnessBytes) + " -o " + *binary_ +
                                " witgen/testdata/hostile_generator.c";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    ::setenv(kSecretVariable, kSecret, 1);
  }
  static void TearDownTestSuite() {
    ::unsetenv(kSecretVariable);
    std::error_code ignored;
    fs::remove_all(*root_, ignored);
  }

  struct Outcome {
    bool refused = false;  // BadInput
    std::string message;   // BadInput's, or what the generator printed on success
    std::vector<std::uint8_t> witness;
  };

  static Outcome run(const std::string& mode, const std::string& arg = "", bool sandbox = true) {
    RunLimits limits;
    limits.timeout = std::chrono::seconds(10);
    limits.cpu_seconds = 5;
    limits.memory_bytes = 512ull << 20;
    limits.sandbox = sandbox;
    Outcome outcome;
    try {
      outcome.witness = run_generator({*binary_}, R"({"mode": ")" + mode + R"(", "arg": ")" + arg + R"("})",
                                      (*root_ / "runs").string(), limits, kWitnessBytes);
    } catch (const BadInput& e) {
      outcome.refused = true;
      outcome.message = e.what();
    }
    return outcome;
  }

  // The escape failed: the generator said so, and no witness came back.
  static void expect_contained(const std::string& mode, const std::string& arg = "") {
    const Outcome outcome = run(mode, arg);
    EXPECT_TRUE(outcome.refused) << mode << " " << arg << ": the run succeeded";
    EXPECT_NE(outcome.message.find("contained: "), std::string::npos) << mode << " " << arg << ": "
                                                                       << outcome.message;
    EXPECT_EQ(outcome.message.find("ESCAPED"), std::string::npos) << mode << " " << arg << ": " << outcome.message;
    EXPECT_EQ(outcome.message.find(kSecret), std::string::npos) << outcome.message;
  }

  // Processes named kEscapeeName (a setsid() child of the generator).
  static std::vector<pid_t> escapees() {
    std::vector<pid_t> found;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
      std::ifstream comm(entry.path() / "comm");
      std::string name;
      if (std::getline(comm, name) && name == kEscapeeName) found.push_back(std::stoi(entry.path().filename()));
    }
    return found;
  }

  static fs::path* root_;
  static std::string* binary_;
};

fs::path* Sandbox::root_ = nullptr;
std::string* Sandbox::binary_ = nullptr;

// A TCP listener on 127.0.0.1 (connections complete in its backlog).
struct Listener {
  int fd = -1;
  int port = 0;
  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd, 8);
    socklen_t size = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &size);
    port = ntohs(addr.sin_port);
  }
  ~Listener() { ::close(fd); }
};

TEST_F(Sandbox, TheHonestWitnessComesBackByteForByte) {
  const Outcome outcome = run("honest");
  ASSERT_FALSE(outcome.refused) << outcome.message;
  EXPECT_EQ(outcome.witness, honest_witness());
  EXPECT_TRUE(fs::is_empty(*root_ / "runs"));
}

TEST_F(Sandbox, TheWorkersEnvironmentIsNotInherited) { expect_contained("env"); }

TEST_F(Sandbox, FilesOutsideTheGeneratorsDirectoryAreInvisible) {
  expect_contained("read", (*root_ / "curve.key").string());
  expect_contained("read", (*root_ / "witnesses/other-job/p0.wtns").string());
  expect_contained("read", "/etc/passwd");
}

TEST_F(Sandbox, TheWorkersProcIsInvisible) {
  const std::string self = std::to_string(::getpid());
  for (const char* file : {"environ", "cmdline", "mem"}) {
    expect_contained("read", "/proc/" + self + "/" + file);
    expect_contained("read", std::string("/proc/1/") + file);  // the generator's parent inside
  }
}

TEST_F(Sandbox, NoNetwork) {
  Listener listener;
  expect_contained("connect", std::to_string(listener.port));
}

TEST_F(Sandbox, ASetsidChildDoesNotOutliveTheRun) {
  ASSERT_TRUE(escapees().empty());
  const Outcome outcome = run("setsid", kEscapeeName);
  ASSERT_FALSE(outcome.refused) << outcome.message;
  EXPECT_EQ(outcome.witness, honest_witness());
  EXPECT_TRUE(escapees().empty()) << "a child of the generator is still running";
}

TEST_F(Sandbox, NothingIsWrittenOutsideTheRunDirectory) {
  expect_contained("write", (*root_ / "planted").string());
  expect_contained("write", "/planted");
  expect_contained("write", "/gen/witness-generator");
  EXPECT_FALSE(fs::exists(*root_ / "planted"));
}

TEST_F(Sandbox, TheFilterDeniesPtraceAndNamespaces) {
  expect_contained("ptrace");
  expect_contained("unshare");
}

TEST_F(Sandbox, AWitnessLargerThanTheCircuitsIsRefused) {
  const Outcome outcome = run("huge");
  ASSERT_TRUE(outcome.refused);
  EXPECT_NE(outcome.message.find("wrote more than the circuit's witness (204 bytes)"), std::string::npos)
      << outcome.message;
}

TEST_F(Sandbox, TheSandboxSelfTestPasses) { EXPECT_NO_THROW(check_sandbox((*root_ / "runs").string())); }

// rlimits only (--witgen-sandbox=off): the escapes the namespaces and the
// filter stop work -- what the probe found, and what the tests above would
// see if the sandbox were missing.
TEST_F(Sandbox, WithoutItTheEscapesWork) {
  const auto expect_escaped = [](const std::string& mode, const std::string& arg) {
    const Outcome outcome = run(mode, arg, /*sandbox=*/false);
    EXPECT_FALSE(outcome.refused) << mode << " " << arg << ": " << outcome.message;
  };
  expect_escaped("read", (*root_ / "curve.key").string());
  expect_escaped("read", (*root_ / "witnesses/other-job/p0.wtns").string());
  expect_escaped("read", "/proc/" + std::to_string(::getpid()) + "/environ");
  Listener listener;
  expect_escaped("connect", std::to_string(listener.port));
  expect_escaped("write", (*root_ / "planted").string());
  EXPECT_TRUE(fs::exists(*root_ / "planted"));
  fs::remove(*root_ / "planted");
  expect_escaped("setsid", kEscapeeName);
  const std::vector<pid_t> survivors = escapees();
  EXPECT_FALSE(survivors.empty()) << "the setsid() child did not survive the process-group kill";
  for (const pid_t pid : survivors) ::kill(pid, SIGKILL);
}

// What the sandbox costs per run (BENCHMARKS.md, "Witness generator
// sandbox"): the median wall time of 25 honest runs with and without it.
TEST_F(Sandbox, CostPerRun) {
  const auto median_ms = [](bool sandbox) {
    std::vector<double> times;
    for (int i = 0; i < 25; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const Outcome outcome = run("honest", "", sandbox);
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      EXPECT_FALSE(outcome.refused) << outcome.message;
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  };
  const double with = median_ms(true), without = median_ms(false);
  std::printf("witness generator run, median of 25: sandboxed %.2f ms, rlimits only %.2f ms\n", with, without);
  RecordProperty("sandboxed_ms", std::to_string(with));
  RecordProperty("rlimits_only_ms", std::to_string(without));
}

}  // namespace
}  // namespace zkfarm::witgen
