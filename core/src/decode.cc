// Decoding a constant's encoding chain (dense / sparse / codebook / Huffman) into a dense
// tensor. Every index read from the file is checked before use: a crafted file can make
// decoding fail, never read or write out of bounds.
#include <minnow/model.h>

#include <atomic>
#include <cstring>
#include <limits>

namespace minnow {

namespace {
std::atomic<uint64_t> g_max_decoded_bytes{uint64_t(4) << 30};
}  // namespace

void set_max_decoded_constant_bytes(uint64_t bytes) { g_max_decoded_bytes = bytes; }
uint64_t max_decoded_constant_bytes() { return g_max_decoded_bytes; }

namespace {

// An element stream passed from an inner stage to the stage that consumes it.
struct Stream {
  DataType type = DataType::kUndefined;  // kUInt32 for symbol / index streams
  std::vector<uint8_t> bytes;
};

class Decoder {
 public:
  Decoder(const ir::ModelIR& m, const ir::TensorInfo& t) : m_(m), t_(t) {}

  // Produces `count` elements from stage `i` onwards.
  Result<Stream> stage(size_t i, int64_t count) {
    if (i >= t_.encodings.size())
      return err("encoding chain ends without a stage that stores data");
    const auto& st = t_.encodings[i];
    if (auto* d = std::get_if<ir::DenseStage>(&st)) return dense(*d, i, count);
    if (auto* s = std::get_if<ir::SparseStage>(&st)) return sparse(*s, i, count);
    if (auto* c = std::get_if<ir::CodebookStage>(&st)) return codebook(*c, i, count);
    return huffman(std::get<ir::HuffmanStage>(st), i, count);
  }

  Status err_status(const std::string& what) const {
    return invalid_argument("tensor '" + t_.name + "': " + what);
  }

 private:
  Status err(const std::string& what) const { return err_status(what); }

  // Load checks the buffer indices a file's stages name, but a stage can be reached by a path
  // those checks did not foresee (fuzz_model found one): an index out of range reads as an
  // empty buffer, which every stage then refuses as too small.
  const ir::Blob& buffer(uint32_t b) const {
    static const ir::Blob kEmpty{};
    return b < m_.buffers.size() ? m_.buffers[b] : kEmpty;
  }

  Result<Stream> dense(const ir::DenseStage& d, size_t i, int64_t count) {
    if (i + 1 != t_.encodings.size()) return err("a dense stage must be the last stage");
    size_t es = dtype_size(d.element_type);
    if (es == 0) return err("dense stage with unsupported element type");
    const ir::Blob& b = buffer(d.buffer);
    if (count < 0 || b.size / es != static_cast<uint64_t>(count) || b.size % es != 0)
      return err("buffer holds " + std::to_string(b.size) + " bytes, shape needs " +
                 std::to_string(count) + " x " + std::to_string(es));
    Stream s;
    s.type = d.element_type;
    s.bytes.assign(b.data, b.data + b.size);
    return s;
  }

  Result<std::vector<int32_t>> int32_buffer(uint32_t idx, int64_t expect, const char* what) {
    const ir::Blob& b = buffer(idx);
    if (expect < 0 || b.size != static_cast<uint64_t>(expect) * 4)
      return err(std::string(what) + " buffer has " + std::to_string(b.size) + " bytes, expected " +
                 std::to_string(expect) + " int32");
    std::vector<int32_t> v(static_cast<size_t>(expect));
    if (expect) std::memcpy(v.data(), b.data, b.size);
    return v;
  }

  // Positions (row-major over the block grid) of the stored blocks, from row_ptr + col_idx.
  Result<std::vector<int64_t>> explicit_positions(const ir::SparseStage& s, int64_t brows, int64_t bcols) {
    auto row_ptr = int32_buffer(s.row_ptr, brows + 1, "row_ptr");
    if (!row_ptr) return row_ptr.status();
    const auto& rp = row_ptr.value();
    if (rp[0] != 0) return err("row_ptr[0] is not 0");
    for (int64_t r = 0; r < brows; ++r)
      if (rp[r + 1] < rp[r]) return err("row_ptr decreases at row " + std::to_string(r));
    auto col_idx = int32_buffer(s.col_idx, rp[brows], "col_idx");
    if (!col_idx) return col_idx.status();
    const auto& ci = col_idx.value();
    std::vector<int64_t> pos(ci.size());
    for (int64_t r = 0; r < brows; ++r)
      for (int32_t k = rp[r]; k < rp[r + 1]; ++k) {
        if (ci[k] < 0 || ci[k] >= bcols) return err("column index " + std::to_string(ci[k]) + " out of range");
        pos[k] = r * bcols + ci[k];
      }
    return pos;
  }

