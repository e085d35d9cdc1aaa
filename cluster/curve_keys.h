// curve_keys.h -- ZeroMQ CURVE keys for coordinator <-> worker encryption
// and worker authentication.
//
// Keys are Z85 text (40 characters), as zmq_curve_keypair makes them. A key
// file holds one key on its first non-comment line; an allowlist file holds
// one worker public key per line, optionally followed by whitespace, the
// worker ids the key may say hello as ("ids=host-a/gpu0,host-a/gpu1": a host
// whose workers share a key; without it the key may use one id, the first
// it says hello with) and a note. Lines starting with '#' are comments (Z85 uses '#' inside keys, so
// "everything after #" would cut keys; a key never starts with '#'). The coordinator
// runs a ZAP handler that admits exactly the allowlisted worker keys; a
// worker must know the coordinator's public key. Secret keys are never
// logged.
#pragma once

#include <map>
#include <set>
#include <stdexcept>
#include <string>

namespace zkfarm {

struct CurveKeyPair {
  std::string public_key;  // Z85
  std::string secret_key;  // Z85
};

// True if key is 40 characters of valid Z85 (a 32-byte key).
bool is_curve_key(const std::string& key);
// Throws std::runtime_error if libzmq was built without CURVE.
CurveKeyPair generate_curve_keypair();
// The public key of a Z85 secret key. Throws std::invalid_argument.
std::string curve_public_key(const std::string& secret_z85);
// The key of the first non-comment line of path.
// Throws std::runtime_error naming the path (never the key).
std::string read_curve_key_file(const std::string& path);
// Every key in an allowlist file. Throws std::runtime_error naming the line.
std::set<std::string> read_curve_allowlist(const std::string& path);
// Every key in an allowlist file with the worker ids listed for it (an
// empty set: none listed). Throws std::runtime_error naming the line (a
// key listed twice, an empty or over-long id in ids=).
std::map<std::string, std::set<std::string>> read_curve_allowlist_ids(const std::string& path);
// Writes a key file with mode 0600. Throws std::runtime_error.
void write_curve_key_file(const std::string& path, const std::string& key_z85);

}  // namespace zkfarm
