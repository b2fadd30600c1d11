// The image reader of `minnow run`: decoding each compiled-in format, channel order,
// layout, normalisation, the bilinear resize, and refusals (truncated, unknown format,
// a header declaring too many pixels, wrong channel count). Images are encoded in memory.
#include <doctest/doctest.h>

#include "test_images.h"
#include "crc32.h"
#include "image_input.h"

#include <cmath>
#include <string>

using namespace minnow;
using minnow::test::encode_image;
using minnow::test::ImageFormat;

namespace {

std::vector<uint8_t> ramp(int w, int h, int c) {
  std::vector<uint8_t> px(size_t(w) * h * c);
  for (size_t i = 0; i < px.size(); ++i) px[i] = uint8_t((i * 37 + 11) % 256);
  return px;
}

Result<Tensor> decode(const std::vector<uint8_t>& bytes, const Shape& shape, const cli::ImageOptions& opt = {}) {
  return cli::decode_image_tensor(bytes.data(), bytes.size(), "x.img", shape, opt);
}

}  // namespace

TEST_SUITE("image_input") {
  TEST_CASE("lossless formats decode exactly, grey and RGB, NCHW") {
    for (ImageFormat f : {ImageFormat::kPng, ImageFormat::kPnm}) {
      for (int c : {1, 3}) {
        const int w = 5, h = 3;
        const auto px = ramp(w, h, c);
        auto t = decode(encode_image(f, w, h, c, px), Shape{1, c, -1, -1});
        REQUIRE_MESSAGE(t.is_ok(), t.status().message());
        REQUIRE(t.value().shape() == Shape{1, c, h, w});
        const float* d = t.value().data<float>();
        for (int k = 0; k < c; ++k)
          for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x)
              REQUIRE(d[(size_t(k) * h + y) * w + x] == doctest::Approx(px[(size_t(y) * w + x) * c + k] / 255.f));
      }
    }
  }

  TEST_CASE("PGM/PPM: maxval scaling, 16-bit samples, comments, grey <-> RGB") {
    // maxval 15, a comment between fields: 0, 15, 5 -> 0, 255, 85.
    const std::string p5 = "P5 # made by hand\n3 1\n15\n";
    std::vector<uint8_t> f(p5.begin(), p5.end());
    for (uint8_t v : {0, 15, 5}) f.push_back(v);
    auto t = decode(f, Shape{1, 1, 1, 3}, [] { cli::ImageOptions o; o.scale = 1.f; return o; }());
    REQUIRE_MESSAGE(t.is_ok(), t.status().message());
    CHECK(t.value().data<float>()[0] == 0.f);
    CHECK(t.value().data<float>()[1] == 255.f);
    CHECK(t.value().data<float>()[2] == 85.f);
    // 16-bit big-endian: 65535 -> 255, 257 -> 1; as RGB every channel repeats the grey value.
    const std::string h16 = "P5\n2 1\n65535\n";
    std::vector<uint8_t> g(h16.begin(), h16.end());
    for (uint8_t b : {0xff, 0xff, 0x01, 0x01}) g.push_back(b);
    cli::ImageOptions raw;
    raw.scale = 1.f;
    auto rgb = decode(g, Shape{1, 3, 1, 2}, raw);
    REQUIRE_MESSAGE(rgb.is_ok(), rgb.status().message());
    for (int k = 0; k < 3; ++k) {
      CHECK(rgb.value().data<float>()[k * 2] == 255.f);
      CHECK(rgb.value().data<float>()[k * 2 + 1] == 1.f);
    }
    // PPM to grey: BT.601 luma of pure red, green, blue.
    const std::vector<uint8_t> px = {255, 0, 0, 0, 255, 0, 0, 0, 255};
    auto grey = decode(encode_image(ImageFormat::kPnm, 3, 1, 3, px), Shape{1, 1, 1, 3}, raw);
    REQUIRE_MESSAGE(grey.is_ok(), grey.status().message());
    CHECK(grey.value().data<float>()[0] == 76.f);
    CHECK(grey.value().data<float>()[1] == 150.f);
    CHECK(grey.value().data<float>()[2] == 29.f);
    // Too few pixel bytes, maxval 0, an 8000x8000 header: refused.
    for (const std::string& bad : {std::string("P6\n4 4\n255\n\x01\x02"), std::string("P5\n1 1\n0\n\x00"),
                                   std::string("P5\n8000 8000\n255\n")}) {
      auto r = decode(std::vector<uint8_t>(bad.begin(), bad.end()), Shape{1, 1, -1, -1});
      CHECK_FALSE(r.is_ok());
    }
  }

  TEST_CASE("JPEG decodes close to the original") {
    std::vector<uint8_t> px(16 * 16, 120);
    auto t = decode(encode_image(ImageFormat::kJpeg, 16, 16, 1, px), Shape{1, 1, 16, 16});
    REQUIRE_MESSAGE(t.is_ok(), t.status().message());
    for (int64_t i = 0; i < 256; ++i) CHECK(std::fabs(t.value().data<float>()[i] * 255.f - 120.f) <= 2.f);
  }

  TEST_CASE("NHWC, BGR and per-channel mean/std") {
    const int w = 2, h = 2;
    const std::vector<uint8_t> px = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120};
    cli::ImageOptions opt;
    opt.nhwc = true;
    opt.bgr = true;
    opt.scale = 1.f;
    opt.mean = {1.f, 2.f, 3.f};
    opt.std = {2.f, 4.f, 8.f};
    auto t = decode(encode_image(ImageFormat::kPng, w, h, 3, px), Shape{1, h, w, 3}, opt);
    REQUIRE_MESSAGE(t.is_ok(), t.status().message());
    const float* d = t.value().data<float>();
    for (int p = 0; p < w * h; ++p)
      for (int k = 0; k < 3; ++k) {
        const float u = px[size_t(p) * 3 + size_t(2 - k)];  // tensor channel k = image channel 2-k
        CHECK(d[p * 3 + k] == doctest::Approx((u - opt.mean[size_t(k)]) / opt.std[size_t(k)]));
      }
  }

  TEST_CASE("bilinear resize with half-pixel centres") {
    // [0, 255] widened to 4: sample points -0.25 (clamped), 0.25, 0.75, 1.25 (clamped).
    auto r = cli::resize_bilinear(std::vector<uint8_t>{0, 255}.data(), 2, 1, 1, 4, 1);
    REQUIRE(r.size() == 4);
    CHECK(r[0] == doctest::Approx(0.f));
    CHECK(r[1] == doctest::Approx(63.75f));
    CHECK(r[2] == doctest::Approx(191.25f));
    CHECK(r[3] == doctest::Approx(255.f));
    // Through the reader: a 7x5 constant image to the model's 28x28 stays constant.
    std::vector<uint8_t> px(7 * 5, 200);
    auto t = decode(encode_image(ImageFormat::kPng, 7, 5, 1, px), Shape{1, 1, 28, 28});
    REQUIRE_MESSAGE(t.is_ok(), t.status().message());
    for (int64_t i = 0; i < 28 * 28; ++i) REQUIRE(t.value().data<float>()[i] == doctest::Approx(200.f / 255.f));
  }

  TEST_CASE("bad images are refused with the file's name") {
    const auto png = encode_image(ImageFormat::kPng, 6, 4, 1, ramp(6, 4, 1));
    auto msg = [](const Result<Tensor>& r) { return r.is_ok() ? std::string("(ok)") : r.status().message(); };
    // Truncated at every length: an error, never a crash.
    for (size_t n = 0; n < png.size(); ++n) {
      std::vector<uint8_t> cut(png.begin(), png.begin() + long(n));
      auto r = decode(cut, Shape{1, 1, -1, -1});
      if (!r.is_ok()) CHECK_MESSAGE(msg(r).find("x.img") != std::string::npos, msg(r));
    }
    for (const auto& other : {std::vector<uint8_t>{'G', 'I', 'F', '8', '9', 'a', 2, 0, 2, 0, 0, 0, 0},
                              encode_image(ImageFormat::kBmp, 2, 2, 3, std::vector<uint8_t>(12, 9))}) {
      auto r = decode(other, Shape{1, 1, -1, -1});
      REQUIRE_FALSE(r.is_ok());
      CHECK_MESSAGE(msg(r).find("unknown image format; PNG, JPEG") != std::string::npos, msg(r));
    }
    // IHDR width and height (big-endian at bytes 16 and 20) patched to 8000 x 8000: refused
    // from the header, before 64 Mpx are allocated (stb itself only stops at 2^30 bytes).
    auto huge = png;
    for (int at : {16, 20}) {
      huge[size_t(at)] = 0, huge[size_t(at) + 1] = 0, huge[size_t(at) + 2] = 0x1f, huge[size_t(at) + 3] = 0x40;
    }
    const uint32_t crc = crc32(huge.data() + 12, 17);  // chunk type + data; libpng checks it
    for (int k = 0; k < 4; ++k) huge[size_t(29 + k)] = uint8_t(crc >> (24 - 8 * k));
    auto big = decode(huge, Shape{1, 1, -1, -1});
    REQUIRE_FALSE(big.is_ok());
    CHECK_MESSAGE(msg(big).find("8000x8000 pixels is larger") != std::string::npos, msg(big));
    auto four = decode(png, Shape{1, 4, -1, -1});
    REQUIRE_FALSE(four.is_ok());
    CHECK_MESSAGE(msg(four).find("4 channels") != std::string::npos, msg(four));
    auto missing = cli::read_image_tensor("/nonexistent/x.png", Shape{1, 1, 28, 28}, {});
    REQUIRE_FALSE(missing.is_ok());
    CHECK(msg(missing).find("/nonexistent/x.png") != std::string::npos);
  }
}
