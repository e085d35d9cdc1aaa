// curve_keys.cc -- see curve_keys.h.
#include "cluster/curve_keys.h"

#include <fcntl.h>
#include <unistd.h>
#include <zmq.h>

#include <fstream>

namespace zkfarm {
namespace {

std::string trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  const auto end = s.find_last_not_of(" \t\r\n");
  return s.substr(begin, end - begin + 1);
}

}  // namespace

bool is_curve_key(const std::string& key) {
  std::uint8_t bytes[32];
  return key.size() == 40 && zmq_z85_decode(bytes, key.c_str()) != nullptr;
}

CurveKeyPair generate_curve_keypair() {
  if (!zmq_has("curve")) throw std::runtime_error("this libzmq was built without CURVE support");
  char pub[41], sec[41];
  if (zmq_curve_keypair(pub, sec) != 0) throw std::runtime_error("zmq_curve_keypair failed");
  return {pub, sec};
}

std::string curve_public_key(const std::string& secret_z85) {
  if (!is_curve_key(secret_z85)) throw std::invalid_argument("CURVE secret key is not 40 characters of Z85");
  char pub[41];
  if (zmq_curve_public(pub, secret_z85.c_str()) != 0) throw std::invalid_argument("zmq_curve_public failed");
  return pub;
}

// The key on a line, "" for a blank or comment line. Z85 itself uses '#',
// so a comment is a line whose first token is not a key and starts with '#';
// text after a key (separated by whitespace) is ignored.
std::string key_on_line(const std::string& raw, const std::string& where) {
  const std::string line = trim(raw);
  if (line.empty()) return "";
  const std::string token = line.substr(0, line.find_first_of(" \t"));
  if (is_curve_key(token)) return token;
  if (line[0] == '#') return "";
  throw std::runtime_error(where + ": not a 40-character Z85 CURVE key");
}

std::string read_curve_key_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read CURVE key file " + path);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (auto key = key_on_line(line, path + ":" + std::to_string(n)); !key.empty()) return key;
  throw std::runtime_error(path + ": no key found");
}

std::set<std::string> read_curve_allowlist(const std::string& path) {
  std::set<std::string> keys;
  for (const auto& [key, ids] : read_curve_allowlist_ids(path)) keys.insert(key);
  return keys;
}

std::map<std::string, std::set<std::string>> read_curve_allowlist_ids(const std::string& path) {
  // Worker ids name Redis keys: the coordinator's bound (constants.h
  // kMaxWorkerIdBytes), repeated here so a bad allowlist fails at start.
  constexpr std::size_t kMaxIdBytes = 200;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read CURVE allowlist " + path);
  std::map<std::string, std::set<std::string>> keys;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string where = path + ":" + std::to_string(n);
    const std::string key = key_on_line(line, where);
    if (key.empty()) continue;
    if (keys.count(key)) throw std::runtime_error(where + ": key listed twice");
    std::set<std::string>& ids = keys[key];
    const std::string rest = trim(trim(line).substr(key.size()));
    if (rest.rfind("ids=", 0) != 0) continue;  // a note, or nothing
    const std::string list = rest.substr(4, rest.find_first_of(" \t") == std::string::npos
                                                ? std::string::npos
                                                : rest.find_first_of(" \t") - 4);
    std::size_t begin = 0;
    for (;;) {
      const std::size_t comma = list.find(',', begin);
      const std::string id = list.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
      if (id.empty() || id.size() > kMaxIdBytes)
        throw std::runtime_error(where + ": ids= needs worker ids of 1 to " + std::to_string(kMaxIdBytes) +
                                 " bytes, separated by commas");
      ids.insert(id);
      if (comma == std::string::npos) break;
      begin = comma + 1;
    }
  }
  return keys;
}

void write_curve_key_file(const std::string& path, const std::string& key_z85) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot create " + path);
  const std::string text = key_z85 + "\n";
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!ok) throw std::runtime_error("cannot write " + path);
}

}  // namespace zkfarm
