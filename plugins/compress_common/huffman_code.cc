#include "huffman_code.h"

#include <algorithm>
#include <queue>
#include <stdexcept>

namespace minnow {
namespace compress {

static std::vector<uint8_t> plain_lengths(const std::vector<uint64_t>& freq) {
  const size_t n = freq.size();
  std::vector<uint8_t> len(n, 0);
  // Nodes: leaves 0..n-1, internal n..; parent links give depths.
  std::vector<int64_t> parent;
  using Item = std::pair<uint64_t, int64_t>;  // (weight, node); ties broken by node id
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> pq;
  parent.assign(n, -1);
  size_t used = 0;
  for (size_t s = 0; s < n; ++s)
    if (freq[s]) { pq.push({freq[s], int64_t(s)}); ++used; }
  if (used == 0) return len;
  if (used == 1) {
    for (size_t s = 0; s < n; ++s) if (freq[s]) len[s] = 1;
    return len;
  }
  while (pq.size() > 1) {
    Item a = pq.top(); pq.pop();
    Item b = pq.top(); pq.pop();
    int64_t id = int64_t(parent.size());
    parent.push_back(-1);
    parent[size_t(a.second)] = id;
    parent[size_t(b.second)] = id;
    pq.push({a.first + b.first, id});
  }
  for (size_t s = 0; s < n; ++s) {
    if (!freq[s]) continue;
    int d = 0;
    for (int64_t p = int64_t(s); parent[size_t(p)] >= 0; p = parent[size_t(p)]) ++d;
    len[s] = uint8_t(std::min(d, 255));
  }
  return len;
}

std::vector<uint8_t> huffman_code_lengths(const std::vector<uint64_t>& freq, int max_len) {
  std::vector<uint64_t> f = freq;
  for (;;) {
    auto len = plain_lengths(f);
    int m = 0;
    for (uint8_t l : len) m = std::max<int>(m, l);
    if (m <= max_len) return len;
    // Too deep: halve frequencies (keeping used symbols >= 1) and try again.
    for (auto& x : f) if (x) x = x / 2 + 1;
  }
}

BitStream huffman_encode(const std::vector<uint32_t>& symbols, const std::vector<uint8_t>& lengths) {
  constexpr int kMax = 32;
  std::vector<uint64_t> per_len(kMax + 2, 0);
  for (uint8_t l : lengths) if (l) per_len[l]++;
  std::vector<uint64_t> next(kMax + 2, 0);
  uint64_t first = 0;
  for (int l = 1; l <= kMax; ++l) {
    next[size_t(l)] = first;
    first = (first + per_len[size_t(l)]) << 1;
  }
  std::vector<uint64_t> code(lengths.size(), 0);
  for (int l = 1; l <= kMax; ++l)
    for (size_t s = 0; s < lengths.size(); ++s)
      if (lengths[s] == l) code[s] = next[size_t(l)]++;
  BitStream out;
  for (uint32_t s : symbols) {
    if (s >= lengths.size() || lengths[s] == 0) throw std::runtime_error("huffman: symbol without a code");
    int l = lengths[s];
    for (int b = l - 1; b >= 0; --b) {
      if ((out.bits >> 3) >= out.bytes.size()) out.bytes.push_back(0);
      if ((code[s] >> b) & 1) out.bytes[out.bits >> 3] |= uint8_t(0x80u >> (out.bits & 7));
      ++out.bits;
    }
  }
  return out;
}

uint64_t huffman_bits(const std::vector<uint64_t>& freq, const std::vector<uint8_t>& lengths) {
  uint64_t b = 0;
  for (size_t s = 0; s < freq.size(); ++s) b += freq[s] * lengths[s];
  return b;
}

}  // namespace compress
}  // namespace minnow
