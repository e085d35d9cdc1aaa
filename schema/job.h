// job.h -- the job model: a proving job as submitted (JobSpec), what each
// partition is proved from (WitnessRef), the priorities, and the job JSON
// that carries them (parsing, validation, the canonical form). The wire form
// of a witness reference and of a task is in schema/wire_model.h; the
// error codes in schema/error_code.h.
//
//
//   {
//     "id": "porep-42",                 optional; [A-Za-z0-9._-], 1..128 chars
//                                        (submit() generates one when absent)
//     "circuit": "<64 hex digits>",     sha256 of the circuit's zkey
//     "priority": "normal",             critical | high | normal | low (default normal)
//     "deadline": 1764500000.5,         optional, unix seconds; past it the job fails
//     "max_attempts": 2,                optional, a positive integer: failed attempts of a
//                                        partition before the job fails (the coordinator's
//                                        --max-attempts bounds it: the smaller counts)
//     "partitions": [                   1..kMaxPartitions entries, proved independently
//       {"witness": "file:///shared/p0.wtns"},   a file every worker host can read
//       {"witness": "redis://zkfarm:wtns:p1"},   a Redis string key (small witnesses)
//       {"witness": "https://bucket.example/p2.wtns?X-Amz-Signature=...",
//        "sha256": "<64 hex digits>", "size": 123456}   fetched over HTTP(S);
//                                        sha256 and size optional (any witness)
//       {"witness_base64": "d3RucwIAAAA..."},    the .wtns bytes inline (tiny ones)
//       {"input": {"a": "3", "b": ["4", "5"]}}   circom input signals: the worker
//                                                 computes the witness (witgen/)
//     ],
//     "metadata": {...}                 optional, opaque, kept with the job
//   }
//
// Limits, checked before a document is built (a streaming scan: nothing in
// it recurses, so no input can exhaust the stack): the whole JSON at most
// kMaxJobJsonBytes, arrays and objects nested at most kMaxJobJsonDepth deep
// (the job object itself is level 1), metadata at most kMaxMetadataBytes
// once serialized. Job ids exclude ':' (the Redis key separator), so no id
// names another job's key (job:<a>:proofs is not job:<b> for any valid b).
//
// A partition may also be given as a bare string (the witness URL). Unknown
// top-level fields are errors (a misspelt "partitons" must not be ignored).
// Errors are JobError whose message names the field: "partitions[2].witness:
// unsupported scheme 'ftp' (expected file://, redis://, http(s):// or
// witness_base64)". An http(s) URL is named in messages and logs only
// through redact_url() (base/redact.h): its query string may be a
// signature.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>


namespace zkfarm {

// Strict priority between jobs (coordinator/scheduler.h); one Redis queue
// each (cluster/keys.h).
enum class Priority { kCritical = 0, kHigh = 1, kNormal = 2, kLow = 3 };
inline constexpr std::array<Priority, 4> kAllPriorities = {Priority::kCritical, Priority::kHigh,
                                                          Priority::kNormal, Priority::kLow};

// "critical", "high", "normal", "low".
const char* priority_name(Priority p);
// The priority named `name`, or nullopt for a name that is not one.
std::optional<Priority> parse_priority(std::string_view name);

class JobError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr std::size_t kMaxPartitions = 4096;
inline constexpr std::size_t kMaxInlineWitnessBytes = 1u << 20;
inline constexpr std::size_t kMaxInputBytes = 1u << 20;  // one partition's "input", serialized
inline constexpr std::size_t kMaxJobJsonBytes = 8u << 20;
inline constexpr std::size_t kMaxJobJsonDepth = 32;
inline constexpr std::size_t kMaxMetadataBytes = 64u << 10;
inline constexpr std::size_t kMaxJobIdLength = 128;
// The id alphabet, for messages: "A-Z a-z 0-9 . _ -".
inline constexpr const char* kJobIdAlphabet = "A-Z a-z 0-9 . _ -";

// What a partition is proved from: a witness (by reference or inline), or
// the circuit's input signals, from which the worker that proves it
// computes the witness with the circuit's witness generator.
struct WitnessRef {
  enum class Kind { kFile, kRedis, kInline, kInput, kHttp };
  Kind kind = Kind::kFile;
  std::string location;               // kFile: absolute path; kRedis: key; kHttp: the whole URL
  std::vector<std::uint8_t> inline_bytes;  // kInline
  std::string input_json;             // kInput: the input object, compact JSON
  // Optional checks of the bytes, whatever the kind: sha256 (64 lowercase
  // hex digits, "" when not given) and size in bytes (0: not given).
  std::string sha256;
  std::uint64_t size = 0;
  // "file:///p/a.wtns", "redis://key", "inline witness (300 bytes)",
  // "input (52 bytes)", "https://host/p.wtns?<redacted>" (never the query
  // string).
  std::string describe() const;
};

// "file://" + absolute_path, percent-encoding '%', ' ', control bytes and
// every byte above 0x7e (a path need not be UTF-8; the job's JSON must be).
// parse_witness_url decodes it again.
std::string file_url(const std::string& absolute_path);

// Parses "file:///abs/path" (percent-decoded; host must be empty or
// "localhost"), "redis://key" or "http(s)://host/path?query" (kept as given).
// Throws JobError naming `field`.
WitnessRef parse_witness_url(std::string_view url, const std::string& field);

struct JobSpec {
  std::string id;  // may be empty before submit() assigns one
  std::string circuit;
  Priority priority = Priority::kNormal;
  std::optional<double> deadline_unix;  // seconds
  // Failed attempts of one partition before the job fails; the coordinator
  // uses min(this, its --max-attempts). nullopt: the flag's value.
  std::optional<std::uint32_t> max_attempts;
  std::vector<WitnessRef> partitions;
  std::string metadata_json;            // "" when absent

  // The canonical JSON of this spec (inline witnesses re-encoded).
  std::string to_json() const;
};

// Parses and validates job JSON. When require_id is false a missing id is
// allowed (left empty). Throws JobError with a clear message.
JobSpec parse_job(std::string_view json, bool require_id = true);

// Best effort: the "id" string of something that may not be a valid job (to
// attribute a failure). nullopt if there is none or it is not a valid id.
// Safe on any input (streaming, bounded work per byte, no recursion): it
// also finds the id of JSON that nests too deep or is too long for
// parse_job.
std::optional<std::string> extract_job_id(std::string_view json);

// 1..kMaxJobIdLength characters of [A-Za-z0-9._-].
bool is_valid_job_id(std::string_view id);
// Throws JobError naming the id and the rule unless is_valid_job_id(id).
void check_job_id(std::string_view id, const std::string& field = "id");
bool is_valid_circuit_id(std::string_view id);  // 64 lowercase hex digits

std::string base64_encode(const std::vector<std::uint8_t>& bytes);
// Throws JobError on characters outside the alphabet or bad padding.
std::vector<std::uint8_t> base64_decode(std::string_view text);

}  // namespace zkfarm
