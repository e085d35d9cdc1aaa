// redact.cc -- see redact.h.
#include "base/redact.h"

#include <cctype>

namespace zkfarm {

bool is_http_url(std::string_view url) {
  auto starts = [&](std::string_view scheme) {
    if (url.size() < scheme.size()) return false;
    for (std::size_t i = 0; i < scheme.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(url[i])) != scheme[i]) return false;
    return true;
  };
  return starts("http://") || starts("https://");
}

std::string redact_url(std::string_view url) {
  const std::size_t scheme_end = url.find("://");
  std::string out;
  std::string_view rest = url;
  if (scheme_end != std::string_view::npos) {
    out = std::string(url.substr(0, scheme_end + 3));
    rest = url.substr(scheme_end + 3);
    const std::size_t authority_end = rest.find_first_of("/?#");
    std::string_view authority = rest.substr(0, authority_end);
    if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) authority = authority.substr(at + 1);
    out += authority;
    rest = authority_end == std::string_view::npos ? std::string_view() : rest.substr(authority_end);
  }
  const std::size_t secret = rest.find_first_of("?#");
  out += rest.substr(0, secret);
  if (secret != std::string_view::npos) out += "?<redacted>";
  return out;
}

std::string check_http_url(std::string_view url) {
  if (!is_http_url(url)) return "not an http:// or https:// URL";
  if (url.size() > 8192) return "longer than 8192 characters";
  for (char ch : url)
    if (static_cast<unsigned char>(ch) <= 0x20 || ch == 0x7f) return "contains a space or a control character";
  const std::string_view rest = url.substr(url.find("://") + 3);
  std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) authority = authority.substr(at + 1);
  if (authority.empty() || authority[0] == ':') return "has no host";
  return "";
}

}  // namespace zkfarm
