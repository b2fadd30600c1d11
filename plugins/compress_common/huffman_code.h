// Canonical Huffman coding as core/src/decode.cc reads it: code lengths per symbol
// (0 = unused, at most 32), codes assigned in order of (length, symbol), bits written
// most significant first.
#pragma once

#include <cstdint>
#include <vector>

namespace minnow {
namespace compress {

// Code lengths for symbol frequencies (a single used symbol gets length 1). Lengths are
// limited to `max_len` by flattening the frequencies until the code fits.
std::vector<uint8_t> huffman_code_lengths(const std::vector<uint64_t>& freq, int max_len = 32);

struct BitStream {
  std::vector<uint8_t> bytes;
  uint64_t bits = 0;
};
// Encodes symbols with the canonical code of `lengths` (every symbol must have a length).
BitStream huffman_encode(const std::vector<uint32_t>& symbols, const std::vector<uint8_t>& lengths);
// Size in bits of that encoding, without building it.
uint64_t huffman_bits(const std::vector<uint64_t>& freq, const std::vector<uint8_t>& lengths);

}  // namespace compress
}  // namespace minnow
