// Conv against the direct definition: for every output element, the sum over the group's
// input channels and all kernel taps that land inside the (unpadded) input.
#include <doctest/doctest.h>

#include <limits>

#include "conv_packed.h"
#include "test_util.h"

using namespace cdt;

namespace {

struct ConvSpec {
  std::vector<int64_t> x;  // N, C, spatial...
  int64_t M = 1;
  int64_t group = 1;
  std::vector<int64_t> k, s, d, pads;  // pads: begins then ends
  std::string auto_pad = "NOTSET";
  bool bias = true;
};

// ONNX output size and pads for one spatial dim (written from the spec, independently of
// the kernel's own resolution).
void onnx_geometry(const std::string& auto_pad, int64_t in, int64_t k, int64_t s, int64_t d,
                   int64_t* pb, int64_t* pe, int64_t* out) {
  const int64_t eff = (k - 1) * d + 1;
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    *out = (in + s - 1) / s;
    int64_t total = std::max<int64_t>(0, (*out - 1) * s + eff - in);
    *pb = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    *pe = total - *pb;
    return;
  }
  if (auto_pad == "VALID") *pb = *pe = 0;
  *out = (in + *pb + *pe - eff) / s + 1;
}

// Advances a multi-index over `dims`; false when it wraps around.
bool next_index(std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  for (size_t i = idx.size(); i-- > 0;) {
    if (++idx[i] < dims[i]) return true;
    idx[i] = 0;
  }
  return false;
}

struct ConvProblem {
  Tensor x, w, b;
  std::vector<int64_t> out_shape;
  std::vector<double> want;
};

// W and B random, or `same_weights`' (a problem of another X shape, same layer).
ConvProblem make_problem(std::mt19937& rng, const ConvSpec& c, const ConvProblem* same_weights = nullptr) {
  const size_t nsp = c.x.size() - 2;
  const int64_t N = c.x[0], C = c.x[1], Cg = C / c.group, M = c.M, Mg = M / c.group;
  std::vector<int64_t> ws{M, Cg};
  ws.insert(ws.end(), c.k.begin(), c.k.end());
  ConvProblem p;
  p.x = random_f32(rng, c.x);
  p.w = same_weights ? same_weights->w : random_f32(rng, ws);
  p.b = same_weights ? same_weights->b : random_f32(rng, {M});
  std::vector<int64_t> pb(nsp), pe(nsp), os(nsp);
  for (size_t i = 0; i < nsp; ++i) {
    pb[i] = c.pads.empty() ? 0 : c.pads[i];
    pe[i] = c.pads.empty() ? 0 : c.pads[nsp + i];
    onnx_geometry(c.auto_pad, c.x[2 + i], c.k[i], c.s[i], c.d[i], &pb[i], &pe[i], &os[i]);
  }
  p.out_shape = {N, M};
  p.out_shape.insert(p.out_shape.end(), os.begin(), os.end());
  // Strides of X and W for multi-index addressing.
  auto offset = [](const std::vector<int64_t>& dims, const std::vector<int64_t>& idx) {
    int64_t o = 0;
    for (size_t i = 0; i < dims.size(); ++i) o = o * dims[i] + idx[i];
    return o;
  };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      const int64_t g = m / Mg;
      std::vector<int64_t> o(nsp, 0);
      do {
        double sum = c.bias ? p.b.f()[m] : 0.0;
        for (int64_t cc = 0; cc < Cg; ++cc) {
          std::vector<int64_t> kk(nsp, 0);
          do {
            std::vector<int64_t> xi{n, g * Cg + cc};
            bool inside = true;
            for (size_t i = 0; i < nsp; ++i) {
              int64_t pos = o[i] * c.s[i] - pb[i] + kk[i] * c.d[i];
              inside = inside && pos >= 0 && pos < c.x[2 + i];
              xi.push_back(pos);
            }
            if (!inside) continue;
            std::vector<int64_t> wi{m, cc};
            wi.insert(wi.end(), kk.begin(), kk.end());
            sum += double(p.x.f()[offset(c.x, xi)]) * p.w.f()[offset(ws, wi)];
          } while (next_index(kk, c.k));
        }
        p.want.push_back(sum);
      } while (next_index(o, os));
    }
  return p;
}

