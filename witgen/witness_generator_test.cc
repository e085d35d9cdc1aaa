// witness_generator_test.cc -- the sandbox of run_generator() against a
// hand-made generator that fails in every way (testdata/), the checks of
// check_input_values(), and build_generator()'s refusals of directories
// that are not circom's output. Generators compiled by circom itself are
// tested in tests/interop/run_inputs.sh (it needs node and circom2).
#include "witgen/witness_generator.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/digest.h"
#include "base/files.h"

namespace zkfarm::witgen {
namespace {

namespace fs = std::filesystem;

// What misbehaving_generator writes in mode "ok": "witness bytes".
constexpr std::uint64_t kWitnessBytes = 13;

std::string generator() { return fs::absolute("witgen/misbehaving_generator").string(); }

std::string temp_parent() {
  static const std::string dir = [] {
    std::string pattern = (fs::temp_directory_path() / "witgen_test.XXXXXX").string();
    return std::string(::mkdtemp(pattern.data()));
  }();
  return dir;
}

RunLimits quick_limits() {
  RunLimits limits;
  limits.timeout = std::chrono::seconds(3);
  limits.cpu_seconds = 2;
  limits.memory_bytes = 512ull << 20;
  return limits;
}

std::string run_expecting_bad_input(const std::string& mode, const RunLimits& limits) {
  try {
    run_generator({generator()}, R"({"mode": ")" + mode + R"("})", temp_parent(), limits, kWitnessBytes);
  } catch (const BadInput& e) {
    return e.what();
  }
  ADD_FAILURE() << "mode " << mode << ": no BadInput";
  return "";
}

TEST(RunGenerator, ReturnsTheWitnessAndLeavesNothingBehind) {
  auto bytes = run_generator({generator()}, R"({"mode": "ok"})", temp_parent(), quick_limits(), kWitnessBytes);
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), "witness bytes");
  EXPECT_TRUE(fs::is_empty(temp_parent()));
}

TEST(RunGenerator, FailedAssertionIsBadInputQuotingTheGenerator) {
  const std::string message = run_expecting_bad_input("assert", quick_limits());
  EXPECT_NE(message.find("a circuit assertion failed"), std::string::npos) << message;
  EXPECT_NE(message.find("Failed assert in template/function Check line 7"), std::string::npos) << message;
  EXPECT_TRUE(fs::is_empty(temp_parent()));
}

TEST(RunGenerator, CrashIsContained) {
  const std::string message = run_expecting_bad_input("crash", quick_limits());
  EXPECT_NE(message.find("killed by signal 11"), std::string::npos) << message;
}

TEST(RunGenerator, HangIsKilledAtTheTimeout) {
  RunLimits limits = quick_limits();
  limits.timeout = std::chrono::milliseconds(500);
  const std::string message = run_expecting_bad_input("hang", limits);
  EXPECT_NE(message.find("did not finish within 500 ms"), std::string::npos) << message;
  EXPECT_TRUE(fs::is_empty(temp_parent()));
}

TEST(RunGenerator, CpuTimeLimit) {
  RunLimits limits = quick_limits();
  limits.cpu_seconds = 1;
  limits.timeout = std::chrono::seconds(120);
  const std::string message = run_expecting_bad_input("spin", limits);
  EXPECT_NE(message.find("CPU-time limit (1 s)"), std::string::npos) << message;
}

TEST(RunGenerator, MemoryLimit) {
  const std::string message = run_expecting_bad_input("alloc", quick_limits());
  EXPECT_NE(message.find("memory limit (512 MiB)"), std::string::npos) << message;
}

TEST(RunGenerator, ExitWithoutWitness) {
  const std::string message = run_expecting_bad_input("silent-exit", quick_limits());
  EXPECT_NE(message.find("without writing a witness"), std::string::npos) << message;
}

TEST(RunGenerator, MissingBinaryIsNotTheInputsFault) {
  EXPECT_THROW(run_generator({"/nonexistent/witness-generator"}, "{}", temp_parent(), quick_limits(), kWitnessBytes),
               RunFailure);
}

// testdata/dat_generator installed as the store holds a generator:
// <dir>/witness-generator and its .dat, with the sha256s a circuit records.
GeneratorFiles install_dat_generator(const std::string& dat) {
  std::string pattern = temp_parent() + "-store.XXXXXX";
  const std::string dir = ::mkdtemp(pattern.data());
  const std::string binary = dir + "/witness-generator";
  fs::copy_file(fs::absolute("witgen/dat_generator"), binary);
  fs::permissions(binary, fs::perms(0755));
  write_file_atomically(binary + ".dat", dat);
  return {binary, sha256_file_hex(binary), sha256_file_hex(binary + ".dat")};
}

