// misbehaving_generator.cc -- a hand-made witness generator for
// witness_generator_test: called like circom's (`<binary> input.json
// out.wtns`), it does what input.json says ("ok", "assert", "crash", "hang",
// "spin", "alloc", "silent-exit") so the sandbox can be tested against each
// way a generator fails.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <unistd.h>

#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  std::ifstream in(argv[1]);
  std::stringstream text;
  text << in.rdbuf();
  const std::string mode = text.str();
  if (mode.find("\"ok\"") != std::string::npos) {
    std::ofstream(argv[2]) << "witness bytes";
    return 0;
  }
  if (mode.find("\"assert\"") != std::string::npos) {
    std::cout << "Failed assert in template/function Check line 7." << std::endl;
    std::abort();
  }
  if (mode.find("\"crash\"") != std::string::npos) std::raise(SIGSEGV);
  if (mode.find("\"hang\"") != std::string::npos)
    for (;;) pause();
  if (mode.find("\"spin\"") != std::string::npos) {
    volatile unsigned long long x = 0;
    for (;;) x = x + 1;
  }
  if (mode.find("\"alloc\"") != std::string::npos) {
    // Address space, not pages: reaches RLIMIT_AS without touching memory.
    std::vector<char*> hog;
    for (;;) hog.push_back(new char[64u << 20]);
  }
  if (mode.find("\"silent-exit\"") != std::string::npos) return 0;
  return 3;
}
