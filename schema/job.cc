// job.cc -- see job.h.
#include "schema/job.h"

#include <nlohmann/json.hpp>

#include "base/redact.h"

#include <cctype>
#include <limits>

namespace zkfarm {
namespace {

using json = nlohmann::json;

std::string percent_decode_path(std::string_view s, const std::string& field) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    auto hex = [&](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      throw JobError(field + ": bad percent-encoding in the file URL");
    };
    if (i + 2 >= s.size()) throw JobError(field + ": bad percent-encoding in the file URL");
    out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
    i += 2;
  }
  return out;
}

std::string type_name(const json& v) { return v.type_name(); }

// A streaming pass over job JSON (nlohmann's SAX parser keeps its own state
// stack, so nesting costs heap, not call depth): checks the nesting limit
// and remembers the top-level "id" string. Stops at the first violation.
class JobScan {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  explicit JobScan(bool enforce_depth) : enforce_depth_(enforce_depth) {}

  std::optional<std::string> id;
  std::string error;  // "" when the scan found nothing wrong

  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(number_integer_t) { return value(); }
  bool number_unsigned(number_unsigned_t) { return value(); }
  bool number_float(number_float_t, const string_t&) { return value(); }
  bool binary(binary_t&) { return value(); }
  bool string(string_t& s) {
    if (depth_ == 1 && key_ == "id" && !id) id = s;
    return value();
  }
  bool start_object(std::size_t) { return open(); }
  bool start_array(std::size_t) { return open(); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(string_t& k) {
    if (depth_ == 1) key_ = k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    error = std::string("job is not valid JSON: ") + e.what();
    return false;
  }

 private:
  bool value() {
    if (depth_ == 1) key_.clear();
    return true;
  }
  bool open() {
    if (++depth_ > kMaxJobJsonDepth && enforce_depth_) {
      error = (key_.empty() ? std::string("job JSON") : key_.substr(0, 64)) +
              ": arrays/objects nested more than " + std::to_string(kMaxJobJsonDepth) +
              " levels deep (the limit, counting the job object)";
      return false;
    }
    return true;
  }
  bool close() {
    if (--depth_ == 1) key_.clear();
    return true;
  }
  const bool enforce_depth_;
  std::size_t depth_ = 0;
  std::string key_;  // the top-level field being read ("" outside one)
};

// enforce_depth false: read to the end whatever the nesting (to find an id
// that follows a too-deep field).
JobScan scan_job(std::string_view text, bool enforce_depth) {
  JobScan scan(enforce_depth);
  json::sax_parse(text.begin(), text.end(), &scan, nlohmann::detail::input_format_t::json, /*strict=*/true);
  return scan;
}

}  // namespace

const char* priority_name(Priority p) {
  switch (p) {
    case Priority::kCritical: return "critical";
    case Priority::kHigh: return "high";
    case Priority::kNormal: return "normal";
    case Priority::kLow: return "low";
  }
  return "normal";
}

std::optional<Priority> parse_priority(std::string_view name) {
  for (Priority p : kAllPriorities)
    if (name == priority_name(p)) return p;
  return std::nullopt;
}

std::string WitnessRef::describe() const {
  switch (kind) {
    case Kind::kFile: return "file://" + location;
    case Kind::kRedis: return "redis://" + location;
    case Kind::kInline: return "inline witness (" + std::to_string(inline_bytes.size()) + " bytes)";
    case Kind::kInput: return "input (" + std::to_string(input_json.size()) + " bytes)";
    case Kind::kHttp: return redact_url(location);
  }
  return "?";
}

std::string file_url(const std::string& absolute_path) {
  // Everything that would break the URL form, and every byte above 0x7e: a
  // decoded path may hold bytes that are not UTF-8 (%ba), which the JSON
  // text cannot carry raw (found by job_fuzz).
  static const char* kHex = "0123456789ABCDEF";
  std::string url = "file://";
  for (char c : absolute_path) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '%' || c == ' ' || byte < 0x20 || byte >= 0x7f) {
      url += '%';
      url += kHex[byte >> 4];
      url += kHex[byte & 15];
    } else {
      url += c;
    }
  }
  return url;
}

