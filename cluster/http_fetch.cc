// http_fetch.cc -- see http_fetch.h.
#include "cluster/http_fetch.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>

namespace zkfarm {

namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// Replaces every occurrence of the URL's secret parts in `text` (curl's own
// messages may quote the URL).
std::string scrub(std::string text, const std::string& url) {
  const std::size_t query = url.find_first_of("?#");
  std::vector<std::string> secrets;
  secrets.push_back(url);
  if (query != std::string::npos && query + 1 < url.size()) secrets.push_back(url.substr(query + 1));
  for (const auto& secret : secrets) {
    if (secret.empty()) continue;
    for (std::size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at))
      text.replace(at, secret.size(), redact_url(url)), at += 1;
  }
  return text;
}

bool transient_status(long status) { return status == 0 || status == 408 || status == 429 || status >= 500; }

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// A URL's parts as curl's parser sees them (the same parser that makes the
// request): scheme and host lower case, the port resolved (80, 443).
struct UrlParts {
  std::string scheme, host, path, user, query;
  long port = 0;
};

std::optional<UrlParts> parse_url(const std::string& url) {
  std::unique_ptr<CURLU, decltype(&curl_url_cleanup)> handle(curl_url(), curl_url_cleanup);
  if (!handle || curl_url_set(handle.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) return std::nullopt;
  const auto part = [&](CURLUPart which, unsigned flags = 0) -> std::optional<std::string> {
    char* value = nullptr;
    if (curl_url_get(handle.get(), which, &value, flags) != CURLUE_OK || !value) return std::nullopt;
    std::string out = value;
    curl_free(value);
    return out;
  };
  UrlParts parts;
  const auto scheme = part(CURLUPART_SCHEME), host = part(CURLUPART_HOST), port = part(CURLUPART_PORT, CURLU_DEFAULT_PORT);
  if (!scheme || !host || !port) return std::nullopt;
  parts.scheme = lower(*scheme);
  parts.host = lower(*host);
  parts.port = std::strtol(port->c_str(), nullptr, 10);
  parts.path = part(CURLUPART_PATH).value_or("/");
  if (parts.path.empty()) parts.path = "/";
  parts.user = part(CURLUPART_USER).value_or("");
  parts.query = part(CURLUPART_QUERY).value_or("");
  return parts;
}

// Whether an allow entry names the URL (a host entry, or a prefix).
bool named(const UrlPolicy& policy, const UrlParts& url) {
  for (const auto& host : policy.hosts)
    if (host == url.host) return true;
  for (const auto& prefix : policy.prefixes) {
    if (prefix.scheme != url.scheme || prefix.host != url.host || prefix.port != url.port) continue;
    // "/w/" and "/w" both allow /w/...; "/w" also allows /w itself.
    const std::string directory = prefix.path.back() == '/' ? prefix.path : prefix.path + "/";
    const bool below = url.path == prefix.path || url.path.rfind(directory, 0) == 0;
    // A server may decode %2e%2e or %2f into a step out of the prefix.
    const std::string rest = lower(url.path.substr(std::min(prefix.path.size(), url.path.size())));
    if (below && rest.find("%2e") == std::string::npos && rest.find("%2f") == std::string::npos &&
        rest.find("%5c") == std::string::npos && rest.find('\\') == std::string::npos)
      return true;
  }
  return false;
}

// Whether the URL's text is allowed (its addresses are checked at connect).
bool text_allowed(const UrlPolicy& policy, const std::string& url) {
  const auto parts = parse_url(url);
  return parts && (policy.public_hosts || named(policy, *parts));
}

// Loopback, link-local, private, shared, multicast and reserved ranges: what
// a farm host may reach that a client on the internet could not.
bool is_internal_v4(std::uint32_t a) {
  const auto in = [&](std::uint32_t net, int bits) { return (a >> (32 - bits)) == (net >> (32 - bits)); };
  return in(0x00000000, 8) || in(0x0a000000, 8) || in(0x64400000, 10) || in(0x7f000000, 8) ||
         in(0xa9fe0000, 16) || in(0xac100000, 12) || in(0xc0000000, 24) || in(0xc0a80000, 16) ||
         in(0xc6120000, 15) || in(0xe0000000, 4) || in(0xf0000000, 4);
}

bool is_internal(const struct sockaddr* address) {
  if (address->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const struct sockaddr_in*>(address);
    return is_internal_v4(ntohl(v4->sin_addr.s_addr));
  }
  if (address->sa_family == AF_INET6) {
    const auto& b = reinterpret_cast<const struct sockaddr_in6*>(address)->sin6_addr.s6_addr;
    bool zero_prefix = true;  // ::/96 (with :: and ::1) and ::ffff:0:0/96 embed IPv4
    for (int i = 0; i < 10; ++i) zero_prefix = zero_prefix && b[i] == 0;
    const bool mapped = zero_prefix && b[10] == 0xff && b[11] == 0xff;
    const bool nat64 = b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b;  // 64:ff9b::/96
    if (mapped || nat64 || (zero_prefix && b[10] == 0 && b[11] == 0)) {
      const std::uint32_t v4 = (std::uint32_t{b[12]} << 24) | (std::uint32_t{b[13]} << 16) |
                               (std::uint32_t{b[14]} << 8) | b[15];
      return is_internal_v4(v4) || (zero_prefix && !mapped);
    }
    return b[0] == 0xff || (b[0] & 0xfe) == 0xfc || (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) ||
           (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8);  // multicast, ULA, link-local, doc
  }
  return true;  // not an IP socket: never a witness server
}

struct CurlHandle {
  CURL* curl = nullptr;
  char error[CURL_ERROR_SIZE] = {0};
  CurlHandle() {
    global_init();
    curl = curl_easy_init();
    if (!curl) throw HttpError("cannot start an HTTP transfer (curl_easy_init failed)", 0, true);
  }
  ~CurlHandle() { curl_easy_cleanup(curl); }
  CurlHandle(const CurlHandle&) = delete;
  CurlHandle& operator=(const CurlHandle&) = delete;
};

void configure(CurlHandle& h, const std::string& url, const HttpLimits& limits) {
  CURL* c = h.curl;
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h.error);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for timeouts
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, limits.max_redirects);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(limits.connect_timeout.count() * 1000));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(limits.timeout.count() * 1000));
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(limits.stall_timeout.count()));
  curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(limits.max_bytes));
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!limits.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, limits.ca_file.c_str());
  curl_easy_setopt(c, CURLOPT_USERAGENT, "zkfarm");
}