FakeNode conv_node(const ConvSpec& c, int version = 11) {
  FakeNode node("Conv", version);
  node.set("group", c.group).set("strides", c.s).set("dilations", c.d);
  if (c.auto_pad != "NOTSET")
    node.set("auto_pad", c.auto_pad);
  else if (!c.pads.empty())
    node.set("pads", c.pads);
  if (version % 2) node.set("kernel_shape", c.k);  // present half the time
  return node;
}

void check_conv(std::mt19937& rng, const ConvSpec& c, Ctx ctx, bool hide_dims = false,
                bool weights_constant = true, size_t* chunks = nullptr,
                std::string* kernel = nullptr) {
  ConvProblem p = make_problem(rng, c);
  std::vector<Tensor> in{p.x, p.w};
  if (weights_constant) in[1].as_constant();
  if (c.bias) in.push_back(p.b);
  // Constant W and B: the packed SIMD kernels; otherwise the reference loop.
  if (c.bias && weights_constant) in.back().as_constant();
  std::vector<Tensor> out{Tensor::out(p.out_shape)};
  CAPTURE(shape_str(c.x));
  CAPTURE(c.M);
  CAPTURE(c.group);
  CAPTURE(shape_str(c.k));
  CAPTURE(shape_str(c.s));
  CAPTURE(shape_str(c.d));
  CAPTURE(shape_str(c.pads));
  CAPTURE(c.auto_pad);
  CAPTURE(ctx_name(ctx));
  RunOptions o;
  o.ctx = ctx;
  o.hide_dims_at_prepare = hide_dims;
  RunResult r = run(conv_node(c, 1 + static_cast<int>(rng() % 17)), in, out, o);
  REQUIRE_MESSAGE(r.ok(), r.error);
  CDT_CHECK_CLOSE(out[0].f(), p.want);
  if (chunks) *chunks = r.chunks;
  if (kernel) *kernel = r.kernel_name;
}

}  // namespace

