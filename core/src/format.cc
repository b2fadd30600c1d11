// The .minnow file format: IR <-> bytes, with verification on the way in.
//
// Layout: [uint32 size][flatbuffer "MNW1"][zero pad to 64][data section]. Buffers are
// (offset, size) into the data section, each offset a multiple of 64, so an mmapped file
// is used in place. The data section carries a CRC-32 so corrupted weights are caught.
// Compact layout (format 1.3, for compressed models, whose description is as large as
// their weights): ["MNWZ"][uint32 described size][uint32 deflated size][raw deflate of
// the size-prefixed flatbuffer][zero pad to 8][data section]; the description is
// inflated once at load, the data section is read as in the plain layout.
#include <minnow/ir.h>
#include <minnow/status.h>

#include "minnow/minnow_generated.h"

#include "crc32.h"

#include <zlib.h>

#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <type_traits>

namespace minnow {

namespace fbs = minnow::fb;

namespace {

constexpr size_t kAlign = 64;
constexpr size_t kMinAlign = 8;  // buffers not read in place (format 1.2)
constexpr size_t kMaxRank = MN_MAX_RANK;

size_t align_up(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }
size_t align8(size_t v) { return (v + kMinAlign - 1) / kMinAlign * kMinAlign; }

constexpr char kCompactMagic[4] = {'M', 'N', 'W', 'Z'};
constexpr size_t kCompactHeader = 12;
// An inflated description larger than this is refused before it is allocated (a crafted
// header cannot ask for gigabytes); the largest real one is a few megabytes.
constexpr size_t kMaxDescription = size_t(1) << 30;

uint32_t get_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Raw deflate (no zlib header: the file has its own magic and sizes) at zlib's `level`
// (serialize_model's deflate_level; zlib refuses one out of range).
bool deflate_bytes(const uint8_t* in, size_t size, int level, std::vector<uint8_t>* out) {
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) != Z_OK) return false;
  out->resize(deflateBound(&z, uLong(size)));
  z.next_in = const_cast<Bytef*>(in);
  z.avail_in = uInt(size);
  z.next_out = out->data();
  z.avail_out = uInt(out->size());
  const int rc = deflate(&z, Z_FINISH);
  out->resize(z.total_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END;
}

// Inflates exactly `expect` bytes from exactly `size` bytes of raw deflate; anything else
// (a corrupt stream, trailing bytes, a short or long result) is an error.
Status inflate_bytes(const uint8_t* in, size_t size, size_t expect, std::vector<uint8_t>* out,
                     const std::string& origin) {
  const std::string bad = origin + ": corrupt compact model description";
  out->resize(expect + 1);  // one spare byte: a longer stream is caught, not truncated
  z_stream z{};
  if (inflateInit2(&z, -15) != Z_OK) return invalid_argument(bad + " (inflate init)");
  z.next_in = const_cast<Bytef*>(in);
  z.avail_in = uInt(size);
  z.next_out = out->data();
  z.avail_out = uInt(out->size());
  const int rc = inflate(&z, Z_FINISH);
  const size_t produced = z.total_out, consumed = z.total_in;
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return invalid_argument(bad + " (deflate stream is damaged or truncated)");
  if (produced != expect || consumed != size)
    return invalid_argument(bad + " (inflates to " + std::to_string(produced) + " bytes from " +
                            std::to_string(consumed) + ", header says " + std::to_string(expect) + " from " +
                            std::to_string(size) + ")");
  out->resize(expect);
  return Status::ok();
}

uint32_t crc32_of(const uint8_t* data, size_t size) { return crc32(data, size); }

bool valid_dtype(int v) { return v >= 0 && v <= static_cast<int>(DataType::kString); }

// ---- IR -> flatbuffer -------------------------------------------------------------
flatbuffers::Offset<fbs::Encoding> write_stage(flatbuffers::FlatBufferBuilder& b,
                                               const ir::EncodingStage& st) {
  if (auto* d = std::get_if<ir::DenseStage>(&st)) {
    auto e = fbs::CreateDenseEncoding(b, d->buffer, static_cast<fbs::DataType>(d->element_type));
    return fbs::CreateEncoding(b, fbs::EncodingStage::DenseEncoding, e.Union());
  }
  if (auto* s = std::get_if<ir::SparseStage>(&st)) {
    flatbuffers::Offset<flatbuffers::Vector<uint8_t>> lengths;
    if (!s->index_code_lengths.empty()) lengths = b.CreateVector(s->index_code_lengths);
    auto e = fbs::CreateSparseEncoding(b, static_cast<fbs::SparseFormat>(s->format), s->rows,
                                       s->cols, s->block_rows, s->block_cols, s->row_ptr,
                                       s->col_idx, s->nnz,
                                       static_cast<fbs::SparseIndexFormat>(s->index), s->index_bits,
                                       s->index_count, s->index_buffer, lengths, s->index_bit_length);
    return fbs::CreateEncoding(b, fbs::EncodingStage::SparseEncoding, e.Union());
  }
  if (auto* c = std::get_if<ir::CodebookStage>(&st)) {
    auto e = fbs::CreateCodebookEncoding(b, b.CreateVector(c->centroids), c->bits, c->indices,
                                         c->count);
    return fbs::CreateEncoding(b, fbs::EncodingStage::CodebookEncoding, e.Union());
  }
  const auto& h = std::get<ir::HuffmanStage>(st);
  auto e = fbs::CreateHuffmanEncoding(b, b.CreateVector(h.code_lengths), h.bitstream, h.count,
                                      h.bit_length);
  return fbs::CreateEncoding(b, fbs::EncodingStage::HuffmanEncoding, e.Union());
}

// Strings are shared (one copy of "kernel_shape", "Conv", a plugin version ... however
// often they occur) and empty ones are left out: the reader takes an absent string as "".
flatbuffers::Offset<flatbuffers::String> shared(flatbuffers::FlatBufferBuilder& b, const std::string& s) {
  return s.empty() ? flatbuffers::Offset<flatbuffers::String>() : b.CreateSharedString(s);
}

flatbuffers::Offset<fbs::Attribute> write_attr(flatbuffers::FlatBufferBuilder& b,
                                               const ir::Attribute& a) {
  auto name = b.CreateSharedString(a.name);  // required, so written even when empty
  flatbuffers::Offset<flatbuffers::String> s;
  flatbuffers::Offset<flatbuffers::Vector<int64_t>> ints;
  flatbuffers::Offset<flatbuffers::Vector<float>> floats;
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>> strings;
  if (a.type == ir::AttrType::kString) s = b.CreateSharedString(a.s);
  if (a.type == ir::AttrType::kInts) ints = b.CreateVector(a.ints);
  if (a.type == ir::AttrType::kFloats) floats = b.CreateVector(a.floats);
  if (a.type == ir::AttrType::kStrings) strings = b.CreateVectorOfStrings(a.strings);
  return fbs::CreateAttribute(b, name, static_cast<fbs::AttributeType>(a.type), a.i, a.f, s,
                              ints, floats, strings, a.tensor);
}

// ---- flatbuffer -> IR (after the verifier has passed) -------------------------------
std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

// The FlatBuffers verifier (2.0.x) checks a vector's length field but not the alignment of
// its elements, so a crafted file can place an int64 vector at an address that is only
// 4-byte aligned: copy the bytes instead of reading elements in place (FlatBuffers data
// is little-endian, as are all hosts we build for).
template <class T>
std::vector<T> vec(const flatbuffers::Vector<T>* v) {
  static_assert(std::is_arithmetic<T>::value, "scalar vectors only");
  std::vector<T> out(v ? v->size() : 0);
  if (!out.empty()) std::memcpy(out.data(), v->Data(), out.size() * sizeof(T));
  return out;
}

Status read_stage(const fbs::Encoding* e, ir::EncodingStage* out, const std::string& where) {
  if (!e) return invalid_argument(where + ": null encoding stage");
  // The verifier accepts a union whose type is set but whose table is absent.
  if (!e->stage()) return invalid_argument(where + ": encoding stage has a type but no table");
  switch (e->stage_type()) {
    case fbs::EncodingStage::DenseEncoding: {
      auto* d = e->stage_as_DenseEncoding();
      if (!valid_dtype(static_cast<int>(d->element_type())))
        return invalid_argument(where + ": dense stage has an invalid element type");
      *out = ir::DenseStage{d->buffer(), static_cast<DataType>(d->element_type())};
      return Status::ok();
    }
    case fbs::EncodingStage::SparseEncoding: {
      auto* s = e->stage_as_SparseEncoding();
      ir::SparseStage st;
      st.format = static_cast<ir::SparseFormat>(s->format());
      if (st.format != ir::SparseFormat::kCSR && st.format != ir::SparseFormat::kBSR)
        return invalid_argument(where + ": unknown sparse format");
      st.rows = s->rows();
      st.cols = s->cols();
      st.block_rows = s->block_rows();
      st.block_cols = s->block_cols();
      st.row_ptr = s->row_ptr();
      st.col_idx = s->col_idx();
      st.nnz = s->nnz();
      st.index = static_cast<ir::SparseIndex>(s->index_format());
      if (st.index != ir::SparseIndex::kExplicit && st.index != ir::SparseIndex::kRelative)
        return invalid_argument(where + ": unknown sparse index format");
      st.index_bits = s->index_bits();
      st.index_count = s->index_count();
      st.index_buffer = s->index_buffer();
      st.index_code_lengths = vec(s->index_code_lengths());
      st.index_bit_length = s->index_bit_length();
      *out = st;
      return Status::ok();
    }
    case fbs::EncodingStage::CodebookEncoding: {
      auto* c = e->stage_as_CodebookEncoding();
      *out = ir::CodebookStage{vec(c->centroids()), c->bits(), c->indices(), c->count()};
      return Status::ok();
    }
    case fbs::EncodingStage::HuffmanEncoding: {
      auto* h = e->stage_as_HuffmanEncoding();
      *out = ir::HuffmanStage{vec(h->code_lengths()), h->bitstream(), h->count(),
                              h->bit_length()};
      return Status::ok();
    }
    default:
      return invalid_argument(where + ": unknown encoding stage type");
  }
}

}  // namespace