// What a write callback sees: the sink for the body, and why it stopped.
struct Transfer {
  CurlHandle* handle = nullptr;
  const HttpLimits* limits = nullptr;
  bool started = false;
  long status = 0;
  std::string refused;  // why the callback stopped the transfer
  bool too_large = false;  // ... because the body passed the cap
  bool unreachable = false;  // a callback refused the URL or the address
  std::exception_ptr error;  // what a callback threw (rethrown after curl returns)
  std::function<bool(const char*, std::size_t)> sink;
  std::function<bool(long status, std::uint64_t length)> on_start;  // false: refused set
  std::uint64_t received = 0;
  bool enough = false;  // the sink stopped the transfer on purpose: not an error
};

std::string cap_text(std::uint64_t cap) {
  return "more than the " + std::to_string(cap) + " bytes this transfer may take";
}

std::size_t write_body_or_throw(char* data, std::size_t bytes, Transfer* t) {
  if (!t->started) {
    t->started = true;
    curl_easy_getinfo(t->handle->curl, CURLINFO_RESPONSE_CODE, &t->status);
    if (t->status < 200 || t->status >= 300) return 0;  // the status is the error
    curl_off_t length = -1;
    curl_easy_getinfo(t->handle->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    if (length > 0 && static_cast<std::uint64_t>(length) > t->limits->max_bytes) {
      t->refused = "the server announces " + std::to_string(length) + " bytes, " + cap_text(t->limits->max_bytes);
      t->too_large = true;
      return 0;
    }
    if (t->on_start && !t->on_start(t->status, length < 0 ? 0 : static_cast<std::uint64_t>(length))) return 0;
  }
  t->received += bytes;
  if (t->received > t->limits->max_bytes) {
    t->refused = "the body runs past " + std::to_string(t->limits->max_bytes) + " bytes, " +
                 cap_text(t->limits->max_bytes);
    t->too_large = true;
    return 0;
  }
  if (!t->sink(data, bytes)) return 0;
  return bytes;
}

// curl's write callback: nothing thrown may cross curl's C frames, so any
// exception (bad_alloc included) stops the transfer and is kept for perform.
std::size_t write_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  try {
    return write_body_or_throw(data, size * count, t);
  } catch (...) {
    t->error = std::current_exception();
    return 0;
  }
}

