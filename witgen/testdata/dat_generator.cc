// dat_generator.cc -- a stand-in witness generator for cluster tests: called
// like circom's (`<binary> input.json out.wtns`), it ignores the input and
// writes its constants file, <argv[0]>.dat, as the witness (as circom's
// main reads <argv[0]>.dat). Registered with a fixture witness as its .dat,
// it makes input jobs of a fixture circuit that prove.
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const std::string dat = std::string(argv[0]) + ".dat";
  std::FILE* in = std::fopen(dat.c_str(), "rb");
  if (!in) {
    std::fprintf(stderr, "cannot open %s\n", dat.c_str());
    return 1;
  }
  std::FILE* out = std::fopen(argv[2], "wb");
  if (!out) return 1;
  char buffer[65536];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, in)) > 0;)
    if (std::fwrite(buffer, 1, n, out) != n) return 1;
  return std::fclose(out) == 0 && std::fclose(in) == 0 ? 0 : 1;
}