  // Positions from the relative gap-symbol stream (schema SparseIndexFormat.RELATIVE).
  Result<std::vector<int64_t>> relative_positions(const ir::SparseStage& s, int64_t grid) {
    if (s.index_bits < 1 || s.index_bits > 16) return err("sparse index bits must be 1..16");
    // Every symbol advances at least one position: bound the count before allocating.
    if (s.index_count < 0 || s.index_count > grid)
      return err("sparse index count " + std::to_string(s.index_count) + " exceeds the " + std::to_string(grid) +
                 " positions of the matrix");
    const ir::Blob& b = buffer(s.index_buffer);
    std::vector<uint32_t> sym(static_cast<size_t>(s.index_count));
    if (!s.index_code_lengths.empty()) {
      MINNOW_RETURN_IF_ERROR(huffman_symbols(s.index_code_lengths, b, s.index_bit_length, s.index_count, sym.data()));
    } else {
      if (b.size * 8 < uint64_t(s.index_count) * uint64_t(s.index_bits)) return err("sparse index buffer too small");
      uint64_t bit = 0;
      for (auto& v : sym)
        for (int j = 0; j < s.index_bits; ++j, ++bit) v |= uint32_t((b.data[bit >> 3] >> (bit & 7)) & 1) << j;
    }
    const uint32_t esc = (uint32_t(1) << s.index_bits) - 1;
    std::vector<int64_t> pos;
    int64_t p = 0;
    for (uint32_t g : sym) {
      if (g > esc) return err("sparse index symbol " + std::to_string(g) + " out of range");
      p += g;
      if (g == esc) {
        if (p > grid) return err("sparse index stream runs past the end of the matrix");
        continue;
      }
      if (p >= grid) return err("sparse index stream runs past the end of the matrix");
      pos.push_back(p++);
    }
    return pos;
  }

  Result<Stream> sparse(const ir::SparseStage& s, size_t i, int64_t count) {
    const int64_t br = s.block_rows, bc = s.block_cols;
    if (s.rows <= 0 || s.cols <= 0 || br <= 0 || bc <= 0 || s.nnz < 0)
      return err("sparse stage with invalid dimensions");
    if (s.rows > std::numeric_limits<int64_t>::max() / s.cols || s.rows * s.cols != count)
      return err("sparse matrix " + std::to_string(s.rows) + "x" + std::to_string(s.cols) +
                 " does not match the tensor's " + std::to_string(count) + " elements");
    if (s.format == ir::SparseFormat::kCSR && (br != 1 || bc != 1))
      return err("CSR stage with a block shape other than 1x1");
    if (s.rows % br || s.cols % bc) return err("block shape does not divide the matrix");
    const int64_t brows = s.rows / br, bcols = s.cols / bc, bsize = br * bc;
    auto positions = s.index == ir::SparseIndex::kRelative ? relative_positions(s, brows * bcols)
                                                            : explicit_positions(s, brows, bcols);
    if (!positions) return positions.status();
    const auto& pos = positions.value();
    if (int64_t(pos.size()) * bsize != s.nnz) return err("sparse structure and nnz disagree");
    auto values = stage(i + 1, s.nnz);
    if (!values) return values.status();
    const Stream& v = values.value();
    size_t es = dtype_size(v.type);
    if (es == 0 || v.type == DataType::kUInt32) return err("sparse values have no numeric type");
    Stream out;
    out.type = v.type;
    out.bytes.assign(static_cast<size_t>(count) * es, 0);
    for (size_t k = 0; k < pos.size(); ++k) {
      const int64_t r = pos[k] / bcols, c = pos[k] % bcols;
      for (int64_t y = 0; y < br; ++y)
        for (int64_t x = 0; x < bc; ++x) {
          int64_t dst = (r * br + y) * s.cols + c * bc + x;
          int64_t src = int64_t(k) * bsize + y * bc + x;
          std::memcpy(&out.bytes[dst * es], &v.bytes[src * es], es);
        }
    }
    return out;
  }