// CURLOPT_OPENSOCKETFUNCTION of a confined transfer: refuses, before it is
// opened, a connection to an internal address unless an allow entry names
// the URL being fetched (the redirect's, after one).
curl_socket_t open_socket(void* user, curlsocktype purpose, struct curl_sockaddr* address) {
  auto* t = static_cast<Transfer*>(user);
  try {
    if (purpose == CURLSOCKTYPE_IPCXN && is_internal(&address->addr)) {
      char* effective = nullptr;
      curl_easy_getinfo(t->handle->curl, CURLINFO_EFFECTIVE_URL, &effective);
      const auto parts = parse_url(effective ? effective : "");
      if (!parts || !named(*t->limits->urls, *parts)) {
        t->unreachable = true;
        return CURL_SOCKET_BAD;
      }
    }
    return ::socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
  } catch (...) {
    t->error = std::current_exception();
    return CURL_SOCKET_BAD;
  }
}

// CURLOPT_PREREQFUNCTION of a confined transfer: before every request (the
// first, each redirect's, on a new or a reused connection), the URL's text
// and the address it is connected to, once more.
int before_request(void* user, char* primary_ip, char*, int, int) {
  auto* t = static_cast<Transfer*>(user);
  try {
    char* effective = nullptr;
    curl_easy_getinfo(t->handle->curl, CURLINFO_EFFECTIVE_URL, &effective);
    const auto parts = parse_url(effective ? effective : "");
    const UrlPolicy& policy = *t->limits->urls;
    bool ok = parts && (policy.public_hosts || named(policy, *parts));
    if (ok && !named(policy, *parts)) {
      // Allowed as a public host: the address must be public.
      struct sockaddr_in6 v6 {};
      struct sockaddr_in v4 {};
      if (::inet_pton(AF_INET, primary_ip, &v4.sin_addr) == 1) {
        v4.sin_family = AF_INET;
        ok = !is_internal(reinterpret_cast<const struct sockaddr*>(&v4));
      } else if (::inet_pton(AF_INET6, primary_ip, &v6.sin6_addr) == 1) {
        v6.sin6_family = AF_INET6;
        ok = !is_internal(reinterpret_cast<const struct sockaddr*>(&v6));
      } else {
        ok = false;
      }
    }
    if (ok) return CURL_PREREQFUNC_OK;
    t->unreachable = true;
  } catch (...) {
    t->error = std::current_exception();
  }
  return CURL_PREREQFUNC_ABORT;
}

// CURLOPT_XFERINFOFUNCTION of a cancellable transfer: non-zero stops it.
int check_cancelled(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<Transfer*>(user)->limits->cancelled->load() ? 1 : 0;
}

// The HttpError of a URL that is refused or cannot be reached: one text.
HttpError unreachable(const std::string& url) {
  return HttpError("GET " + redact_url(url) + ": " + std::string(kUnreachable), 0, true);
}

// Throws HttpError unless `url` is an http(s) URL the limits let us fetch.
void check_url(const std::string& url, const HttpLimits& limits) {
  if (const std::string problem = check_http_url(url); !problem.empty())
    throw HttpError("GET " + redact_url(url) + ": " + problem, 0, false);
  if (limits.urls && !text_allowed(*limits.urls, url)) throw unreachable(url);
}

