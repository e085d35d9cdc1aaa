// http_fetch.cc -- see http_fetch.h.
#include "cluster/http_fetch.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
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
  std::function<bool(const char*, std::size_t)> sink;
  std::function<bool(long status, std::uint64_t length)> on_start;  // false: refused set
  std::uint64_t received = 0;
  bool enough = false;  // the sink stopped the transfer on purpose: not an error
};

std::size_t write_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t bytes = size * count;
  if (!t->started) {
    t->started = true;
    curl_easy_getinfo(t->handle->curl, CURLINFO_RESPONSE_CODE, &t->status);
    if (t->status < 200 || t->status >= 300) return 0;  // the status is the error
    curl_off_t length = -1;
    curl_easy_getinfo(t->handle->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    if (t->on_start && !t->on_start(t->status, length < 0 ? 0 : static_cast<std::uint64_t>(length))) return 0;
  }
  t->received += bytes;
  if (t->received > t->limits->max_bytes) {
    t->refused = "the body exceeds the size cap of " + std::to_string(t->limits->max_bytes) + " bytes";
    return 0;
  }
  if (!t->sink(data, bytes)) return 0;
  return bytes;
}

// Runs the transfer; throws HttpError for anything but a 2xx that the
// callbacks accepted.
void perform(CurlHandle& h, const std::string& url, Transfer& t) {
  curl_easy_setopt(h.curl, CURLOPT_WRITEFUNCTION, write_body);
  curl_easy_setopt(h.curl, CURLOPT_WRITEDATA, &t);
  const CURLcode rc = curl_easy_perform(h.curl);
  if (!t.started) curl_easy_getinfo(h.curl, CURLINFO_RESPONSE_CODE, &t.status);
  const std::string where = "GET " + redact_url(url) + ": ";
  if (!t.refused.empty()) throw HttpError(where + t.refused, t.status, false);
  if (t.status != 0 && (t.status < 200 || t.status >= 300))
    throw HttpError(where + "HTTP " + std::to_string(t.status), t.status, transient_status(t.status));
  if (t.enough) return;
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
  if (const std::string problem = check_http_url(url); !problem.empty())
    throw HttpError("GET " + redact_url(url) + ": " + problem, 0, false);
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
      t.refused = std::to_string(reserve) + " bytes exceed the size cap of " + std::to_string(limits.max_bytes) + " bytes";
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
  if (const std::string problem = check_http_url(url); !problem.empty())
    throw HttpError("GET " + redact_url(url) + ": " + problem, 0, false);
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
std::size_t read_header(char* data, std::size_t size, std::size_t count, void* user) {
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
}

}  // namespace

HttpPrefix http_get_prefix(const std::string& url, const HttpLimits& limits, std::uint64_t n) {
  if (const std::string problem = check_http_url(url); !problem.empty())
    throw HttpError("GET " + redact_url(url) + ": " + problem, 0, false);
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

}  // namespace zkfarm