// Issue 26 item 2: a generator replaced in the store after it ran (or its
// .dat rewritten in place) is refused at the next run and never executed;
// every run checks the bytes it executes, with or without the sandbox.
TEST(RunGenerator, EveryRunChecksTheBytesItExecutes) {
  for (const bool sandbox : {true, false}) {
    SCOPED_TRACE(sandbox ? "sandboxed" : "without the sandbox");
    RunLimits limits = quick_limits();
    limits.sandbox = sandbox;
    const GeneratorFiles generator = install_dat_generator("witness bytes");
    const auto run = [&] {
      const auto bytes = run_generator(generator, "{}", temp_parent(), limits, kWitnessBytes);
      return std::string(bytes.begin(), bytes.end());
    };
    EXPECT_EQ(run(), "witness bytes");
    const std::string original = read_file(generator.binary);
    const std::string marker = temp_parent() + "-ran";
    write_file_atomically(generator.binary, "#!/bin/sh\ntouch " + marker + "\necho -n 'witness bytes' > $2\n", 0755);
    try {
      run();
      ADD_FAILURE() << "a replaced generator ran";
    } catch (const GeneratorMismatch& e) {
      EXPECT_NE(std::string(e.what()).find(generator.binary + " has sha256 " + sha256_file_hex(generator.binary) +
                                           ", the circuit record says " + generator.sha256 + "; it was not run"),
                std::string::npos)
          << e.what();
    }
    EXPECT_FALSE(fs::exists(marker)) << "the replaced generator was executed";
    write_file_atomically(generator.binary, original, 0755);
    EXPECT_EQ(run(), "witness bytes");
    {
      // Rewritten in place, same size: the inode a check-once path would trust.
      std::fstream dat(generator.binary + ".dat", std::ios::in | std::ios::out | std::ios::binary);
      dat.write("WITNESS", 7);
    }
    EXPECT_THROW(run(), GeneratorMismatch);
    EXPECT_TRUE(fs::is_empty(temp_parent()));
  }
}