// Runs the transfer; throws HttpError for anything but a 2xx that the
// callbacks accepted (or what a callback threw).
void perform(CurlHandle& h, const std::string& url, Transfer& t) {
  curl_easy_setopt(h.curl, CURLOPT_WRITEFUNCTION, write_body);
  curl_easy_setopt(h.curl, CURLOPT_WRITEDATA, &t);
  if (t.limits->urls) {
    curl_easy_setopt(h.curl, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    curl_easy_setopt(h.curl, CURLOPT_OPENSOCKETDATA, &t);
    curl_easy_setopt(h.curl, CURLOPT_PREREQFUNCTION, before_request);
    curl_easy_setopt(h.curl, CURLOPT_PREREQDATA, &t);
  }
  if (t.limits->cancelled) {
    curl_easy_setopt(h.curl, CURLOPT_XFERINFOFUNCTION, check_cancelled);
    curl_easy_setopt(h.curl, CURLOPT_XFERINFODATA, &t);
    curl_easy_setopt(h.curl, CURLOPT_NOPROGRESS, 0L);
  }
  const CURLcode rc = curl_easy_perform(h.curl);
  if (t.error) std::rethrow_exception(t.error);
  if (t.limits->cancelled && t.limits->cancelled->load())
    throw HttpError("GET " + redact_url(url) + ": cancelled", t.status, false, false, true);
  if (!t.started) curl_easy_getinfo(h.curl, CURLINFO_RESPONSE_CODE, &t.status);
  const std::string where = "GET " + redact_url(url) + ": ";
  if (t.unreachable) throw unreachable(url);
  if (!t.refused.empty()) throw HttpError(where + t.refused, t.status, false, t.too_large);
  if (t.status != 0 && (t.status < 200 || t.status >= 300))
    throw HttpError(where + "HTTP " + std::to_string(t.status), t.status, transient_status(t.status));
  if (t.enough) return;
  if (rc == CURLE_FILESIZE_EXCEEDED) {
    // curl refused a Content-Length above CURLOPT_MAXFILESIZE before the body.
    curl_off_t length = -1;
    curl_easy_getinfo(h.curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    throw HttpError(where + "the server announces " + (length > 0 ? std::to_string(length) + " bytes, " : "") +
                        cap_text(t.limits->max_bytes),
                    t.status, false, true);
  }
  if (t.limits->urls && t.status == 0) {
    // Not connected (no such name, nothing listening, no answer in time):
    // the text of a refused URL, so that a client learns nothing of what
    // listens where.
    curl_off_t connected = 0;
    curl_easy_getinfo(h.curl, CURLINFO_CONNECT_TIME_T, &connected);
    if (rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_RESOLVE_PROXY || rc == CURLE_COULDNT_CONNECT ||
        connected == 0)
      throw unreachable(url);
  }
  if (rc != CURLE_OK) {
    std::string reason = curl_easy_strerror(rc);
    if (h.error[0] != '\0') reason += " (" + scrub(h.error, url) + ")";
    const bool transient = rc != CURLE_FILESIZE_EXCEEDED && rc != CURLE_TOO_MANY_REDIRECTS &&
                           rc != CURLE_UNSUPPORTED_PROTOCOL && rc != CURLE_URL_MALFORMAT &&
                           rc != CURLE_PEER_FAILED_VERIFICATION && rc != CURLE_SSL_CACERT_BADFILE;
    throw HttpError(where + reason, t.status, transient);
  }
  if (t.status == 0) throw HttpError(where + "no HTTP response", 0, true);
}

}  // namespace

std::vector<std::uint8_t> http_get(const std::string& url, const HttpLimits& limits,
                                   std::optional<std::uint64_t> expected_size) {
  check_url(url, limits);
  CurlHandle h;
  configure(h, url, limits);
  std::vector<std::uint8_t> body;
  Transfer t;
  t.handle = &h;
  t.limits = &limits;
  t.on_start = [&](long, std::uint64_t length) {
    if (expected_size && length != 0 && length != *expected_size) {
      t.refused = "the server announces " + std::to_string(length) + " bytes, expected " + std::to_string(*expected_size);
      return false;
    }
    const std::uint64_t reserve = expected_size ? *expected_size : length;
    if (reserve > limits.max_bytes) {
      t.refused = std::to_string(reserve) + " bytes expected, " + cap_text(limits.max_bytes);
      t.too_large = true;
      return false;
    }
    body.reserve(reserve);  // one buffer: the body lands where the prover reads it
    return true;
  };
  t.sink = [&](const char* data, std::size_t n) {
    if (expected_size && body.size() + n > *expected_size) {
      t.refused = "the body is longer than the expected " + std::to_string(*expected_size) + " bytes";
      return false;
    }
    body.insert(body.end(), data, data + n);
    return true;
  };
  perform(h, url, t);
  if (expected_size && body.size() != *expected_size)
    throw HttpError("GET " + redact_url(url) + ": received " + std::to_string(body.size()) + " bytes, expected " +
                        std::to_string(*expected_size),
                    t.status, true);
  return body;
}

void http_download(const std::string& url, const std::string& path, const HttpLimits& limits,
                   std::optional<std::uint64_t> expected_size, const HttpProgress& progress) {
  check_url(url, limits);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "cannot open " + path);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  ::fstat(fd, &st);
  std::uint64_t offset = static_cast<std::uint64_t>(st.st_size);
  if (expected_size && offset > *expected_size) offset = 0;  // not a prefix of this artifact
  if (expected_size && offset == *expected_size && offset > 0) {
    if (progress) progress(offset, offset);
    return;
  }
  for (int attempt = 0;; ++attempt) {
    CurlHandle h;
    configure(h, url, limits);
    if (offset > 0) curl_easy_setopt(h.curl, CURLOPT_RESUME_FROM_LARGE, static_cast<curl_off_t>(offset));
    Transfer t;
    t.handle = &h;
    t.limits = &limits;
    std::uint64_t done = offset, total = expected_size.value_or(0);
    auto last_report = std::chrono::steady_clock::now();
    int write_error = 0;  // errno of a local write failure
    t.on_start = [&](long status, std::uint64_t length) {
      if (status != 206 && offset > 0) {
        // The server sent the whole body: start the file over.
        offset = done = 0;
      }
      if (::ftruncate(fd, static_cast<off_t>(offset)) != 0 || ::lseek(fd, static_cast<off_t>(offset), SEEK_SET) < 0) {
        write_error = errno;
        return false;
      }
      if (total == 0 && length > 0) total = offset + length;
      if (expected_size && offset + length > *expected_size) {
        t.refused = "the server announces " + std::to_string(offset + length) + " bytes, expected " +
                    std::to_string(*expected_size);
        return false;
      }
      return true;
    };
    t.sink = [&](const char* data, std::size_t n) {
      if (expected_size && done + n > *expected_size) {
        t.refused = "the body is longer than the expected " + std::to_string(*expected_size) + " bytes";
        return false;
      }
      for (std::size_t written = 0; written < n;) {
        const ssize_t w = ::write(fd, data + written, n - written);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
          write_error = w < 0 ? errno : EIO;
          return false;
        }
        written += static_cast<std::size_t>(w);
      }
      done += n;
      const auto now = std::chrono::steady_clock::now();
      if (progress && now - last_report >= std::chrono::seconds(1)) {
        progress(done, total);
        last_report = now;
      }
      return true;
    };
    try {
      perform(h, url, t);
    } catch (const HttpError& e) {
      if (write_error != 0) throw std::system_error(write_error, std::generic_category(), "cannot write " + path);
      // A range the server cannot satisfy (416: the partial file is not a
      // prefix of what it serves now), or a server that ignores ranges
      // (200: curl refuses the whole body when it asked for the rest).
      // Start over once.
      if ((e.status() == 416 || e.status() == 200) && offset > 0 && attempt == 0) {
        offset = 0;
        continue;
      }
      throw;
    }
    if (::fsync(fd) != 0) throw std::system_error(errno, std::generic_category(), "cannot write " + path);
    if (progress) progress(done, total);
    return;
  }
}