WitnessRef parse_witness_url(std::string_view url, const std::string& field) {
  WitnessRef ref;
  if (url.rfind("file://", 0) == 0) {
    std::string_view rest = url.substr(7);
    auto slash = rest.find('/');
    if (slash == std::string_view::npos)
      throw JobError(field + ": file URL '" + std::string(url) + "' has no absolute path");
    std::string_view host = rest.substr(0, slash);
    if (!host.empty() && host != "localhost")
      throw JobError(field + ": file URL host '" + std::string(host) +
                     "' is not supported (use file:///absolute/path on shared storage)");
    ref.kind = WitnessRef::Kind::kFile;
    ref.location = percent_decode_path(rest.substr(slash), field);
    if (ref.location.find('\0') != std::string::npos) throw JobError(field + ": NUL in the file path");
    return ref;
  }
  if (url.rfind("redis://", 0) == 0) {
    ref.kind = WitnessRef::Kind::kRedis;
    ref.location = std::string(url.substr(8));
    if (ref.location.empty()) throw JobError(field + ": redis:// URL names no key");
    return ref;
  }
  if (is_http_url(url)) {
    if (const std::string problem = check_http_url(url); !problem.empty())
      throw JobError(field + ": witness URL " + redact_url(url) + ": " + problem);
    ref.kind = WitnessRef::Kind::kHttp;
    ref.location = std::string(url);
    return ref;
  }
  auto colon = url.find(':');
  std::string scheme = colon == std::string_view::npos ? std::string(url.substr(0, 16))
                                                       : std::string(url.substr(0, colon));
  throw JobError(field + ": unsupported scheme '" + scheme +
                 "' (expected file://, redis://, http(s):// or witness_base64)");
}

bool is_valid_job_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxJobIdLength) return false;
  for (char c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  return true;
}

void check_job_id(std::string_view id, const std::string& field) {
  if (is_valid_job_id(id)) return;
  std::string shown;
  for (char c : id.substr(0, 140)) shown += (c >= 32 && c < 127) ? c : '?';
  throw JobError(field + ": '" + shown + "' is not a valid job id (1.." + std::to_string(kMaxJobIdLength) +
                 " characters of " + kJobIdAlphabet + ")");
}