// Structural checks shared by the writer and the reader: every index in range, each
// tensor produced once, constants not produced, buffers referenced exist.
Status check_ir(const ir::ModelIR& m, const std::string& origin) {
  const auto& g = m.graph;
  const int nt = static_cast<int>(g.tensors.size());
  const uint32_t nb = static_cast<uint32_t>(m.buffers.size());
  std::set<std::string> names;
  for (int i = 0; i < nt; ++i) {
    const auto& t = g.tensors[i];
    std::string where = origin + ": tensor " + std::to_string(i) + " '" + t.name + "'";
    if (t.name.empty()) return invalid_argument(origin + ": tensor " + std::to_string(i) + " has no name");
    if (!names.insert(t.name).second) return invalid_argument(where + ": duplicate tensor name");
    if (!valid_dtype(static_cast<int>(t.dtype)) || t.dtype == DataType::kUndefined)
      return invalid_argument(where + ": invalid dtype");
    if (t.shape.size() > kMaxRank) return invalid_argument(where + ": rank " + std::to_string(t.shape.size()) + " exceeds " + std::to_string(kMaxRank));
    for (const auto& d : t.shape)
      if (d.value < -1) return invalid_argument(where + ": negative dimension " + std::to_string(d.value));
    for (const auto& st : t.encodings) {
      auto check = [&](uint32_t b, const char* what) -> Status {
        if (b >= nb) return invalid_argument(where + ": " + what + " buffer " + std::to_string(b) + " out of range (" + std::to_string(nb) + " buffers)");
        return Status::ok();
      };
      if (auto* d = std::get_if<ir::DenseStage>(&st)) MINNOW_RETURN_IF_ERROR(check(d->buffer, "dense"));
      if (auto* s = std::get_if<ir::SparseStage>(&st)) {
        if (s->index == ir::SparseIndex::kRelative) {
          MINNOW_RETURN_IF_ERROR(check(s->index_buffer, "sparse index"));
        } else {
          MINNOW_RETURN_IF_ERROR(check(s->row_ptr, "row_ptr"));
          MINNOW_RETURN_IF_ERROR(check(s->col_idx, "col_idx"));
        }
      }
      if (auto* h = std::get_if<ir::HuffmanStage>(&st)) MINNOW_RETURN_IF_ERROR(check(h->bitstream, "huffman"));
    }
    if (t.is_constant()) {
      Shape s = t.static_shape();
      if (!t.has_shape || shape_elements(s) < 0)
        return invalid_argument(where + ": constant without a fully known shape");
    }
  }
  std::vector<int> producer(nt, -1);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const auto& node = g.nodes[n];
    std::string where = origin + ": " + node.describe();
    if (node.op.empty()) return invalid_argument(origin + ": node " + std::to_string(n) + " has no op");
    for (int32_t in : node.inputs)
      if (in < -1 || in >= nt) return invalid_argument(where + ": input tensor index " + std::to_string(in) + " out of range (" + std::to_string(nt) + " tensors)");
    for (int32_t out : node.outputs) {
      if (out < 0 || out >= nt) return invalid_argument(where + ": output tensor index " + std::to_string(out) + " out of range (" + std::to_string(nt) + " tensors)");
      if (g.tensors[out].is_constant()) return invalid_argument(where + ": writes constant tensor '" + g.tensors[out].name + "'");
      if (producer[out] >= 0) return invalid_argument(where + ": tensor '" + g.tensors[out].name + "' already produced by node " + std::to_string(producer[out]));
      producer[out] = static_cast<int>(n);
    }
    for (const auto& a : node.attributes) {
      if (a.type == ir::AttrType::kTensor && (a.tensor < 0 || a.tensor >= nt || !g.tensors[a.tensor].is_constant()))
        return invalid_argument(where + ": attribute '" + a.name + "' refers to a tensor that is not a constant");
      if (static_cast<int>(a.type) < 0 || static_cast<int>(a.type) > 7)
        return invalid_argument(where + ": attribute '" + a.name + "' has an invalid type");
    }
  }
  for (int32_t in : g.inputs) {
    if (in < 0 || in >= nt) return invalid_argument(origin + ": graph input index " + std::to_string(in) + " out of range");
    if (producer[in] >= 0) return invalid_argument(origin + ": graph input '" + g.tensors[in].name + "' is also produced by a node");
    if (g.tensors[in].is_constant()) return invalid_argument(origin + ": graph input '" + g.tensors[in].name + "' is a constant");
  }
  for (int32_t out : g.outputs)
    if (out < 0 || out >= nt) return invalid_argument(origin + ": graph output index " + std::to_string(out) + " out of range");
  if (g.outputs.empty()) return invalid_argument(origin + ": graph has no outputs");
  return Status::ok();
}