std::string input_error(const std::string& json, CurveId curve = CurveId::kBn254) {
  try {
    check_input_values(json, curve);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(CheckInputValues, AcceptsDecimalFieldElements) {
  EXPECT_EQ(input_error(R"({"a": "3", "b": [4, "5"], "bus": {"x": ["0", [1, 2]]}})"), "");
  EXPECT_EQ(input_error(
                R"({"a": "21888242871839275222246405745257275088548364400416034343698204186575808495616"})"),
            "");
}

TEST(CheckInputValues, NamesTheSignalAndTheProblem) {
  EXPECT_EQ(input_error(R"({"a": "abc"})"),
            "a: \"abc\" is not a non-negative decimal integer (inputs are field elements 0..p-1, written in decimal)");
  EXPECT_EQ(input_error(R"({"b": [1, -2]})"), "b[1]: -2 is negative (inputs are field elements 0..p-1)");
  EXPECT_EQ(input_error(R"({"a": 3.5})"), "a: 3.5 is not an integer");
  EXPECT_EQ(input_error(R"({"a": true})"),
            "a: boolean is not a number (inputs are field elements written in decimal)");
  EXPECT_NE(input_error(R"({"a": "21888242871839275222246405745257275088548364400416034343698204186575808495617"})")
                .find("a: 2188824287183927522224640574525727508854836440041603434369820418657580849561"
                      "7 is not below the BN254 scalar field prime"),
            std::string::npos);
  // The BN254 prime is a valid BLS12-381 value.
  EXPECT_EQ(input_error(R"({"a": "21888242871839275222246405745257275088548364400416034343698204186575808495617"})",
                        CurveId::kBls12381),
            "");
  EXPECT_EQ(input_error("[1]"), "expected an object of input signals, found array");
  EXPECT_NE(input_error("{").find("not JSON"), std::string::npos);
}

TEST(BuildGenerator, RefusesDirectoriesThatAreNotCircomOutput) {
  const fs::path dir = fs::path(temp_parent()) / "not_circom";
  fs::create_directories(dir);
  std::ofstream(dir / "main.cpp") << "int main() {}";
  try {
    build_generator(dir.string(), (fs::path(temp_parent()) / "out").string());
    FAIL() << "no GeneratorError";
  } catch (const GeneratorError& e) {
    EXPECT_NE(std::string(e.what()).find("missing calcwit.cpp, calcwit.hpp, circom.hpp, fr.cpp, fr.hpp, fr.asm, "
                                         "<name>.cpp"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(build_generator("/nonexistent", (fs::path(temp_parent()) / "out").string()), GeneratorError);
}

TEST(CheckGenerator, NamesTheMismatch) {
  GeneratorInfo info;
  info.name = "mul";
  info.curve = CurveId::kBn254;
  info.witness_size = 6;
  info.input_start = 2;
  info.input_count = 3;
  EXPECT_NO_THROW(check_generator(info, CurveId::kBn254, 6, 2));
  EXPECT_THROW(check_generator(info, CurveId::kBls12381, 6, 2), GeneratorError);
  EXPECT_THROW(check_generator(info, CurveId::kBn254, 7, 2), GeneratorError);
  EXPECT_THROW(check_generator(info, CurveId::kBn254, 6, 5), GeneratorError);
  EXPECT_THROW(check_generator(info, CurveId::kBn254, 6, 0), GeneratorError);
}

TEST(CheckGenerator, WithTheR1csCountsIsExact) {
  GeneratorInfo info;
  info.name = "mul";
  info.curve = CurveId::kBn254;
  info.witness_size = 6;
  info.input_start = 2;  // one output
  info.input_count = 3;
  const SignalCounts right{1, 1, 2};
  EXPECT_NO_THROW(check_generator(info, CurveId::kBn254, 6, 2, &right));
  // The bounds alone accept 2 public signals; the .r1cs says which they are.
  const SignalCounts more_outputs{2, 0, 3};
  try {
    check_generator(info, CurveId::kBn254, 6, 2, &more_outputs);
    ADD_FAILURE() << "two declared outputs accepted";
  } catch (const GeneratorError& e) {
    EXPECT_NE(std::string(e.what()).find("has 1 outputs but the circuit's .r1cs declares 2"), std::string::npos)
        << e.what();
  }
  const SignalCounts more_inputs{1, 1, 3};
  try {
    check_generator(info, CurveId::kBn254, 6, 2, &more_inputs);
    ADD_FAILURE() << "four declared inputs accepted";
  } catch (const GeneratorError& e) {
    EXPECT_NE(std::string(e.what()).find("reads 3 input signals but the circuit's .r1cs declares 1 public and 3 private"),
              std::string::npos)
        << e.what();
  }
  const SignalCounts public_mismatch{1, 0, 3};
  EXPECT_THROW(check_generator(info, CurveId::kBn254, 6, 2, &public_mismatch), GeneratorError);
}

TEST(PublicInputs, Fnv1aIsCircomsHash) {
  // FNV-1a 64: the offset basis for "", and the published vector for "a".
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
}

// A circuit with one output (signal 1), inputs a (signal 2, public), b[3]
// (signals 3-5; b[0] public) and c (signal 6), and a witness whose public
// part is in signal order.
GeneratorInfo two_public_inputs() {
  GeneratorInfo info;
  info.name = "pub";
  info.witness_size = 9;
  info.input_start = 2;
  info.input_count = 5;
  info.inputs = {{fnv1a64("b"), 3, 3}, {fnv1a64("a"), 2, 1}, {fnv1a64("c"), 6, 1}};
  info.witness_signals = {0, 1, 2, 3, 4, 5, 6};
  return info;
}

TEST(PublicInputs, MapsEachPublicInputToItsKeyAndElement) {
  const auto map = public_input_map(two_public_inputs(), 3);
  ASSERT_EQ(map.size(), 3u);
  EXPECT_FALSE(map[0]);  // the output
  ASSERT_TRUE(map[1] && map[2]);
  EXPECT_EQ(map[1]->hash, fnv1a64("a"));
  EXPECT_EQ(map[1]->index, 0u);
  EXPECT_EQ(map[2]->hash, fnv1a64("b"));
  EXPECT_EQ(map[2]->index, 0u);
  EXPECT_EQ(parse_public_input_map(public_input_map_json(map)).size(), 3u);
  EXPECT_EQ(parse_public_input_map(public_input_map_json(map))[2]->hash, fnv1a64("b"));

  const auto values = public_input_values(R"({"b": [["7", 8], [9]], "a": 5, "c": "6"})", map);
  EXPECT_EQ(values, (std::vector<std::string>{"", "5", "7"}));
}

TEST(PublicInputs, ASignalThatIsNoInputIsRefused) {
  GeneratorInfo info = two_public_inputs();
  info.witness_signals[3] = 40;  // public signal 3 from an intermediate signal
  try {
    public_input_map(info, 3);
    ADD_FAILURE() << "accepted";
  } catch (const GeneratorError& e) {
    EXPECT_NE(std::string(e.what()).find("public signal 3 (circom signal 40) is not one of its input signals"),
              std::string::npos)
        << e.what();
  }
  info.witness_signals.resize(3);
  EXPECT_THROW(public_input_map(info, 3), GeneratorError);
}

TEST(PublicInputs, MissingOrShortInputsAreNamed) {
  const auto map = public_input_map(two_public_inputs(), 3);
  try {
    public_input_values(R"({"b": [1, 2, 3]})", map);
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("no value for public signal 2"), std::string::npos) << e.what();
  }
  auto shifted = map;
  shifted[2]->index = 5;
  try {
    public_input_values(R"({"a": 1, "b": [1, 2, 3]})", shifted);
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("b has 3 values"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_public_input_map("{}"), std::invalid_argument);
  EXPECT_THROW(parse_public_input_map(R"([null, ["xyz", 0]])"), std::invalid_argument);
  EXPECT_THROW(parse_public_input_map(R"([[1, 2]])"), std::invalid_argument);
}

}  // namespace
}  // namespace zkfarm::witgen
