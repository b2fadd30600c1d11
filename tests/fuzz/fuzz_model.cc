// Fuzz target: a .minnow file through everything a host app does with a downloaded model:
// FlatBuffers verifier + our checks (parse_model), decoding every constant (dense, sparse
// CSR/BSR, codebook, Huffman, quantized), shape inference and kernel choice (prepare),
// memory planning (Session::create) and, when the plan is small, one run.
#include <minnow/minnow.h>

#include "minnow/minnow_generated.h"

#include <boost/crc.hpp>

#include <cstring>
#include <vector>

namespace {

std::shared_ptr<minnow::Engine> engine() {
  static std::shared_ptr<minnow::Engine> e = [] {
    minnow::EngineOptions o;
    o.plugin_paths = {MINNOW_FUZZ_PLUGIN_DIR};  // the build's backends and op plugins
    o.use_environment = false;
    o.use_default_folder = false;
    return minnow::Engine::create(o).value();
  }();
  return e;
}

// The data section's CRC-32 would stop almost every mutation of weights or encodings at
// the checksum; recompute it so the fuzzer reaches the decoders. (The CRC check itself is
// covered by tests/unit/model_format_test.cc.)
void fix_crc(std::vector<uint8_t>& buf) {
  if (buf.size() < 16 || !minnow::fb::SizePrefixedModelBufferHasIdentifier(buf.data())) return;
  uint32_t fb_size;
  std::memcpy(&fb_size, buf.data(), 4);
  if (size_t(fb_size) + 4 > buf.size()) return;
  flatbuffers::Verifier v(buf.data(), fb_size + 4);
  if (!minnow::fb::VerifySizePrefixedModelBuffer(v)) return;
  const size_t start = (size_t(fb_size) + 4 + 63) / 64 * 64;
  if (start >= buf.size()) return;
  boost::crc_32_type crc;
  crc.process_bytes(buf.data() + start, buf.size() - start);
  auto* table = reinterpret_cast<flatbuffers::Table*>(const_cast<minnow::fb::Model*>(minnow::fb::GetSizePrefixedModel(buf.data())));
  table->SetField<uint32_t>(minnow::fb::Model::VT_DATA_CRC32, crc.checksum(), 0);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  minnow::set_log_level("off");
  // Keep every allocation the fuzzer can provoke far below libFuzzer's 2 GB RSS limit.
  minnow::set_max_decoded_constant_bytes(64 << 20);
  engine();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> buf(data, data + size);
  fix_crc(buf);
  auto model = minnow::Model::load_memory(buf.data(), buf.size(), "fuzz.minnow");
  if (!model) return 0;
  auto pm = engine()->prepare(model.value());
  if (!pm) return 0;
  minnow::SessionOptions so;
  so.max_arena_bytes = 16 << 20;
  auto s = minnow::Session::create(pm.value(), so);
  if (!s) return 0;
  // Inputs: zeros of the declared shape (symbolic dims as 1).
  auto& sess = *s.value();
  const auto& g = model.value()->graph();
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    minnow::Shape shape = g.tensors[g.inputs[i]].static_shape();
    for (auto& d : shape) d = d < 0 ? 1 : d;
    int64_t n = minnow::shape_elements(shape);
    if (n < 0 || n > (1 << 20)) return 0;
    if (!sess.set_input(i, minnow::Tensor(g.tensors[g.inputs[i]].dtype, shape))) return 0;
  }
  // Run only what is cheap, so slow-but-correct graphs are not reported as timeouts.
  double flops = 0;
  for (const auto& p : sess.profile()) flops += p.flops;
  if (flops > 5e7 || sess.profile().size() > 200) return 0;
  (void)sess.run();
  return 0;
}
