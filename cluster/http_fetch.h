// http_fetch.h -- HTTP(S) downloads (libcurl) for witnesses and artifacts.
//
// Witnesses named by http:// or https:// URLs (pre-signed object-store URLs,
// any web server) are read into memory in one buffer, sized from the job's
// "size" or the Content-Length before the first byte arrives; artifacts are
// streamed into a file, resuming a partial one with a Range request when
// the server honours it (and starting over when it does not).
//
// Limits (HttpLimits, on by default): connect timeout, a whole-transfer
// timeout, a stall timeout (below 1 KiB/s), at most 5 redirects and only to
// http(s), a size cap, and TLS peer and host verification against the
// system CAs or --ca-file.
//
// A URL's query string may carry a signature: every HttpError message names
// the URL through redact_url() (base/redact.h) only.
//
// Thread-safe: each call uses its own curl handle.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/redact.h"

namespace zkfarm {

struct HttpLimits {
  std::chrono::seconds connect_timeout{10};
  std::chrono::seconds timeout{3600};        // the whole transfer
  std::chrono::seconds stall_timeout{30};    // slower than 1 KiB/s this long
  long max_redirects = 5;
  std::uint64_t max_bytes = 64ull << 30;     // refuse bodies larger than this
  std::string ca_file;                       // PEM bundle; empty: the system CAs
};

// A failed transfer. The message names the redacted URL and the reason;
// `status` is the HTTP status (0: no response); transient() says whether
// trying again later, or from another host, may succeed (no response, a
// timeout, 408, 429, 5xx).
class HttpError : public std::runtime_error {
 public:
  HttpError(const std::string& message, long status, bool transient)
      : std::runtime_error(message), status_(status), transient_(transient) {}
  long status() const { return status_; }
  bool transient() const { return transient_; }

 private:
  long status_;
  bool transient_;
};

// GETs `url` into memory. expected_size, when given, must equal the body's
// length (checked against Content-Length before the body, and at the end).
// Throws HttpError.
std::vector<std::uint8_t> http_get(const std::string& url, const HttpLimits& limits,
                                   std::optional<std::uint64_t> expected_size = std::nullopt);

// The start of a body: what http_get_prefix returns.
struct HttpPrefix {
  std::vector<std::uint8_t> bytes;     // the first min(n, length) bytes
  std::optional<std::uint64_t> total;  // the whole body's length, when the server said
};

// GETs the first `n` bytes of `url` (Range: bytes=0-(n-1)). A server that
// ignores Range and sends the whole body is cut off after n bytes, so at
// most about n bytes cross the network either way. Throws HttpError.
HttpPrefix http_get_prefix(const std::string& url, const HttpLimits& limits, std::uint64_t n);

// Progress of a download: bytes in the file so far, total (0: unknown).
using HttpProgress = std::function<void(std::uint64_t done, std::uint64_t total)>;

// GETs `url` into the file `path`. When `path` already holds bytes (a
// transfer broken earlier), asks for the rest (Range) and appends if the
// server answers 206, else truncates and starts over. expected_size, when
// given, bounds the file (a longer body is refused). `progress` is called at
// most once a second and at the end. Throws HttpError, or
// std::system_error naming the path for a local write failure.
void http_download(const std::string& url, const std::string& path, const HttpLimits& limits,
                   std::optional<std::uint64_t> expected_size, const HttpProgress& progress);

}  // namespace zkfarm