TEST_SUITE("conv") {
  TEST_CASE("Conv known answers") {
    {  // 3x3 input 1..9, 2x2 kernel 1..4, no padding
      std::vector<Tensor> in{Tensor::f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}),
                             Tensor::f32({1, 1, 2, 2}, {1, 2, 3, 4})};
      std::vector<Tensor> out{Tensor::out({1, 1, 2, 2})};
      RunResult r = run(FakeNode("Conv", 11), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "f32_conv2d_ref");
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({37, 47, 67, 77}));
    }
    {  // same, pads 1, stride 2, bias 0.5: windows start at -1 and 1
      std::vector<Tensor> in{Tensor::f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}),
                             Tensor::f32({1, 1, 2, 2}, {1, 2, 3, 4}), Tensor::f32({1}, {0.5f})};
      std::vector<Tensor> out{Tensor::out({1, 1, 2, 2})};
      FakeNode node("Conv", 11);
      node.set("pads", std::vector<int64_t>{1, 1, 1, 1}).set("strides", std::vector<int64_t>{2, 2});
      RunResult r = run(node, in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({4.5f, 18.5f, 36.5f, 77.5f}));
    }
    {  // depthwise 1-D: channel 0 [1,2,3,4] * [1,1], channel 1 [1,1,1,1] * [2,-1]
      std::vector<Tensor> in{Tensor::f32({1, 2, 4}, {1, 2, 3, 4, 1, 1, 1, 1}),
                             Tensor::f32({2, 1, 2}, {1, 1, 2, -1})};
      std::vector<Tensor> out{Tensor::out({1, 2, 3})};
      RunResult r = run(FakeNode("Conv", 11).set("group", 2), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "f32_conv1d_ref");
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({3, 5, 7, 1, 1, 1}));
    }
    {  // dilation 2: y[i] = x[i] + 10 x[i+2]
      std::vector<Tensor> in{Tensor::f32({1, 1, 5}, {1, 2, 3, 4, 5}),
                             Tensor::f32({1, 1, 2}, {1, 10})};
      std::vector<Tensor> out{Tensor::out({1, 1, 3})};
      RunResult r = run(FakeNode("Conv", 11).set("dilations", std::vector<int64_t>{2}), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({31, 42, 53}));
    }
    {  // SAME_UPPER pads the end, SAME_LOWER the beginning
      std::vector<Tensor> in{Tensor::f32({1, 1, 4}, {1, 2, 3, 4}), Tensor::f32({1, 1, 2}, {1, 10})};
      std::vector<Tensor> out{Tensor::out({1, 1, 4})};
      RunResult r = run(FakeNode("Conv", 11).set("auto_pad", "SAME_UPPER"), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({21, 32, 43, 4}));
      r = run(FakeNode("Conv", 11).set("auto_pad", "SAME_LOWER"), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({10, 21, 32, 43}));
    }
    {  // 3-D, 1x1x1 kernel: a per-voxel channel mix; two output channels
      std::vector<Tensor> in{Tensor::f32({1, 2, 1, 1, 2}, {1, 2, 3, 4}),
                             Tensor::f32({2, 2, 1, 1, 1}, {1, 1, 1, -1})};
      std::vector<Tensor> out{Tensor::out({1, 2, 1, 1, 2})};
      RunResult r = run(FakeNode("Conv", 11), in, out);
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name == "f32_conv3d_ref");
      CDT_CHECK_CLOSE(out[0].f(), std::vector<float>({4, 6, -2, -2}));
    }
  }

  TEST_CASE("Conv matches the definition over many random shapes") {
    std::mt19937 rng(2024);
    const char* pads_modes[] = {"NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    int done = 0;
    for (int iter = 0; done < 400 && iter < 5000; ++iter) {
      ConvSpec c;
      const int nsp = 1 + static_cast<int>(rng() % 3);
      const int64_t groups[] = {1, 1, 2, 3};
      c.group = groups[rng() % 4];
      const bool depthwise = rng() % 5 == 0;
      const int64_t cg = depthwise ? 1 : 1 + rng() % 4;
      const int64_t mg = depthwise ? 1 + rng() % 2 : 1 + rng() % 3;
      if (depthwise) c.group = 1 + rng() % 5;
      const int64_t maxsp = nsp == 3 ? 6 : nsp == 2 ? 11 : 23;
      c.x = {1 + static_cast<int64_t>(rng() % 3), c.group * cg};
      c.M = c.group * mg;
      c.pads.assign(2 * nsp, 0);
      for (int i = 0; i < nsp; ++i) {
        c.x.push_back(1 + rng() % maxsp);
        c.k.push_back(1 + rng() % (nsp == 3 ? 3 : 4));
        c.s.push_back(1 + rng() % 3);
        c.d.push_back(1 + rng() % 3);
        c.pads[i] = rng() % c.k.back();
        c.pads[nsp + i] = rng() % (c.k.back() + 1);  // asymmetric
      }
      c.auto_pad = pads_modes[rng() % 5];
      c.bias = rng() % 3 != 0;
      bool fits = true;
      for (int i = 0; i < nsp; ++i) {
        int64_t pb = c.pads[i], pe = c.pads[nsp + i], o;
        onnx_geometry(c.auto_pad, c.x[2 + i], c.k[i], c.s[i], c.d[i], &pb, &pe, &o);
        fits = fits && o >= 1 && c.x[2 + i] + pb + pe >= (c.k[i] - 1) * c.d[i] + 1;
      }
      if (!fits) continue;
      check_conv(rng, c, kAllCtx[done % 3], done % 4 == 3, done % 5 != 4);
      ++done;
    }
    CHECK(done == 400);
  }

  TEST_CASE("Conv: large spatial, 1x1, odd channels, batches; chunked work") {
    std::mt19937 rng(5);
    struct Big {
      ConvSpec c;
    };
    std::vector<ConvSpec> specs;
    {  // 3x3 on 64x64, 3 -> 5 channels, pad 1
      ConvSpec c;
      c.x = {1, 3, 64, 64};
      c.M = 5;
      c.k = {3, 3};
      c.s = {1, 1};
      c.d = {1, 1};
      c.pads = {1, 1, 1, 1};
      specs.push_back(c);
    }
    {  // 1x1, 7 -> 9 channels, batch 2
      ConvSpec c;
      c.x = {2, 7, 13, 11};
      c.M = 9;
      c.k = {1, 1};
      c.s = {1, 1};
      c.d = {1, 1};
      specs.push_back(c);
    }
    {  // depthwise 5x5 stride 2 SAME_UPPER, 12 channels
      ConvSpec c;
      c.x = {2, 12, 33, 29};
      c.M = 12;
      c.group = 12;
      c.k = {5, 5};
      c.s = {2, 2};
      c.d = {1, 1};
      c.auto_pad = "SAME_UPPER";
      specs.push_back(c);
    }
    {  // 3-D with groups
      ConvSpec c;
      c.x = {1, 4, 9, 10, 11};
      c.M = 6;
      c.group = 2;
      c.k = {3, 2, 3};
      c.s = {2, 1, 3};
      c.d = {1, 2, 1};
      c.pads = {1, 0, 2, 0, 1, 1};
      specs.push_back(c);
    }
    // Stride 1, 2-D: B blocks copied from a zero-padded window of X (kernels/conv_gemm.cc,
    // s1_block). K = 117 * 9 = 1053 is two k-blocks of 527 rows with AVX2 (five of 211
    // elsewhere), split inside a channel.
    {  // 3x3 pad 1, 117 -> 13 channels, rows of 20 pixels (panels straddle rows)
      ConvSpec c;
      c.x = {1, 117, 17, 20};
      c.M = 13;
      c.k = {3, 3};
      c.s = {1, 1};
      c.d = {1, 1};
      c.pads = {1, 1, 1, 1};
      specs.push_back(c);
    }
    {  // 3x3 dilated 2, asymmetric pads, groups, batch 2, rows of 5 pixels
      ConvSpec c;
      c.x = {2, 58, 9, 5};
      c.M = 14;
      c.group = 2;
      c.k = {3, 3};
      c.s = {1, 1};
      c.d = {2, 2};
      c.pads = {2, 0, 1, 3};
      specs.push_back(c);
    }
    {  // 5x2 kernel, no padding, one-pixel-wide output rows
      ConvSpec c;
      c.x = {1, 31, 40, 2};
      c.M = 7;
      c.k = {5, 2};
      c.s = {1, 1};
      c.d = {1, 1};
      specs.push_back(c);
    }
    {  // 3x3 stride 1, 20 -> 18 channels, odd map, batch 2, asymmetric pads: Winograd
      ConvSpec c;
      c.x = {2, 20, 15, 13};
      c.M = 18;
      c.k = {3, 3};
      c.s = {1, 1};
      c.d = {1, 1};
      c.pads = {1, 0, 2, 1};
      specs.push_back(c);
    }
    {  // 1x1, 800 -> 24 channels on a 9x9 map: on 4 threads (Ctx::kTbb) K in four parts
       // (kernels/conv.h, ConvPlan::k_parts), each part's partial sums in the scratch
      ConvSpec c;
      c.x = {1, 800, 9, 9};
      c.M = 24;
      c.k = {1, 1};
      c.s = {1, 1};
      c.d = {1, 1};
      specs.push_back(c);
    }
    // Row chunks only (one image, one column block): on several threads the rows go in
    // parts sized by the threads' speeds (RunContext::parallel_parts; the test contexts
    // give one part the most the ABI allows).
    {  // 3x3 pad 1, 256 -> 131 channels on a 7x7 map: 22 row panels in 2-11 parts
      ConvSpec c;
      c.x = {1, 256, 7, 7};
      c.M = 131;
      c.k = {3, 3};
      c.s = {1, 1};
      c.d = {1, 1};
      c.pads = {1, 1, 1, 1};
      specs.push_back(c);
    }
    {  // 1-D long signal, dilated
      ConvSpec c;
      c.x = {3, 5, 500};
      c.M = 4;
      c.k = {7};
      c.s = {3};
      c.d = {4};
      c.pads = {3, 9};
      specs.push_back(c);
    }
    for (const ConvSpec& c : specs)
      for (Ctx ctx : kAllCtx) {
        size_t chunks = 0;
        check_conv(rng, c, ctx, false, true, &chunks);
        if (ctx == Ctx::kChunky) CHECK(chunks > 1);
      }
  }

  TEST_CASE("Conv: images' first convs with many taps run direct on phase planes") {
    // 3 input channels, 7x7 stride 2 pad 3 (resnet's conv1) and 3x3 stride 1 over rows of
    // 70 and 75 outputs, two images, on every context; a bias-free one; 3x3 stride 2 keeps
    // the im2col GEMM.
    std::mt19937 rng(37);
    ConvSpec c;
    c.x = {2, 3, 9, 140};
    c.M = 20;
    c.k = {7, 7};
    c.s = {2, 2};
    c.d = {1, 1};
    c.pads = {3, 3, 3, 3};
    ConvSpec s1 = c;
    s1.x = {1, 3, 6, 75};
    s1.k = {3, 3};
    s1.s = {1, 1};
    s1.pads = {1, 0, 1, 0};
    s1.bias = false;
    for (const ConvSpec& g : {c, s1})
      for (Ctx ctx : kAllCtx) {
        std::string kernel;
        check_conv(rng, g, ctx, false, true, nullptr, &kernel);
        CHECK(kernel == "f32_conv_direct_6x2v__phases");
      }
    ConvSpec s2 = c;
    s2.k = {3, 3};
    s2.pads = {1, 1, 1, 1};
    std::string kernel;
    check_conv(rng, s2, Ctx::kTbb, false, true, nullptr, &kernel);
    CHECK(kernel == "f32_conv_gemm_6x2v__wrows");
  }

  TEST_CASE("Conv: 3x3 stride 1 with 16+ channels runs Winograd, others the GEMM") {
    std::mt19937 rng(21);
    ConvSpec c;
    c.x = {1, 16, 9, 10};
    c.M = 24;
    c.k = {3, 3};
    c.s = {1, 1};
    c.d = {1, 1};
    c.pads = {1, 1, 1, 1};
    for (Ctx ctx : kAllCtx) {
      std::string kernel;
      check_conv(rng, c, ctx, false, true, nullptr, &kernel);
      CHECK(kernel == "f32_conv3x3_winograd_f2x2__6x2v");
    }
    ConvSpec strided = c;  // stride 2, dilation 2, 15 channels, 1x3: the GEMM path
    strided.s = {2, 2};
    ConvSpec dilated = c;
    dilated.d = {2, 2};
    ConvSpec narrow = c;
    narrow.x = {1, 15, 9, 10};
    ConvSpec wide = c;
    wide.k = {1, 3};
    wide.pads = {0, 1, 0, 1};
    // Maps with at least half as many pixels as input channels (ConvPacked::winograd_pays):
    // 40 channels on 5x5 (25 pixels) take Winograd, on 4x4 (16 pixels) the GEMM.
    ConvSpec half = c;
    half.x = {1, 40, 5, 5};
    for (Ctx ctx : kAllCtx) {
      std::string kernel;
      check_conv(rng, half, ctx, false, true, nullptr, &kernel);
      CHECK(kernel == "f32_conv3x3_winograd_f2x2__6x2v");
    }
    // Maps of several tile blocks: on several threads each worker takes a run of tiles
    // (sized by speed: the test contexts hand out skewed parts) and pads the rows it reads
    // into memory of its own (ConvPacked::run_winograd). F(4x4, 3x3) where its tiles fill
    // a panel (ConvPacked::winograd_tile: 32 tiles, about 22x22 and up): 4 blocks of 32
    // tiles (odd sizes, asymmetric pads, two images) and 14; one block of 49 tiles
    // (27x27), shared by output channels on several threads.
    // F(2x2, 3x3) below that: 4 blocks (20x19, 64 channels), 2 (21x18, two images).
    ConvSpec blocks4 = c;
    blocks4.x = {2, 17, 41, 37};
    blocks4.M = 20;
    blocks4.pads = {1, 0, 2, 1};
    ConvSpec blocks14 = c;
    blocks14.x = {1, 16, 83, 79};
    blocks14.M = 18;
    ConvSpec one_block4 = c;
    one_block4.x = {1, 32, 27, 27};
    one_block4.M = 40;
    ConvSpec blocks4_f2 = c;
    blocks4_f2.x = {1, 64, 20, 19};
    blocks4_f2.M = 64;
    ConvSpec blocks2_f2 = c;
    blocks2_f2.x = {2, 24, 21, 18};
    blocks2_f2.M = 40;
    const std::pair<ConvSpec, const char*> tiled[] = {{blocks4, "f32_conv3x3_winograd_f4x4__6x2v"},
                                                      {blocks14, "f32_conv3x3_winograd_f4x4__6x2v"},
                                                      {one_block4, "f32_conv3x3_winograd_f4x4__6x2v"},
                                                      {blocks4_f2, "f32_conv3x3_winograd_f2x2__6x2v"},
                                                      {blocks2_f2, "f32_conv3x3_winograd_f2x2__6x2v"}};
    for (const auto& [g, want] : tiled)
      for (Ctx ctx : kAllCtx) {
        std::string kernel;
        check_conv(rng, g, ctx, false, true, nullptr, &kernel);
        CHECK(kernel == want);
      }
    ConvSpec small_map = c;
    small_map.x = {1, 40, 4, 4};
    for (const ConvSpec& g : {strided, dilated, narrow, wide, small_map}) {
      std::string kernel;
      check_conv(rng, g, Ctx::kSerial, false, true, nullptr, &kernel);
      CHECK(kernel == "f32_conv_gemm_6x2v__wrows");
    }
  }

  TEST_CASE("Conv: one prepared kernel over several X shapes and thread counts") {
    // The packed kernel keeps its last plan per shape and thread count (ConvPacked::plan):
    // runs that change either must not reuse it. Prepared with X's dims hidden, then X of
    // 28x28, 14x14 and 28x28 again, on 1, 8 and 4 threads; pointwise (the GEMM with B
    // read in place; 32 output channels: tall tiles with AVX-512 where one row chunk runs),
    // 3x3 stride 2 (B built) and depthwise.
    std::mt19937 rng(29);
    for (const ConvSpec& base : {ConvSpec{{1, 16, 28, 28}, 24, 1, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
                                 ConvSpec{{1, 40, 28, 28}, 32, 1, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},
                                 ConvSpec{{1, 8, 28, 28}, 20, 1, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
                                 ConvSpec{{1, 16, 28, 28}, 16, 16, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}}}) {
      const ConvProblem first = make_problem(rng, base);
      std::vector<Tensor> in{first.x, first.w, first.b};
      in[1].as_constant();
      in[2].as_constant();
      std::vector<Tensor> out{Tensor::out(first.out_shape)};
      struct Later {
        ConvProblem p;
        std::vector<Tensor> in, out;
      };
      std::vector<Later> later;
      const std::pair<int64_t, Ctx> runs[] = {{14, Ctx::kChunky}, {28, Ctx::kTbb}, {14, Ctx::kSerial}, {28, Ctx::kSerial}};
      for (const auto& run_spec : runs) {
        ConvSpec c = base;
        c.x[2] = c.x[3] = run_spec.first;
        Later l{make_problem(rng, c, &first), {}, {}};
        l.in = {l.p.x, first.w, first.b};
        l.in[1].as_constant();
        l.in[2].as_constant();
        l.out = {Tensor::out(l.p.out_shape)};
        later.push_back(std::move(l));
      }
      std::vector<Rerun> reruns;
      for (size_t i = 0; i < later.size(); ++i) {
        Rerun again;
        again.inputs = &later[i].in;
        again.outputs = &later[i].out;
        again.ctx = runs[i].second;
        reruns.push_back(again);
      }
      RunOptions o;
      o.ctx = Ctx::kTbb;
      o.hide_dims_at_prepare = true;
      o.reruns = &reruns;
      RunResult r = run(conv_node(base), in, out, o);
      CAPTURE(base.group);
      CAPTURE(shape_str(base.k));
      REQUIRE_MESSAGE(r.ok(), r.error);
      CHECK(r.kernel_name.find("f32_") == 0);  // the packed SIMD kernels, not the reference
      CDT_CHECK_CLOSE(out[0].f(), first.want);
      for (size_t i = 0; i < later.size(); ++i) {
        CAPTURE(i);
        REQUIRE_MESSAGE(reruns[i].status == MN_OK, reruns[i].error);
        CDT_CHECK_CLOSE(later[i].out[0].f(), later[i].p.want);
      }
    }
  }

  TEST_CASE("Conv errors are reported, not crashes") {
    std::mt19937 rng(11);
    auto x = random_f32(rng, {1, 6, 5, 5});
    {  // group does not divide the channels
      std::vector<Tensor> in{x, random_f32(rng, {4, 2, 3, 3})}, out{Tensor::out({1, 4, 3, 3})};
      FakeNode node("Conv", 11);
      node.set("group", 4);
      mn_bid b = bid(node, in, out);
      CHECK(b.cost < 0);
      CHECK(std::string(b.reason).find("group") != std::string::npos);
      RunOptions o;
      o.skip_bid = true;
      RunResult r = run(node, in, out, o);
      CHECK(r.status == MN_ERR_INVALID_ARGUMENT);
      CHECK(r.error.find("Conv") != std::string::npos);
    }
    {  // W expects other channel count (found only at run time when X's dims are unknown)
      std::vector<Tensor> in{x, random_f32(rng, {4, 4, 3, 3})}, out{Tensor::out({1, 4, 3, 3})};
      CHECK(bid(FakeNode("Conv", 11), in, out).cost < 0);
      RunOptions o;
      o.skip_bid = true;
      o.hide_dims_at_prepare = true;
      in[1].as_constant();
      RunResult r = run(FakeNode("Conv", 11), in, out, o);
      CHECK(r.status == MN_ERR_INVALID_ARGUMENT);
      CHECK(r.error.find("input channels") != std::string::npos);
    }
    const std::vector<std::pair<std::string, FakeNode>> bad = {
        {"auto_pad", FakeNode("Conv", 11).set("auto_pad", "SAME")},
        {"pads", FakeNode("Conv", 11).set("pads", std::vector<int64_t>{1, 1})},
        {"strides", FakeNode("Conv", 11).set("strides", std::vector<int64_t>{0, 1})},
        {"dilations", FakeNode("Conv", 11).set("dilations", std::vector<int64_t>{1, 1, 1})},
        {"kernel_shape", FakeNode("Conv", 11).set("kernel_shape", std::vector<int64_t>{2, 2})},
        {"group", FakeNode("Conv", 11).set("group", 0)},
    };
    for (const auto& b : bad) {
      CAPTURE(b.first);
      std::vector<Tensor> in{random_f32(rng, {1, 2, 5, 5}), random_f32(rng, {3, 2, 3, 3})};
      std::vector<Tensor> out{Tensor::out({1, 3, 3, 3})};
      mn_bid bd = bid(b.second, in, out);
      CHECK(bd.cost < 0);
      CHECK(std::string(bd.reason).find(b.first) != std::string::npos);
    }
    {  // an output shape the attributes cannot give
      std::vector<Tensor> in{random_f32(rng, {1, 2, 5, 5}), random_f32(rng, {3, 2, 3, 3})};
      std::vector<Tensor> out{Tensor::out({1, 3, 4, 4})};
      RunResult r = run(FakeNode("Conv", 11), in, out);
      CHECK(r.status == MN_ERR_INVALID_ARGUMENT);
      CHECK(r.error.find("output") != std::string::npos);
    }
    {  // 4 spatial dims: refused as unsupported
      std::vector<Tensor> in{random_f32(rng, {1, 1, 2, 2, 2, 2}),
                             random_f32(rng, {1, 1, 1, 1, 1, 1})};
      std::vector<Tensor> out{Tensor::out({1, 1, 2, 2, 2, 2})};
      CHECK(bid(FakeNode("Conv", 11), in, out).cost < 0);
    }
  }
  TEST_CASE("Conv: a K split only where the depthwise producer wrote X by channels") {
    // A projection 144 -> 24 after a depthwise conv (mobilenet_v2): on 2 threads the
    // channel-blocked depthwise writes channel blocks on small maps (a K split then reads
    // what each thread wrote) but output rows on maps of kDwRowPartsMinPixels or more (the
    // projection's own column blocks read what each wrote there; a K split would not).
    using minnow::cpu_dense::ConvPacked;
    using minnow::cpu_dense::kDwRowPartsMinPixels;
    namespace k = minnow::cpu_dense::kernels;
    std::vector<float> w(24 * 144, 0.5f);
    ConvPacked proj(w.data(), 24, 144, 1, 1, nullptr, 2);
    auto shape = [](int64_t side) {
      k::ConvShape s;
      s.C = 144;
      s.M = 24;
      s.in[1] = s.in[2] = s.out[1] = s.out[2] = side;
      return s;
    };
    const k::ConvShape s56 = shape(56), s28 = shape(28);
    REQUIRE(s56.Pin() >= kDwRowPartsMinPixels);
    REQUIRE(s28.Pin() < kDwRowPartsMinPixels);
    CHECK_FALSE(proj.input_by_channels(s28, 2));  // no depthwise producer
    proj.set_input_by_channels(true, kDwRowPartsMinPixels);
    CHECK(proj.input_by_channels(s28, 2));
    CHECK_FALSE(proj.input_by_channels(s56, 2));
    CHECK(proj.input_by_channels(s56, 1));
    // What the hint changes: plan_conv splits K on the 28x28 map, not on the 56x56 one.
    CHECK(k::plan_conv(s28, 2, proj.input_by_channels(s28, 2)).k_parts == 2);
    CHECK(k::plan_conv(s56, 2, proj.input_by_channels(s56, 2)).k_parts == 1);
    CHECK(k::plan_conv(s56, 2, true).k_parts == 2);
    // A producer that splits channels on every map (planes, not channel blocks).
    proj.set_input_by_channels(true);
    CHECK(proj.input_by_channels(s56, 2));
    // The depthwise conv itself: rows from kDwRowPartsMinPixels on where it takes channel
    // blocks; a map too wide for them takes planes (channels) whatever its size.
    std::vector<float> wd(144 * 9, 0.1f);
    ConvPacked dw(wd.data(), 144, 1, 9, 144, nullptr, 2);
    k::ConvShape d = shape(56);
    d.M = d.group = 144;
    d.k[1] = d.k[2] = 3;
    d.pb[1] = d.pb[2] = 1;
    const int64_t rows_from = dw.dw_rows_from_pixels(d);
    CHECK((rows_from == kDwRowPartsMinPixels || rows_from == std::numeric_limits<int64_t>::max()));
    CHECK(proj.dw_rows_from_pixels(s56) == std::numeric_limits<int64_t>::max());  // not depthwise
  }
}
