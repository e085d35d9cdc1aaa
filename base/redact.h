// redact.h -- URLs as text for logs, metrics, status and errors.
//
// A witness or artifact URL can carry a credential: a pre-signed
// object-store URL has its signature in the query string, and any URL may
// have a user and password. redact_url() is the one place where zkfarm turns
// such a URL into text anyone may read; the full URL travels only inside
// the job (Redis, the Task message) to the process that fetches it.
#pragma once

#include <string>
#include <string_view>

namespace zkfarm {

// The URL without the user and password, the query string and the fragment:
// "https://bucket.example/w/p0.wtns?<redacted>" for
// "https://key:secret@bucket.example/w/p0.wtns?X-Amz-Signature=...". Text
// without "://" keeps what precedes a '?' or '#'. Never throws.
std::string redact_url(std::string_view url);

// True for "http://..." and "https://..." (scheme case-insensitive).
bool is_http_url(std::string_view url);

// "" when `url` is an http(s) URL with a host, at most 8192 characters, no
// space or control character; otherwise the reason (never quoting the URL).
std::string check_http_url(std::string_view url);

}  // namespace zkfarm