  Result<Stream> codebook(const ir::CodebookStage& c, size_t i, int64_t count) {
    if (c.bits < 1 || c.bits > 16) return err("codebook bits must be 1..16");
    if (c.centroids.empty() || c.centroids.size() > (size_t(1) << c.bits))
      return err("codebook has " + std::to_string(c.centroids.size()) + " centroids for " +
                 std::to_string(c.bits) + " bits");
    if (c.count != count) return err("codebook count disagrees with its consumer");
    std::vector<uint32_t> idx(static_cast<size_t>(count));
    if (i + 1 < t_.encodings.size()) {
      auto sym = stage(i + 1, count);
      if (!sym) return sym.status();
      if (sym.value().type != DataType::kUInt32) return err("codebook stage expects an index stream");
      std::memcpy(idx.data(), sym.value().bytes.data(), idx.size() * 4);
    } else {
      const ir::Blob& b = buffer(c.indices);
      // Divide rather than multiply: count * bits can wrap for a hostile count.
      if (uint64_t(count) > uint64_t(b.size) * 8 / uint64_t(c.bits))
        return err("codebook index buffer too small");
      for (int64_t k = 0; k < count; ++k) {  // little-endian bit order
        uint32_t v = 0;
        uint64_t bit = uint64_t(k) * c.bits;
        for (int j = 0; j < c.bits; ++j, ++bit) v |= uint32_t((b.data[bit >> 3] >> (bit & 7)) & 1) << j;
        idx[k] = v;
      }
    }
    Stream out;
    out.type = DataType::kFloat32;
    out.bytes.resize(static_cast<size_t>(count) * 4);
    float* dst = reinterpret_cast<float*>(out.bytes.data());
    for (int64_t k = 0; k < count; ++k) {
      if (idx[k] >= c.centroids.size()) return err("codebook index " + std::to_string(idx[k]) + " out of range");
      dst[k] = c.centroids[idx[k]];
    }
    return out;
  }

  Result<Stream> huffman(const ir::HuffmanStage& h, size_t i, int64_t count) {
    if (i + 1 != t_.encodings.size()) return err("a Huffman stage must be the last stage");
    if (h.count != count) return err("Huffman count disagrees with its consumer");
    // Every symbol takes at least one bit: check before allocating `count` symbols.
    if (uint64_t(count) > h.bit_length) return err("Huffman stream of " + std::to_string(h.bit_length) + " bits cannot hold " + std::to_string(count) + " symbols");
    Stream out;
    out.type = DataType::kUInt32;
    out.bytes.resize(static_cast<size_t>(count) * 4);
    MINNOW_RETURN_IF_ERROR(huffman_symbols(h.code_lengths, buffer(h.bitstream), h.bit_length, count,
                                           reinterpret_cast<uint32_t*>(out.bytes.data())));
    return out;
  }

  // Decodes `count` symbols of a canonical Huffman code (code_lengths per symbol, codes
  // MSB first) from the first `bit_length` bits of `b`.
  Status huffman_symbols(const std::vector<uint8_t>& code_lengths, const ir::Blob& b, uint64_t bit_length,
                         int64_t count, uint32_t* dst) {
    const size_t nsym = code_lengths.size();
    if (nsym == 0 || nsym > (1u << 16)) return err("Huffman alphabet size out of range");
    constexpr int kMaxLen = 32;
    std::vector<int64_t> per_len(kMaxLen + 1, 0);
    for (uint8_t l : code_lengths) {
      if (l > kMaxLen) return err("Huffman code length above 32");
      if (l) per_len[l]++;
    }
    // Kraft: a canonical code must not be over-subscribed.
    uint64_t kraft = 0;
    for (int l = 1; l <= kMaxLen; ++l) kraft += uint64_t(per_len[l]) << (kMaxLen - l);
    if (kraft > (uint64_t(1) << kMaxLen)) return err("Huffman code lengths are over-subscribed");
    std::vector<uint32_t> sorted;  // symbols by (length, value)
    for (int l = 1; l <= kMaxLen; ++l)
      for (size_t s = 0; s < nsym; ++s)
        if (code_lengths[s] == l) sorted.push_back(static_cast<uint32_t>(s));
    if (sorted.empty() && count > 0) return err("Huffman code has no symbols");
    if (bit_length > uint64_t(b.size) * 8) return err("Huffman bit length exceeds its buffer");
    if (uint64_t(count) > bit_length) return err("Huffman stream of " + std::to_string(bit_length) + " bits cannot hold " + std::to_string(count) + " symbols");
    uint64_t pos = 0;
    for (int64_t k = 0; k < count; ++k) {
      uint64_t code = 0, first = 0;
      int64_t index = 0;
      bool found = false;
      for (int l = 1; l <= kMaxLen; ++l) {
        if (pos >= bit_length) return err("Huffman stream ends early");
        code |= (b.data[pos >> 3] >> (7 - (pos & 7))) & 1;
        ++pos;
        if (code - first < uint64_t(per_len[l])) {
          dst[k] = sorted[static_cast<size_t>(index + int64_t(code - first))];
          found = true;
          break;
        }
        index += per_len[l];
        first = (first + per_len[l]) << 1;
        code <<= 1;
      }
      if (!found) return err("invalid Huffman code");
    }
    return Status::ok();
  }