namespace {

// Header callback of http_get_prefix: the total of the last response's
// "Content-Range: bytes a-b/total" (a redirect's headers come first).
// Catches everything (nothing may cross curl's C frames); parsing a line
// allocates nothing, so a throw here would be a bug: it aborts the transfer.
std::size_t read_header(char* data, std::size_t size, std::size_t count, void* user) try {
  auto* total = static_cast<std::optional<std::uint64_t>*>(user);
  const std::string_view line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) total->reset();
  constexpr std::string_view kName = "content-range:";
  if (line.size() > kName.size()) {
    bool match = true;
    for (std::size_t i = 0; i < kName.size() && match; ++i)
      match = static_cast<char>(std::tolower(static_cast<unsigned char>(line[i]))) == kName[i];
    const std::size_t slash = line.find('/');
    if (match && slash != std::string_view::npos) {
      std::uint64_t value = 0;
      bool digits = false;
      for (std::size_t i = slash + 1; i < line.size() && std::isdigit(static_cast<unsigned char>(line[i])); ++i)
        value = value * 10 + static_cast<std::uint64_t>(line[i] - '0'), digits = true;
      if (digits) *total = value;
    }
  }
  return size * count;
} catch (...) {
  return 0;
}

}  // namespace

HttpPrefix http_get_prefix(const std::string& url, const HttpLimits& limits, std::uint64_t n) {
  check_url(url, limits);
  HttpPrefix out;
  if (n == 0) return out;
  CurlHandle h;
  configure(h, url, limits);
  const std::string range = "0-" + std::to_string(n - 1);
  curl_easy_setopt(h.curl, CURLOPT_RANGE, range.c_str());
  std::optional<std::uint64_t> content_range_total;
  curl_easy_setopt(h.curl, CURLOPT_HEADERFUNCTION, read_header);
  curl_easy_setopt(h.curl, CURLOPT_HEADERDATA, &content_range_total);
  Transfer t;
  t.handle = &h;
  t.limits = &limits;
  t.on_start = [&](long status, std::uint64_t length) {
    if (status == 206) out.total = content_range_total;
    else if (length > 0) out.total = length;  // the whole body is coming
    out.bytes.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(n, length > 0 ? length : n)));
    return true;
  };
  t.sink = [&](const char* data, std::size_t size) {
    const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(size, n - out.bytes.size()));
    out.bytes.insert(out.bytes.end(), data, data + take);
    if (out.bytes.size() == n && (take < size || t.status != 206)) {
      t.enough = true;  // a server that ignored Range: n bytes are all we want
      return false;
    }
    return true;
  };
  perform(h, url, t);
  return out;
}

