// Writes the synthesized part of the fuzz seed corpora (the rest are copies of the real
// files in tests/data): small .minnow models whose weights use every encoding chain the
// decoder knows, TensorProto / .npy tensors, idx image and label files, and small images
// in every format the image reader decodes.
//   make_seeds <out dir>   ->  <out>/model/*.minnow, <out>/tensor_pb/*.pb, <out>/npy/*.npy, <out>/idx/*,
//                              <out>/image/*
#include <minnow/minnow.h>

#include "tensor_io.h"
#include "test_images.h"

#include <cstdio>
#include <functional>
#include <string>
#include <sys/stat.h>

using namespace minnow;

namespace {

constexpr int64_t kRows = 8, kCols = 16;

void write(const std::string& path, const std::vector<uint8_t>& bytes) {
  Status s = write_file_atomic(path, bytes.data(), bytes.size());
  if (!s) {
    std::fprintf(stderr, "make_seeds: %s\n", s.message().c_str());
    std::exit(1);
  }
}

// Weight values: symbols 0..7 of an 8-entry codebook, zero for about half the entries.
uint32_t symbol(int64_t r, int64_t c) { return ((r * 7 + c * 3) % 11) < 6 ? 0 : uint32_t(1 + (r + c) % 7); }
float centroid(uint32_t s) { return s == 0 ? 0.f : 0.125f * float(s) - 0.5f; }

struct Csr {
  std::vector<int32_t> row_ptr{0}, col_idx;
  std::vector<uint32_t> symbols;
};
// CSR (block 1x1) or BSR (block br x bc) of the non-zero blocks.
Csr csr(int br, int bc) {
  Csr m;
  for (int64_t R = 0; R < kRows / br; ++R) {
    for (int64_t C = 0; C < kCols / bc; ++C) {
      bool any = false;
      for (int y = 0; y < br; ++y)
        for (int x = 0; x < bc; ++x) any = any || symbol(R * br + y, C * bc + x) != 0;
      if (!any) continue;
      m.col_idx.push_back(int32_t(C));
      for (int y = 0; y < br; ++y)
        for (int x = 0; x < bc; ++x) m.symbols.push_back(symbol(R * br + y, C * bc + x));
    }
    m.row_ptr.push_back(int32_t(m.col_idx.size()));
  }
  return m;
}

// Canonical Huffman code with lengths 1,2,...,7,7: symbol s < 7 is s ones and a zero.
ir::HuffmanStage huffman(ModelBuilder& b, const std::vector<uint32_t>& syms) {
  std::vector<uint8_t> bytes;
  uint64_t bits = 0;
  auto put = [&](int bit) {
    if (bits % 8 == 0) bytes.push_back(0);
    if (bit) bytes.back() |= uint8_t(0x80 >> (bits % 8));
    ++bits;
  };
  for (uint32_t s : syms) {
    for (uint32_t k = 0; k < s; ++k) put(1);
    if (s < 7) put(0);
  }
  ir::HuffmanStage h;
  h.code_lengths = {1, 2, 3, 4, 5, 6, 7, 7};
  h.bitstream = b.add_buffer(bytes.data(), bytes.size());
  h.count = int64_t(syms.size());
  h.bit_length = bits;
  return h;
}

ir::CodebookStage codebook(ModelBuilder& b, const std::vector<uint32_t>& syms, bool packed) {
  ir::CodebookStage c;
  for (uint32_t s = 0; s < 8; ++s) c.centroids.push_back(centroid(s));
  c.bits = 3;
  c.count = int64_t(syms.size());
  std::vector<uint8_t> bytes((syms.size() * 3 + 7) / 8, 0);
  if (packed)  // little-endian bit order: bit k*bits+j is bit j of index k
    for (size_t k = 0; k < syms.size(); ++k)
      for (int j = 0; j < 3; ++j)
        if (syms[k] >> j & 1) bytes[(k * 3 + j) / 8] |= uint8_t(1 << ((k * 3 + j) % 8));
  c.indices = b.add_buffer(bytes.data(), bytes.size());
  return c;
}

ir::SparseStage sparse(ModelBuilder& b, const Csr& m, int br, int bc) {
  ir::SparseStage s;
  s.format = br == 1 && bc == 1 ? ir::SparseFormat::kCSR : ir::SparseFormat::kBSR;
  s.rows = kRows;
  s.cols = kCols;
  s.block_rows = br;
  s.block_cols = bc;
  s.row_ptr = b.add_buffer(m.row_ptr.data(), m.row_ptr.size() * 4);
  s.col_idx = b.add_buffer(m.col_idx.data(), m.col_idx.size() * 4);
  s.nnz = int64_t(m.symbols.size());
  return s;
}

ir::DenseStage dense_f32(ModelBuilder& b, const std::vector<uint32_t>& syms) {
  std::vector<float> v;
  for (uint32_t s : syms) v.push_back(centroid(s));
  return ir::DenseStage{b.add_buffer(v.data(), v.size() * 4), DataType::kFloat32};
}

// x[N,16] -> Gemm(w1 [8,16] encoded, transB) -> Relu -> Gemm(w2, transB) -> Softmax.
// `compact`: the file in format 1.3's compact layout (description deflated), so the
// fuzzer also reaches the inflate path.
std::vector<uint8_t> mlp(const std::function<void(ModelBuilder&, ir::TensorInfo&)>& encode_w1, bool compact = false) {
  ModelBuilder b("seed");
  b.add_input("x", DataType::kFloat32, std::vector<ir::Dim>{{-1, "N"}, {kCols, ""}});
  ir::TensorInfo w1;
  w1.name = "w1";
  w1.shape = {ir::Dim{kRows, ""}, ir::Dim{kCols, ""}};
  encode_w1(b, w1);
  b.ir().graph.tensors[b.tensor("w1")] = w1;  // registered by name, then filled in
  Tensor w2(DataType::kFloat32, Shape{4, kRows});
  for (int64_t i = 0; i < w2.elements(); ++i) w2.data<float>()[i] = 0.1f * float(i % 5) - 0.2f;
  b.add_constant("w2", w2);
  b.add_constant("b1", Tensor::from_vector<float>({kRows}, std::vector<float>(kRows, 0.01f)));
  b.add_node("Gemm", {"x", "w1", "b1"}, {"h"}, {Attr::Int("transB", 1)}, "fc1");
  b.add_node("Relu", {"h"}, {"a"}, {}, "relu1");
  b.add_node("Gemm", {"a", "w2"}, {"logits"}, {Attr::Int("transB", 1)}, "fc2");
  b.add_node("Softmax", {"logits"}, {"prob"}, {Attr::Int("axis", 1)}, "softmax");
  b.add_output("prob");
  b.ir().compact = compact;
  auto bytes = b.serialize();
  if (!bytes || !Model::load_memory(bytes.value().data(), bytes.value().size())) {
    std::fprintf(stderr, "make_seeds: a seed model does not load: %s\n",
                 bytes ? Model::load_memory(bytes.value().data(), bytes.value().size()).status().message().c_str()
                       : bytes.status().message().c_str());
    std::exit(1);
  }
  return bytes.value();
}

std::vector<uint32_t> all_symbols() {
  std::vector<uint32_t> s;
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t c = 0; c < kCols; ++c) s.push_back(symbol(r, c));
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds <out dir>\n");
    return 2;
  }
  const std::string out = argv[1];
  for (const char* d : {"", "/model", "/tensor_pb", "/npy", "/idx", "/image"}) mkdir((out + d).c_str(), 0755);
  const auto syms = all_symbols();

  write(out + "/model/dense.minnow", mlp([&](ModelBuilder& b, ir::TensorInfo& t) { t.encodings = {dense_f32(b, syms)}; }));
  write(out + "/model/csr.minnow", mlp([&](ModelBuilder& b, ir::TensorInfo& t) {
    Csr m = csr(1, 1);
    t.encodings = {sparse(b, m, 1, 1), dense_f32(b, m.symbols)};
  }));
  write(out + "/model/bsr.minnow", mlp([&](ModelBuilder& b, ir::TensorInfo& t) {
    Csr m = csr(2, 4);
    t.encodings = {sparse(b, m, 2, 4), dense_f32(b, m.symbols)};
  }));
  write(out + "/model/codebook.minnow", mlp([&](ModelBuilder& b, ir::TensorInfo& t) { t.encodings = {codebook(b, syms, true)}; }));
  write(out + "/model/codebook_huffman.minnow", mlp([&](ModelBuilder& b, ir::TensorInfo& t) {
    t.encodings = {codebook(b, syms, false), huffman(b, syms)};
  }));
  write(out + "/model/csr_codebook.minnow", mlp([&](ModelBuilder& b, ir::TensorInfo& t) {
    Csr m = csr(1, 1);
    t.encodings = {sparse(b, m, 1, 1), codebook(b, m.symbols, true)};
  }));
  write(out + "/model/csr_codebook_huffman.minnow", mlp([&](ModelBuilder& b, ir::TensorInfo& t) {
    Csr m = csr(1, 1);
    t.encodings = {sparse(b, m, 1, 1), codebook(b, m.symbols, false), huffman(b, m.symbols)};
  }));
  write(out + "/model/int8_per_channel.minnow", mlp([&](ModelBuilder& b, ir::TensorInfo& t) {
    std::vector<int8_t> q;
    for (uint32_t s : syms) q.push_back(int8_t(int(s) * 9 - 30));
    t.encodings = {ir::DenseStage{b.add_buffer(q.data(), q.size()), DataType::kInt8}};
    for (int64_t r = 0; r < kRows; ++r) {
      t.quant.scale.push_back(0.01f * float(r + 1));
      t.quant.zero_point.push_back(r % 3);
    }
    t.quant.axis = 0;
  }));
  write(out + "/model/compact_csr_codebook.minnow", mlp([&](ModelBuilder& b, ir::TensorInfo& t) {
    Csr m = csr(1, 1);
    t.encodings = {sparse(b, m, 1, 1), codebook(b, m.symbols, true)};
  }, true));
  write(out + "/model/float16.minnow", mlp([&](ModelBuilder& b, ir::TensorInfo& t) {
    std::vector<uint16_t> h;
    for (uint32_t s : syms) h.push_back(uint16_t(s == 0 ? 0 : 0x3800 + s * 0x40));  // small positive halves
    t.encodings = {ir::DenseStage{b.add_buffer(h.data(), h.size() * 2), DataType::kFloat16}};
  }));

  Tensor f = Tensor::from_vector<float>({2, 3}, {1, -2, 3.5f, 0, 1e-3f, -7});
  Tensor i64 = Tensor::from_vector<int64_t>({4}, {1, -1, 28, 28});
  write(out + "/tensor_pb/f32.pb", cli::write_tensor_proto(f, "x"));
  write(out + "/tensor_pb/i64.pb", cli::write_tensor_proto(i64, "shape"));
  write(out + "/npy/f32.npy", cli::write_npy(f));
  write(out + "/npy/i64.npy", cli::write_npy(i64));

  // idx: 3 images of 4x5 pixels, and 3 labels (big-endian header fields).
  std::vector<uint8_t> images = {0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5};
  for (int k = 0; k < 3 * 4 * 5; ++k) images.push_back(uint8_t(k * 13));
  write(out + "/idx/images-idx3-ubyte", images);
  write(out + "/idx/labels-idx1-ubyte", {0, 0, 8, 1, 0, 0, 0, 3, 7, 0, 9});

  // Images: 6x5, grey and RGB, in each format read (PNG, JPEG, PGM/PPM).
  using test::ImageFormat;
  const std::pair<ImageFormat, const char*> formats[] = {
      {ImageFormat::kPng, "png"}, {ImageFormat::kJpeg, "jpg"}, {ImageFormat::kPnm, "pnm"}};
  for (int c : {1, 3}) {
    std::vector<uint8_t> px(size_t(6 * 5 * c));
    for (size_t k = 0; k < px.size(); ++k) px[k] = uint8_t(k * 29 + 7);
    for (const auto& [format, ext] : formats)
      write(out + "/image/c" + std::to_string(c) + "." + ext, test::encode_image(format, 6, 5, c, px));
  }
  return 0;
}