Result<std::vector<uint8_t>> serialize_model(const ir::ModelIR& m, int deflate_level) {
  MINNOW_RETURN_IF_ERROR(check_ir(m, "model"));
  flatbuffers::FlatBufferBuilder b(1 << 16);
  const auto& g = m.graph;

  std::vector<flatbuffers::Offset<fbs::Tensor>> tensors;
  for (const auto& t : g.tensors) {
    // Plain sizes (`dims`) unless a dimension is symbolic; nothing for an unknown rank.
    bool symbolic = false;
    for (const auto& d : t.shape) symbolic = symbolic || !d.symbol.empty();
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fbs::Dim>>> shape;
    flatbuffers::Offset<flatbuffers::Vector<int64_t>> plain;
    if (symbolic) {
      std::vector<flatbuffers::Offset<fbs::Dim>> dims;
      for (const auto& d : t.shape) dims.push_back(fbs::CreateDim(b, d.value, shared(b, d.symbol)));
      shape = b.CreateVector(dims);
    } else if (!t.shape.empty()) {
      std::vector<int64_t> v;
      for (const auto& d : t.shape) v.push_back(d.value);
      plain = b.CreateVector(v);
    }
    std::vector<flatbuffers::Offset<fbs::Encoding>> encs;
    for (const auto& st : t.encodings) encs.push_back(write_stage(b, st));
    flatbuffers::Offset<fbs::QuantParams> q;
    if (!t.quant.empty())
      q = fbs::CreateQuantParams(b, b.CreateVector(t.quant.scale),
                                 t.quant.zero_point.empty() ? 0 : b.CreateVector(t.quant.zero_point),
                                 t.quant.axis, t.quant.bits, t.quant.symmetric);
    tensors.push_back(fbs::CreateTensor(b, b.CreateSharedString(t.name),
                                        static_cast<fbs::DataType>(t.dtype), shape,
                                        t.has_shape, encs.empty() ? 0 : b.CreateVector(encs), q,
                                        plain));
  }
  std::vector<flatbuffers::Offset<fbs::Node>> nodes;
  for (const auto& n : g.nodes) {
    std::vector<flatbuffers::Offset<fbs::Attribute>> attrs;
    for (const auto& a : n.attributes) attrs.push_back(write_attr(b, a));
    nodes.push_back(fbs::CreateNode(b, shared(b, n.name), shared(b, n.domain),
                                    b.CreateSharedString(n.op), n.op_version, b.CreateVector(n.inputs),
                                    b.CreateVector(n.outputs), attrs.empty() ? 0 : b.CreateVector(attrs)));
  }
  auto graph = fbs::CreateGraph(b, shared(b, g.name), b.CreateVector(tensors),
                                b.CreateVector(nodes), b.CreateVector(g.inputs),
                                b.CreateVector(g.outputs));

  // Data section: a buffer a dense stage of the tensor's own type reads (weights used in
  // place, zero-copy, also the values of a sparse chain, which sparse kernels read as they
  // are) at the next 64-byte boundary; the others (codebook indices, Huffman and sparse
  // index streams, quantized levels: always decoded) at the next 8 bytes: up to 56 bytes
  // less padding each, which is a few percent of a compressed model of a few kilobytes.
  std::vector<bool> in_place(m.buffers.size(), false);
  for (const auto& t : g.tensors)
    for (const auto& st : t.encodings)
      if (auto* d = std::get_if<ir::DenseStage>(&st))  // stored as the tensor's own type
        if (d->buffer < in_place.size() && d->element_type == t.dtype && t.quant.empty())
          in_place[d->buffer] = true;
  std::vector<fbs::Buffer> buffers;
  size_t data_size = 0;
  for (size_t i = 0; i < m.buffers.size(); ++i) {
    const auto& blob = m.buffers[i];
    data_size = in_place[i] ? align_up(data_size) : (data_size + kMinAlign - 1) / kMinAlign * kMinAlign;
    buffers.emplace_back(data_size, blob.size);
    data_size += blob.size;
  }
  std::vector<uint8_t> data(data_size, 0);
  for (size_t i = 0; i < m.buffers.size(); ++i)
    if (m.buffers[i].size) std::memcpy(data.data() + buffers[i].offset(), m.buffers[i].data, m.buffers[i].size);
  uint32_t crc = data.empty() ? 0 : crc32_of(data.data(), data.size());

  std::vector<flatbuffers::Offset<fbs::KeyValue>> meta;
  for (const auto& kv : m.metadata)
    meta.push_back(fbs::CreateKeyValue(b, b.CreateSharedString(kv.first), shared(b, kv.second)));
  std::vector<flatbuffers::Offset<fbs::CompressionRecord>> log;
  for (const auto& r : m.compression_log)
    log.push_back(fbs::CreateCompressionRecord(
        b, shared(b, r.plugin), shared(b, r.plugin_version), shared(b, r.parameters),
        r.size_before, r.size_after, shared(b, r.metric), r.metric_before, r.metric_after,
        shared(b, r.timestamp)));
  std::vector<flatbuffers::Offset<fbs::OpsetImport>> opsets;
  for (const auto& o : m.opsets)
    opsets.push_back(fbs::CreateOpsetImport(b, shared(b, o.domain), o.version));

  auto root = fbs::CreateModel(b, kFormatMajor, kFormatMinor, shared(b, m.producer), graph,
                               b.CreateVectorOfStructs(buffers), b.CreateVector(meta),
                               b.CreateVector(log), b.CreateVector(opsets), crc);
  fbs::FinishSizePrefixedModelBuffer(b, root);

  std::vector<uint8_t> z;
  if (m.compact && b.GetSize() <= kMaxDescription && deflate_bytes(b.GetBufferPointer(), b.GetSize(), deflate_level, &z) &&
      align8(kCompactHeader + z.size()) < align_up(b.GetSize())) {
    const size_t start = align8(kCompactHeader + z.size());
    std::vector<uint8_t> out(start + data.size(), 0);
    const uint32_t described = uint32_t(b.GetSize()), deflated = uint32_t(z.size());
    std::memcpy(out.data(), kCompactMagic, 4);
    std::memcpy(out.data() + 4, &described, 4);
    std::memcpy(out.data() + 8, &deflated, 4);
    std::memcpy(out.data() + kCompactHeader, z.data(), z.size());
    if (!data.empty()) std::memcpy(out.data() + start, data.data(), data.size());
    return out;
  }
  std::vector<uint8_t> out(align_up(b.GetSize()) + data.size(), 0);
  std::memcpy(out.data(), b.GetBufferPointer(), b.GetSize());
  if (!data.empty()) std::memcpy(out.data() + align_up(b.GetSize()), data.data(), data.size());
  return out;
}

