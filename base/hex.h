// hex.h -- lower-case hexadecimal text of bytes, and back.
//
// Used wherever bytes become text that people or Redis read: circuit ids
// (SHA-256 of the zkey), script digests, compressed proofs, random job ids.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zkfarm {

// Two lower-case hex digits per byte, most significant nibble first.
std::string to_hex(std::span<const std::uint8_t> bytes);
std::string to_hex(std::string_view bytes);

// The bytes of hex text (either case). Throws std::invalid_argument naming
// `what` on an odd number of digits or a character that is not a hex digit.
std::vector<std::uint8_t> from_hex(std::string_view text, const std::string& what = "hex text");

}  // namespace zkfarm
