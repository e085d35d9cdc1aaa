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
// system CAs or --ca-file. The size cap is the transfer's: a caller that
// knows how large the body can be (a witness: the circuit's .wtns size)
// lowers it, and a larger Content-Length is refused before any byte of the
// body, a longer body as soon as it passes the cap; nothing is reserved
// beyond it.
//
// Confinement (HttpLimits::urls, a UrlPolicy: --witness-url-allow): which
// URLs a transfer may reach. The URL's text is checked before the first
// request and before every request that follows a redirect; the address
// curl is about to connect to is checked before every connection
// (CURLOPT_OPENSOCKETFUNCTION), so a name that resolves to a loopback,
// link-local or private address, or a redirect to one, is refused unless
// an allow entry names that host or URL. A refused URL and one that cannot
// be reached (no such host, nothing listening, no connection in time) fail
// with the same message (kUnreachable), so an error never tells a closed
// port from a live service.
//
// No exception crosses libcurl's C frames: the callbacks catch everything,
// abort the transfer, and the error is thrown once curl has returned.
//
// A URL's query string may carry a signature: every HttpError message names
// the URL through redact_url() (base/redact.h) only.
//
// Thread-safe: each call uses its own curl handle.
#pragma once

#include <atomic>
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

// Which URLs a transfer may reach: parsed from --witness-url-allow entries
// by parse_url_policy. A URL is allowed when `public_hosts` is set and every
// address it connects to is public, or when an entry names it: a host
// ("store.internal", "10.0.0.5", "[fd00::5]"; any scheme and port) or a URL
// prefix ("https://store.internal:9000/witnesses/": same scheme, host and
// port, the path below the prefix's). A named URL may connect to loopback,
// link-local and private addresses; nothing else may.
struct UrlPolicy {
  bool public_hosts = false;  // the entry "public"
  std::vector<std::string> hosts;  // lower case; IPv6 literals in brackets
  struct Prefix {
    std::string scheme, host, path;  // "/w/" or "/w": /w/... (and /w itself)
    long port = 0;
  };
  std::vector<Prefix> prefixes;
};

// The entry that allows every URL whose addresses are all public (the
// binaries' default), and the one that allows none (the shipped configs').
inline constexpr std::string_view kAllowPublic = "public";
inline constexpr std::string_view kAllowNone = "none";

// Parses --witness-url-allow entries (each may be a comma list): hosts, URL
// prefixes, "public", or "none" alone. Returns the policy; throws
// std::invalid_argument naming a malformed entry (a prefix with a query, a
// user or a scheme other than http(s); a host with characters a host
// cannot have; "none" beside other entries; no entry at all).
UrlPolicy parse_url_policy(const std::vector<std::string>& entries);

// What every refused or unreachable URL's HttpError says after the URL.
inline constexpr std::string_view kUnreachable =
    "unreachable or not allowed (no answer, or --witness-url-allow does not name it)";

struct HttpLimits {
  std::chrono::seconds connect_timeout{10};
  std::chrono::seconds timeout{3600};        // the whole transfer
  std::chrono::seconds stall_timeout{30};    // slower than 1 KiB/s this long
  long max_redirects = 5;
  // Refuse bodies larger than this: 64 GiB, above any witness or key a farm
  // proves with (a PoRep partition's witness is ~4.2 GB, its key ~47 GB);
  // callers that know the size lower it per transfer.
  std::uint64_t max_bytes = 64ull << 30;
  std::string ca_file;                       // PEM bundle; empty: the system CAs
  // Where the transfer may go; nullopt: anywhere (artifacts, from the
  // operator's own --artifacts URL).
  std::optional<UrlPolicy> urls;
  // When set and true, the transfer stops within about a second (curl
  // calls its progress function at least once a second, idle or not) and
  // fails with HttpError::cancelled(): a task cancelled mid-download.
  const std::atomic<bool>* cancelled = nullptr;
};

// A failed transfer. The message names the redacted URL and the reason;
// `status` is the HTTP status (0: no response); transient() says whether
// trying again later, or from another host, may succeed (no response, a
// timeout, 408, 429, 5xx); too_large() that the body is (or was announced)
// longer than the transfer's cap.
class HttpError : public std::runtime_error {
 public:
  HttpError(const std::string& message, long status, bool transient, bool too_large = false, bool cancelled = false)
      : std::runtime_error(message), status_(status), transient_(transient), too_large_(too_large),
        cancelled_(cancelled) {}
  long status() const { return status_; }
  bool transient() const { return transient_; }
  bool too_large() const { return too_large_; }
  bool cancelled() const { return cancelled_; }  // HttpLimits::cancelled stopped it

 private:
  long status_;
  bool transient_;
  bool too_large_;
  bool cancelled_;
};

// GETs `url` into memory. expected_size, when given, must equal the body's
// length (checked against Content-Length before the body, and at the end);
// at most min(expected_size, limits.max_bytes) bytes are ever held. Throws
// HttpError (too_large() for a body past the cap).
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