bool is_valid_circuit_id(std::string_view id) {
  if (id.size() != 64) return false;
  for (char c : id)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::optional<std::string> extract_job_id(std::string_view text) {
  JobScan scan = scan_job(text, /*enforce_depth=*/false);
  if (!scan.error.empty() || !scan.id || !is_valid_job_id(*scan.id)) return std::nullopt;
  return scan.id;
}

JobSpec parse_job(std::string_view text, bool require_id) {
  if (text.size() > kMaxJobJsonBytes)
    throw JobError("job JSON is " + std::to_string(text.size()) + " bytes, the limit is " +
                   std::to_string(kMaxJobJsonBytes));
  // The limits first, on a stream: only then is a document built (and
  // later serialized, which recurses once per level).
  if (JobScan scan = scan_job(text, /*enforce_depth=*/true); !scan.error.empty()) throw JobError(scan.error);
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number beyond a double (1e400).
    throw JobError(std::string("job is not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) throw JobError("job JSON must be an object, got " + type_name(doc));
  static const char* kKnown[] = {"id", "circuit", "priority", "deadline", "max_attempts", "partitions", "metadata"};
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    bool known = false;
    for (const char* k : kKnown) known = known || it.key() == k;
    if (!known)
      throw JobError("unknown field '" + it.key() +
                     "' (expected id, circuit, priority, deadline, max_attempts, partitions, metadata)");
  }
  JobSpec spec;
  if (auto it = doc.find("id"); it != doc.end()) {
    if (!it->is_string()) throw JobError("id: expected a string, got " + type_name(*it));
    spec.id = it->get<std::string>();
    check_job_id(spec.id);
  } else if (require_id) {
    throw JobError("id: missing");
  }
  auto circuit = doc.find("circuit");
  if (circuit == doc.end()) throw JobError("circuit: missing");
  if (!circuit->is_string()) throw JobError("circuit: expected a string, got " + type_name(*circuit));
  spec.circuit = circuit->get<std::string>();
  if (!is_valid_circuit_id(spec.circuit))
    throw JobError("circuit: '" + spec.circuit.substr(0, 80) +
                   "' is not a circuit id (64 lowercase hex digits: the zkey's sha256)");
  if (auto it = doc.find("priority"); it != doc.end()) {
    if (!it->is_string()) throw JobError("priority: expected a string, got " + type_name(*it));
    auto p = parse_priority(it->get<std::string>());
    if (!p)
      throw JobError("priority: '" + it->get<std::string>().substr(0, 40) +
                     "' is not one of critical, high, normal, low");
    spec.priority = *p;
  }
  if (auto it = doc.find("deadline"); it != doc.end() && !it->is_null()) {
    if (!it->is_number()) throw JobError("deadline: expected unix seconds (a number), got " + type_name(*it));
    double d = it->get<double>();
    if (!(d > 0 && d < 1e11)) throw JobError("deadline: " + it->dump() + " is not a plausible unix time");
    spec.deadline_unix = d;
  }
  if (auto it = doc.find("max_attempts"); it != doc.end()) {
    // A positive integer: 2.0, "2", 0, -1 and null are refused, not rounded.
    if (!it->is_number_unsigned() || it->get<std::uint64_t>() == 0 ||
        it->get<std::uint64_t>() > std::numeric_limits<std::uint32_t>::max())
      throw JobError("max_attempts: expected a positive integer (failed attempts of a partition before the job "
                     "fails), got " + it->dump().substr(0, 40));
    spec.max_attempts = static_cast<std::uint32_t>(it->get<std::uint64_t>());
  }
  auto parts = doc.find("partitions");
  if (parts == doc.end()) throw JobError("partitions: missing");
  if (!parts->is_array()) throw JobError("partitions: expected an array, got " + type_name(*parts));
  if (parts->empty()) throw JobError("partitions: empty (a job needs at least one partition)");
  if (parts->size() > kMaxPartitions)
    throw JobError("partitions: " + std::to_string(parts->size()) + " entries, the limit is " +
                   std::to_string(kMaxPartitions));
  for (std::size_t i = 0; i < parts->size(); ++i) {
    const json& p = (*parts)[i];
    const std::string field = "partitions[" + std::to_string(i) + "]";
    if (p.is_string()) {
      spec.partitions.push_back(parse_witness_url(p.get<std::string>(), field));
      continue;
    }
    if (!p.is_object()) throw JobError(field + ": expected an object or a witness URL, got " + type_name(p));
    auto url = p.find("witness");
    auto b64 = p.find("witness_base64");
    auto input = p.find("input");
    for (auto it = p.begin(); it != p.end(); ++it)
      if (it.key() != "witness" && it.key() != "witness_base64" && it.key() != "input" && it.key() != "sha256" &&
          it.key() != "size")
        throw JobError(field + ": unknown field '" + it.key() +
                       "' (expected witness, witness_base64 or input, and optionally sha256 and size)");
    std::string sha256;
    std::uint64_t size = 0;
    if (auto it = p.find("sha256"); it != p.end()) {
      if (!it->is_string() || it->get_ref<const std::string&>().size() != 64 ||
          it->get_ref<const std::string&>().find_first_not_of("0123456789abcdef") != std::string::npos)
        throw JobError(field + ".sha256: expected 64 lowercase hex digits");
      sha256 = it->get<std::string>();
    }
    if (auto it = p.find("size"); it != p.end()) {
      if (!it->is_number_unsigned() || it->get<std::uint64_t>() == 0)
        throw JobError(field + ".size: expected a positive integer (bytes)");
      size = it->get<std::uint64_t>();
    }
    if ((url != p.end()) + (b64 != p.end()) + (input != p.end()) != 1)
      throw JobError(field + ": give exactly one of witness (a URL), witness_base64 and input");
    if (input != p.end() && (!sha256.empty() || size > 0))
      throw JobError(field + ": sha256 and size check a witness's bytes, not an input");
    if (input != p.end()) {
      if (!input->is_object())
        throw JobError(field + ".input: expected an object of input signals (circom's input.json), got " +
                       type_name(*input));
      WitnessRef ref;
      ref.kind = WitnessRef::Kind::kInput;
      ref.input_json = input->dump();
      if (ref.input_json.size() > kMaxInputBytes)
        throw JobError(field + ".input: " + std::to_string(ref.input_json.size()) +
                       " bytes serialized, the limit is " + std::to_string(kMaxInputBytes));
      spec.partitions.push_back(std::move(ref));
    } else if (url != p.end()) {
      if (!url->is_string()) throw JobError(field + ".witness: expected a string, got " + type_name(*url));
      spec.partitions.push_back(parse_witness_url(url->get<std::string>(), field + ".witness"));
      spec.partitions.back().sha256 = sha256;
      spec.partitions.back().size = size;
    } else {
      if (!b64->is_string())
        throw JobError(field + ".witness_base64: expected a string, got " + type_name(*b64));
      const std::string& text = b64->get_ref<const std::string&>();
      if (text.size() / 4 * 3 > kMaxInlineWitnessBytes + 3)
        throw JobError(field + ".witness_base64: more than " + std::to_string(kMaxInlineWitnessBytes) +
                       " bytes; pass large witnesses by file:// or redis:// reference");
      WitnessRef ref;
      ref.kind = WitnessRef::Kind::kInline;
      try {
        ref.inline_bytes = base64_decode(text);
      } catch (const JobError& e) {
        throw JobError(field + ".witness_base64: " + e.what());
      }
      if (ref.inline_bytes.empty()) throw JobError(field + ".witness_base64: empty");
      ref.sha256 = sha256;
      ref.size = size;
      spec.partitions.push_back(std::move(ref));
    }
  }
  if (auto it = doc.find("metadata"); it != doc.end() && !it->is_null()) {
    spec.metadata_json = it->dump();
    if (spec.metadata_json.size() > kMaxMetadataBytes)
      throw JobError("metadata: " + std::to_string(spec.metadata_json.size()) + " bytes serialized, the limit is " +
                     std::to_string(kMaxMetadataBytes));
  }
  return spec;
}

std::string JobSpec::to_json() const {
  json doc = json::object();
  if (!id.empty()) doc["id"] = id;
  doc["circuit"] = circuit;
  doc["priority"] = priority_name(priority);
  if (deadline_unix) doc["deadline"] = *deadline_unix;
  if (max_attempts) doc["max_attempts"] = *max_attempts;
  json parts = json::array();
  for (const auto& p : partitions) {
    const std::size_t before = parts.size();
    switch (p.kind) {
      case WitnessRef::Kind::kFile: {
        parts.push_back({{"witness", file_url(p.location)}});
        break;
      }
      case WitnessRef::Kind::kRedis: parts.push_back({{"witness", "redis://" + p.location}}); break;
      case WitnessRef::Kind::kInline: parts.push_back({{"witness_base64", base64_encode(p.inline_bytes)}}); break;
      case WitnessRef::Kind::kInput: parts.push_back({{"input", json::parse(p.input_json)}}); break;
      case WitnessRef::Kind::kHttp: parts.push_back({{"witness", p.location}}); break;
    }
    if (parts.size() > before) {
      if (!p.sha256.empty()) parts.back()["sha256"] = p.sha256;
      if (p.size > 0) parts.back()["size"] = p.size;
    }
  }
  doc["partitions"] = std::move(parts);
  if (!metadata_json.empty()) doc["metadata"] = json::parse(metadata_json);
  return doc.dump();
}

std::string base64_encode(const std::vector<std::uint8_t>& bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    std::uint32_t v = std::uint32_t(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= std::uint32_t(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) v |= bytes[i + 2];
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[v & 63] : '=';
  }
  return out;
}

std::vector<std::uint8_t> base64_decode(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  std::vector<std::uint8_t> out;
  out.reserve(text.size() / 4 * 3);
  std::uint32_t acc = 0;
  int bits = 0;
  std::size_t padding = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '=') {
      ++padding;
      continue;
    }
    if (padding) throw JobError("base64: data after padding at offset " + std::to_string(i));
    int v = value(c);
    if (v < 0) throw JobError("base64: invalid character at offset " + std::to_string(i));
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<std::uint8_t>(acc >> bits));
      acc &= (1u << bits) - 1;
    }
  }
  if (padding > 2 || bits >= 6) throw JobError("base64: bad length or padding");
  return out;
}

}  // namespace zkfarm