  const ir::ModelIR& m_;
  const ir::TensorInfo& t_;
};

}  // namespace

Result<Tensor> decode_constant(const ir::ModelIR& model, const ir::TensorInfo& t) {
  Decoder dec(model, t);
  if (t.encodings.empty()) return dec.err_status("is not a constant");
  Shape shape = t.static_shape();
  int64_t count = shape_elements(shape);
  if (count < 0) return dec.err_status("constant without a fully known shape");
  if (dtype_size(t.dtype) == 0) return dec.err_status("constant of unsupported dtype");
  if (uint64_t(count) > max_decoded_constant_bytes() / dtype_size(t.dtype))
    return dec.err_status("constant of shape " + shape_to_string(shape) + " exceeds the decoded size limit of " +
                          std::to_string(max_decoded_constant_bytes()) + " bytes");
  // Zero-copy for plain dense data already 64-byte aligned (an mmapped file).
  if (t.encodings.size() == 1 && t.quant.empty()) {
    if (auto* d = std::get_if<ir::DenseStage>(&t.encodings[0])) {
      const ir::Blob& b = model.buffers[d->buffer];
      if (d->element_type == t.dtype && b.size == uint64_t(count) * dtype_size(t.dtype) &&
          reinterpret_cast<uintptr_t>(b.data) % 64 == 0 && b.owner) {
        return Tensor::view(t.dtype, shape, const_cast<uint8_t*>(b.data));
      }
    }
  }
  auto s = dec.stage(0, count);
  if (!s) return s.status();
  Tensor out(t.dtype, shape);
  const Stream& st = s.value();
  if (!t.quant.empty() && t.dtype == DataType::kFloat32) {
    // Quantized weights (transform `quantize`): the stages hold levels q (int8 / uint8, or
    // float levels from a codebook); the value is scale * (q - zero_point), per tensor or
    // per channel along quant.axis. Decoded here so every backend runs them as float.
    const ir::QuantParams& q = t.quant;
    int64_t channels = 1, inner = 1;
    if (q.scale.size() > 1) {
      if (q.axis < 0 || q.axis >= int(shape.size()) || shape[size_t(q.axis)] != int64_t(q.scale.size()))
        return dec.err_status("quantization has " + std::to_string(q.scale.size()) +
                              " scales, which does not match axis " + std::to_string(q.axis) + " of its shape");
      channels = shape[size_t(q.axis)];
      for (size_t k = size_t(q.axis) + 1; k < shape.size(); ++k) inner *= shape[k];
    }
    if (!q.zero_point.empty() && q.zero_point.size() != q.scale.size())
      return dec.err_status("quantization zero points do not match its scales");
    size_t es = dtype_size(st.type);
    if (st.type != DataType::kInt8 && st.type != DataType::kUInt8 && st.type != DataType::kFloat32)
      return dec.err_status(std::string("quantized levels stored as ") + dtype_name(st.type));
    if (st.bytes.size() != size_t(count) * es) return dec.err_status("decoded size mismatch");
    float* dst = out.data<float>();
    for (int64_t k = 0; k < count; ++k) {
      float level = st.type == DataType::kInt8    ? float(reinterpret_cast<const int8_t*>(st.bytes.data())[k])
                    : st.type == DataType::kUInt8 ? float(st.bytes[size_t(k)])
                                                  : reinterpret_cast<const float*>(st.bytes.data())[k];
      size_t c = q.scale.size() > 1 ? size_t((k / inner) % channels) : 0;
      float zp = q.zero_point.empty() ? 0.f : float(q.zero_point[c]);
      dst[k] = q.scale[c] * (level - zp);
    }
    return out;
  }
  if (st.type == t.dtype) {
    if (st.bytes.size() != out.bytes()) return dec.err_status("decoded size mismatch");
    if (!st.bytes.empty()) std::memcpy(out.raw(), st.bytes.data(), st.bytes.size());
  } else if (st.type == DataType::kFloat16 && t.dtype == DataType::kFloat32) {
    const uint16_t* src = reinterpret_cast<const uint16_t*>(st.bytes.data());
    for (int64_t k = 0; k < count; ++k) out.data<float>()[k] = half_to_float(src[k]);
  } else {
    return dec.err_status(std::string("stored elements are ") + dtype_name(st.type) +
                          ", tensor is " + dtype_name(t.dtype));
  }
  return out;
}

}  // namespace minnow
