// hex.cc -- see hex.h.
#include "base/hex.h"

#include <stdexcept>

namespace zkfarm {

namespace {
constexpr char kDigits[] = "0123456789abcdef";

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::string to_hex(std::span<const std::uint8_t> bytes) {
  std::string out;
  out.reserve(2 * bytes.size());
  for (std::uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

std::string to_hex(std::string_view bytes) {
  return to_hex(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
}

std::vector<std::uint8_t> from_hex(std::string_view text, const std::string& what) {
  if (text.size() % 2) throw std::invalid_argument(what + ": odd number of hex digits");
  std::vector<std::uint8_t> out(text.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int high = digit_value(text[2 * i]), low = digit_value(text[2 * i + 1]);
    if (high < 0 || low < 0) throw std::invalid_argument(what + ": not hex");
    out[i] = static_cast<std::uint8_t>(high << 4 | low);
  }
  return out;
}

}  // namespace zkfarm