Result<ir::ModelIR> parse_model(const uint8_t* data, size_t size,
                                std::shared_ptr<const void> owner, const std::string& origin) {
  if (size < 16) return invalid_argument(origin + ": file too small to be a Minnow model (" + std::to_string(size) + " bytes)");
  // The description (a size-prefixed flatbuffer) and where the data section starts: in
  // the file itself, or inflated from the compact layout.
  const uint8_t* desc = data;
  size_t desc_size = 0, data_start = 0;
  std::vector<uint8_t> inflated;
  const bool compact = std::memcmp(data, kCompactMagic, 4) == 0;
  if (compact) {
    const size_t described = get_u32(data + 4), deflated = get_u32(data + 8);
    if (deflated > size - kCompactHeader)
      return invalid_argument(origin + ": truncated: header says " + std::to_string(deflated) + " bytes of compact model description, file has " + std::to_string(size - kCompactHeader) + " after the header");
    if (described < 8 || described > kMaxDescription)
      return invalid_argument(origin + ": corrupt compact model description (described size " + std::to_string(described) + ")");
    MINNOW_RETURN_IF_ERROR(inflate_bytes(data + kCompactHeader, deflated, described, &inflated, origin));
    desc = inflated.data();
    desc_size = described;
    data_start = align8(kCompactHeader + deflated);
    if (data_start > size) data_start = size;
  } else {
    desc_size = size_t(get_u32(data)) + 4;
    if (!fbs::SizePrefixedModelBufferHasIdentifier(data))
      return invalid_argument(origin + ": not a Minnow model (file identifier is not MNW1)");
    if (desc_size > size)
      return invalid_argument(origin + ": truncated: header says " + std::to_string(desc_size) + " bytes of model description, file has " + std::to_string(size));
    data_start = align_up(desc_size);
  }
  if (size_t(get_u32(desc)) + 4 != desc_size || !fbs::SizePrefixedModelBufferHasIdentifier(desc))
    return invalid_argument(origin + ": corrupt compact model description (not a size-prefixed MNW1 flatbuffer)");
  flatbuffers::Verifier::Options vopts;
  vopts.max_tables = 100000000;
  vopts.max_depth = 64;
  flatbuffers::Verifier verifier(desc, desc_size, vopts);
  if (!fbs::VerifySizePrefixedModelBuffer(verifier))
    return invalid_argument(origin + ": corrupt model description (FlatBuffers verification failed)");
  const fbs::Model* fm = fbs::GetSizePrefixedModel(desc);
  if (fm->format_major() != kFormatMajor)
    return unsupported(origin + ": format version " + std::to_string(fm->format_major()) + "." + std::to_string(fm->format_minor()) + " is not supported by this build (major " + std::to_string(kFormatMajor) + ")");

  const size_t data_size = size >= data_start ? size - data_start : 0;

  ir::ModelIR m;
  m.format_major = fm->format_major();
  m.format_minor = fm->format_minor();
  m.producer = str(fm->producer());
  m.compact = compact;
  if (fm->buffers()) {
    if (data_size > 0 && fm->data_crc32() != crc32_of(data + data_start, data_size))
      return invalid_argument(origin + ": data section checksum mismatch (corrupted or truncated weights)");
    for (size_t i = 0; i < fm->buffers()->size(); ++i) {
      // Struct elements may be misaligned in a crafted file (see vec()): copy them out.
      uint64_t off, len;
      const uint8_t* raw = reinterpret_cast<const uint8_t*>(fm->buffers()->Data()) + i * sizeof(fbs::Buffer);
      std::memcpy(&off, raw, 8);
      std::memcpy(&len, raw + 8, 8);
      if (off % kMinAlign != 0)
        return invalid_argument(origin + ": buffer " + std::to_string(i) + " is not 8-byte aligned");
      if (off > data_size || len > data_size - off)
        return invalid_argument(origin + ": buffer " + std::to_string(i) + " [" + std::to_string(off) + ", +" + std::to_string(len) + ") lies outside the data section (" + std::to_string(data_size) + " bytes): truncated file?");
      // In place only at a 64-byte address (what dense weights get in the plain layout);
      // anything else is copied into an aligned block, so no kernel ever sees a weight
      // pointer of lesser alignment.
      const bool zero_copy = owner && reinterpret_cast<uintptr_t>(data + data_start + off) % kAlign == 0;
      if (zero_copy) {
        ir::Blob blob;
        blob.owner = owner;
        blob.data = data + data_start + off;
        blob.size = len;
        m.buffers.push_back(std::move(blob));
      } else {
        m.buffers.push_back(ir::Blob::copy_of(data + data_start + off, len));
      }
    }
  }

  const fbs::Graph* fg = fm->graph();
  m.graph.name = str(fg->name());
  if (fg->tensors()) {
    for (size_t i = 0; i < fg->tensors()->size(); ++i) {
      const fbs::Tensor* ft = fg->tensors()->Get(i);
      if (!ft) return invalid_argument(origin + ": tensor " + std::to_string(i) + " is null");
      ir::TensorInfo t;
      t.name = str(ft->name());
      t.dtype = static_cast<DataType>(ft->dtype());
      t.has_shape = ft->has_shape();
      if (ft->dims()) {
        if (ft->dims()->size() > kMaxRank)
          return invalid_argument(origin + ": tensor '" + t.name + "' has rank " + std::to_string(ft->dims()->size()) + " above " + std::to_string(kMaxRank));
        for (int64_t v : vec(ft->dims())) t.shape.push_back(ir::Dim{v, std::string()});
      } else if (ft->shape()) {
        if (ft->shape()->size() > kMaxRank)
          return invalid_argument(origin + ": tensor '" + t.name + "' has rank " + std::to_string(ft->shape()->size()) + " above " + std::to_string(kMaxRank));
        for (const fbs::Dim* d : *ft->shape()) {
          if (!d) return invalid_argument(origin + ": tensor '" + t.name + "' has a null dim");
          t.shape.push_back(ir::Dim{d->value(), str(d->symbol())});
        }
      }
      if (ft->encodings()) {
        for (size_t k = 0; k < ft->encodings()->size(); ++k) {
          ir::EncodingStage st;
          MINNOW_RETURN_IF_ERROR(read_stage(ft->encodings()->Get(k), &st, origin + ": tensor '" + t.name + "'"));
          t.encodings.push_back(std::move(st));
        }
      }
      if (const fbs::QuantParams* q = ft->quant()) {
        t.quant.scale = vec(q->scale());
        t.quant.zero_point = vec(q->zero_point());
        t.quant.axis = q->axis();
        t.quant.bits = q->bits();
        t.quant.symmetric = q->symmetric();
      }
      m.graph.tensors.push_back(std::move(t));
    }
  }
  if (fg->nodes()) {
    for (size_t i = 0; i < fg->nodes()->size(); ++i) {
      const fbs::Node* fn = fg->nodes()->Get(i);
      if (!fn) return invalid_argument(origin + ": node " + std::to_string(i) + " is null");
      ir::Node n;
      n.name = str(fn->name());
      n.domain = str(fn->domain());
      n.op = str(fn->op());
      n.op_version = fn->op_version();
      n.inputs = vec(fn->inputs());
      n.outputs = vec(fn->outputs());
      if (fn->attributes()) {
        for (const fbs::Attribute* fa : *fn->attributes()) {
          if (!fa) return invalid_argument(origin + ": node '" + n.name + "' has a null attribute");
          ir::Attribute a;
          a.name = str(fa->name());
          a.type = static_cast<ir::AttrType>(fa->type());
          a.i = fa->i();
          a.f = fa->f();
          a.s = str(fa->s());
          a.ints = vec(fa->ints());
          a.floats = vec(fa->floats());
          if (fa->strings())
            for (const auto* s : *fa->strings()) a.strings.push_back(str(s));
          a.tensor = fa->tensor();
          n.attributes.push_back(std::move(a));
        }
      }
      m.graph.nodes.push_back(std::move(n));
    }
  }
  m.graph.inputs = vec(fg->inputs());
  m.graph.outputs = vec(fg->outputs());
  if (fm->metadata())
    for (const auto* kv : *fm->metadata())
      if (kv) m.metadata.emplace_back(str(kv->key()), str(kv->value()));
  if (fm->compression_log())
    for (const auto* r : *fm->compression_log()) {
      if (!r) continue;
      ir::CompressionRecord c;
      c.plugin = str(r->plugin());
      c.plugin_version = str(r->plugin_version());
      c.parameters = str(r->parameters());
      c.size_before = r->size_before();
      c.size_after = r->size_after();
      c.metric = str(r->metric());
      c.metric_before = r->metric_before();
      c.metric_after = r->metric_after();
      c.timestamp = str(r->timestamp());
      m.compression_log.push_back(std::move(c));
    }
  if (fm->opsets())
    for (const auto* o : *fm->opsets())
      if (o) m.opsets.push_back(ir::OpsetImport{str(o->domain()), o->version()});

  MINNOW_RETURN_IF_ERROR(check_ir(m, origin));
  return m;
}

}  // namespace minnow