UrlPolicy parse_url_policy(const std::vector<std::string>& entries) {
  UrlPolicy policy;
  std::vector<std::string> items;
  for (const auto& entry : entries) {
    std::size_t start = 0;
    while (start <= entry.size()) {
      const std::size_t comma = std::min(entry.find(',', start), entry.size());
      std::string item = entry.substr(start, comma - start);
      while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) item.pop_back();
      while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) item.erase(0, 1);
      if (!item.empty()) items.push_back(item);
      start = comma + 1;
    }
  }
  if (items.empty())
    throw std::invalid_argument("--witness-url-allow: no entry (give hosts, URL prefixes, \"public\" or \"none\")");
  const auto bad = [](const std::string& item, const std::string& why) {
    return std::invalid_argument("--witness-url-allow '" + redact_url(item) + "': " + why);
  };
  for (const auto& item : items) {
    if (item == kAllowNone) {
      if (items.size() != 1) throw bad(item, "\"none\" allows no URL and cannot stand beside other entries");
      continue;
    }
    if (item == kAllowPublic) {
      policy.public_hosts = true;
      continue;
    }
    if (item.find("://") != std::string::npos) {
      if (const std::string problem = check_http_url(item); !problem.empty()) throw bad(item, problem);
      const auto parts = parse_url(item);
      if (!parts) throw bad(item, "not a URL");
      if (!parts->user.empty() || !parts->query.empty() || item.find('#') != std::string::npos)
        throw bad(item, "a prefix names a scheme, a host, a port and a path, without a user, query or fragment");
      if (parts->path.find("%") != std::string::npos || parts->path.find("/..") != std::string::npos)
        throw bad(item, "a prefix's path has no '%' escapes and no '..'");
      policy.prefixes.push_back({parts->scheme, parts->host, parts->path, parts->port});
      continue;
    }
    std::string host = lower(item);
    const bool bracketed = host.size() > 2 && host.front() == '[' && host.back() == ']';
    if (!bracketed && host.find(':') != std::string::npos) {
      struct in6_addr v6 {};
      if (::inet_pton(AF_INET6, host.c_str(), &v6) != 1)
        throw bad(item, "a host entry has no port or path (a URL prefix names those: http://host:port/path/)");
      host = "[" + host + "]";  // as curl writes an IPv6 host
    }
    for (char c : host)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_' && c != ':' && c != '[' &&
          c != ']')
        throw bad(item, "not a host name or address");
    policy.hosts.push_back(host);
  }
  return policy;
}

}  // namespace zkfarm
