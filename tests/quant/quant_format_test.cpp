// NF4 and FP8 encode / decode / pack against hand-worked values (QUANT.md): the codebook and its
// midpoints (ties to the lower index), the high-nibble-first packing with odd counts, partial
// and all-zero blocks, bitsandbytes' reciprocal-vs-division arithmetic, double quantization and
// its dynamic map; FP8 round-to-nearest-even with saturation, NaN, infinities and subnormals;
// and the shared dequantizer (runtime/kernels/util/quant_formats.h) on every granularity.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "runtime/kernels/util/quant_formats.h"
#include "tools/compiler/fp8.h"
#include "tools/compiler/nf4.h"

namespace tern {
namespace {

using compiler::Fp8Format;
using compiler::Fp8Granularity;

uint32_t bits(float f) { return quant::float_to_bits(f); }

// ------------------------------------------------------------------------------------- NF4

TEST(Nf4, CodebookIsQuantMd) {
  EXPECT_EQ(quant::kNf4Code[0], -1.0f);
  EXPECT_EQ(quant::kNf4Code[7], 0.0f);
  EXPECT_EQ(quant::kNf4Code[15], 1.0f);
  EXPECT_EQ(quant::kNf4Code[8], 0.07958029955625534f);
  for (int i = 0; i < 15; ++i) EXPECT_LT(quant::kNf4Code[i], quant::kNf4Code[i + 1]) << i;
}

TEST(Nf4, MidpointsTieToTheLowerIndex) {
  const auto& mids = compiler::nf4_midpoints();
  for (int i = 0; i < 15; ++i) {
    EXPECT_EQ(mids[i], (quant::kNf4Code[i] + quant::kNf4Code[i + 1]) / 2.0f);
    EXPECT_EQ(compiler::nf4_code_index(mids[i]), i) << "exactly on midpoint " << i;
    EXPECT_EQ(compiler::nf4_code_index(std::nextafter(mids[i], 2.0f)), i + 1) << i;
    EXPECT_EQ(compiler::nf4_code_index(std::nextafter(mids[i], -2.0f)), i) << i;
  }
  for (uint8_t i = 0; i < 16; ++i) EXPECT_EQ(compiler::nf4_code_index(quant::kNf4Code[i]), i);
  EXPECT_EQ(compiler::nf4_code_index(-1.0f), 0);
  EXPECT_EQ(compiler::nf4_code_index(1.0f), 15);
  EXPECT_EQ(compiler::nf4_code_index(0.0f), 7);
  EXPECT_EQ(compiler::nf4_code_index(-0.0f), 7);
  // Hand-worked: the midpoint between codes 7 (0) and 8 (0.0795803) is 0.03979015.
  EXPECT_EQ(mids[7], 0.07958029955625534f / 2.0f);
  EXPECT_EQ(compiler::nf4_code_index(0.039f), 7);
  EXPECT_EQ(compiler::nf4_code_index(0.04f), 8);
}

TEST(Nf4, PacksHighNibbleFirstAndPadsOddCounts) {
  // Three values, one partial block of 64: absmax 2; x / 2 = 1, -1, 0 -> codes 15, 0, 7.
  const float x[] = {2.0f, -2.0f, 0.0f};
  const compiler::Nf4Encoded e = compiler::nf4_quantize(x, 3, 64);
  ASSERT_EQ(e.packed.size(), 2u);
  EXPECT_EQ(e.packed[0], 0xF0);  // 15 << 4 | 0
  EXPECT_EQ(e.packed[1], 0x70);  // 7 << 4 | padding code 0
  ASSERT_EQ(e.absmax.size(), 1u);
  EXPECT_EQ(e.absmax[0], 2.0f);
}

TEST(Nf4, BlocksPartialBlocksAndAllZeroBlocks) {
  // 32 + 32 + 5 elements in blocks of 32: block 0 all zero, block 1 ±absmax and a midpoint,
  // block 2 (partial) its own absmax.
  std::vector<float> x(69, 0.0f);
  x[32] = -3.0f;  // -absmax -> code 0
  x[33] = 3.0f;   // +absmax -> code 15
  x[34] = 3.0f * compiler::nf4_midpoints()[10];  // a midpoint after scaling (if exact) -> 10
  x[64] = 0.5f;
  x[68] = -0.25f;
  const compiler::Nf4Encoded e = compiler::nf4_quantize(x.data(), x.size(), 32);
  ASSERT_EQ(e.absmax.size(), 3u);
  ASSERT_EQ(e.packed.size(), 35u);
  EXPECT_EQ(bits(e.absmax[0]), bits(1e-38f)) << "all-zero block: absmax clamped to 1e-38";
  EXPECT_EQ(e.absmax[1], 3.0f);
  EXPECT_EQ(e.absmax[2], 0.5f);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(e.packed[j], 0x77) << "zeros are code 7";
  EXPECT_EQ(e.packed[16], 0x0F);
  const float scaled = x[34] * (1.0f / 3.0f);
  EXPECT_EQ(e.packed[17] >> 4, compiler::nf4_code_index(scaled));
  EXPECT_EQ(e.packed[32], 0xF7);            // 0.5 / 0.5 = 1 -> 15; 0 -> 7
  // -0.25 / 0.5 = -0.5 lies between codes 2 (-0.5251) and 3 (-0.3949), below their midpoint
  // -0.4600: code 2; element 69 does not exist, so the low nibble is the padding code 0.
  EXPECT_EQ(e.packed[34], 2 << 4);
}

TEST(Nf4, FullBlocksScaleByTheReciprocalPartialBlocksDivide) {
  // bitsandbytes' CPU quantize_4bit computes x * (1 / absmax) for full blocks and x / absmax for
  // the trailing partial block; find inputs where the two roundings pick different codes.
  const float absmax = 3.0f;
  const float reciprocal = 1.0f / absmax;
  float found = 0.0f;
  for (int i = 0; i < 15 && found == 0.0f; ++i) {
    float x = compiler::nf4_midpoints()[i] * absmax;
    for (int step = 0; step < 64 && found == 0.0f; ++step, x = std::nextafter(x, 10.0f)) {
      if (compiler::nf4_code_index(x * reciprocal) != compiler::nf4_code_index(x / absmax)) {
        found = x;
      }
    }
  }
  ASSERT_NE(found, 0.0f) << "no input separates the two roundings";
  std::vector<float> full(32, 0.0f);
  full[0] = absmax;
  full[1] = found;
  const compiler::Nf4Encoded ef = compiler::nf4_quantize(full.data(), full.size(), 32);
  EXPECT_EQ(ef.packed[0] & 0xF, compiler::nf4_code_index(found * reciprocal));
  std::vector<float> partial = {absmax, found};  // 2 < 32: a partial block
  const compiler::Nf4Encoded ep = compiler::nf4_quantize(partial.data(), partial.size(), 32);
  EXPECT_EQ(ep.packed[0] & 0xF, compiler::nf4_code_index(found / absmax));
  EXPECT_NE(ef.packed[0] & 0xF, ep.packed[0] & 0xF);
}

TEST(Nf4, DynamicMapMatchesQuantMdChecks) {
  const auto& t = compiler::bnb_dynamic_map();
  EXPECT_FLOAT_EQ(t[0], -0.99296874f);
  EXPECT_EQ(t[255], 1.0f);
  const float want[] = {-3.25e-06f, -5.5e-07f, 0.0f, 5.5e-07f, 3.25e-06f, 7.75e-06f};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(t[125 + i], want[i]) << 125 + i;
  for (int i = 0; i < 255; ++i) EXPECT_LT(t[i], t[i + 1]) << i;
  // The first points: i = 0 gives the midpoint of {0.1, 1} = 0.55, scaled by 1e-6.
  EXPECT_EQ(t[128], static_cast<float>(1e-6) * ((0.1f + 1.0f) / 2.0f));
}

TEST(Nf4, DoubleQuantizationHandWorked) {
  // absmax {1, 2, 3}: offset 2, centered {-1, 0, 1}, absmax2 1, normed {-1, 0, 1}.
  const compiler::Nf4DoubleQuant dq = compiler::nf4_double_quantize({1.0f, 2.0f, 3.0f}, 256);
  EXPECT_EQ(dq.offset, 2.0f);
  ASSERT_EQ(dq.absmax2.size(), 1u);
  EXPECT_EQ(dq.absmax2[0], 1.0f);
  ASSERT_EQ(dq.codes.size(), 3u);
  EXPECT_EQ(dq.codes[0], 0);    // -1 is nearest the first entry, -0.99296874
  EXPECT_EQ(dq.codes[1], 127);  // exactly 0
  EXPECT_EQ(dq.codes[2], 255);  // 1.0
  EXPECT_EQ(compiler::nf4_dq_absmax(dq, 0), dq.table[0] * 1.0f + 2.0f);
  EXPECT_EQ(compiler::nf4_dq_absmax(dq, 1), 2.0f);
  EXPECT_EQ(compiler::nf4_dq_absmax(dq, 2), 3.0f);
  // One absmax (a single-block weight): centered 0, absmax2 0, the code of 0; decodes exactly.
  const compiler::Nf4DoubleQuant one = compiler::nf4_double_quantize({5.0f}, 256);
  EXPECT_EQ(one.absmax2[0], 0.0f);
  EXPECT_EQ(one.codes[0], 127);
  EXPECT_EQ(compiler::nf4_dq_absmax(one, 0), 5.0f);
  // 300 values: two second-level blocks (256 + 44).
  std::vector<float> many(300);
  for (size_t i = 0; i < many.size(); ++i) many[i] = 0.5f + 0.01f * static_cast<float>(i % 37);
  const compiler::Nf4DoubleQuant two = compiler::nf4_double_quantize(many, 256);
  EXPECT_EQ(two.absmax2.size(), 2u);
  EXPECT_EQ(two.codes.size(), 300u);
  for (size_t i = 0; i < many.size(); ++i) {
    EXPECT_NEAR(compiler::nf4_dq_absmax(two, i), many[i], 0.01f * std::fabs(many[i])) << i;
  }
}

TEST(Nf4, TableIndexIsTheNearestEntryTiesLower) {
  const auto& t = compiler::bnb_dynamic_map();
  for (int i = 0; i < 255; ++i) {
    const float mid = (t[i] + t[i + 1]) / 2.0f;
    EXPECT_EQ(compiler::table_code_index(t, mid), i) << i;
    EXPECT_EQ(compiler::table_code_index(t, std::nextafter(mid, 2.0f)), i + 1) << i;
    EXPECT_EQ(compiler::table_code_index(t, t[i]), i) << i;
  }
  EXPECT_EQ(compiler::table_code_index(t, -1.0f), 0);
  EXPECT_EQ(compiler::table_code_index(t, 1.0f), 255);
}

// ------------------------------------------------------------------------------------- FP8

TEST(Fp8, E4M3HandWorked) {
  const Fp8Format f = Fp8Format::E4M3;
  EXPECT_EQ(compiler::fp8_encode(1.0f, f), 0x38);
  EXPECT_EQ(compiler::fp8_encode(-1.0f, f), 0xB8);
  EXPECT_EQ(compiler::fp8_encode(448.0f, f), 0x7E);
  EXPECT_EQ(compiler::fp8_encode(464.0f, f), 0x7E) << "saturates (would round to NaN's slot)";
  EXPECT_EQ(compiler::fp8_encode(1e9f, f), 0x7E);
  EXPECT_EQ(compiler::fp8_encode(std::numeric_limits<float>::infinity(), f), 0x7E);
  EXPECT_EQ(compiler::fp8_encode(-std::numeric_limits<float>::infinity(), f), 0xFE);
  EXPECT_EQ(compiler::fp8_encode(std::numeric_limits<float>::quiet_NaN(), f), 0x7F);
  EXPECT_EQ(compiler::fp8_encode(-std::numeric_limits<float>::quiet_NaN(), f), 0xFF);
  EXPECT_EQ(compiler::fp8_encode(0.0f, f), 0x00);
  EXPECT_EQ(compiler::fp8_encode(-0.0f, f), 0x80);
  EXPECT_EQ(compiler::fp8_encode(std::ldexp(1.0f, -9), f), 0x01) << "smallest subnormal";
  EXPECT_EQ(compiler::fp8_encode(std::ldexp(1.0f, -10), f), 0x00) << "tie to even (0)";
  EXPECT_EQ(compiler::fp8_encode(std::ldexp(1.5f, -10), f), 0x01);
  EXPECT_EQ(compiler::fp8_encode(std::ldexp(1.5f, -9), f), 0x02) << "tie 1|2 units -> 2";
  EXPECT_EQ(compiler::fp8_encode(std::ldexp(2.5f, -9), f), 0x02) << "tie 2|3 units -> 2";
  EXPECT_EQ(compiler::fp8_encode(std::ldexp(7.5f, -9), f), 0x08) << "rounds up to 2^-6";
  EXPECT_EQ(compiler::fp8_encode(std::ldexp(1.0f, -6), f), 0x08) << "smallest normal";
  EXPECT_EQ(compiler::fp8_encode(1.0625f, f), 0x38) << "tie 1.0|1.125 -> even 1.0";
  EXPECT_EQ(compiler::fp8_encode(1.1875f, f), 0x3A) << "tie 1.125|1.25 -> even 1.25";
  EXPECT_EQ(compiler::fp8_encode(1.07f, f), 0x39);
  EXPECT_EQ(compiler::fp8_encode(15.5f, f), 0x58) << "tie 15|16 -> 16 (carry into exponent)";
  EXPECT_EQ(compiler::fp8_encode(1e-30f, f), 0x00);
}

TEST(Fp8, E5M2HandWorked) {
  const Fp8Format f = Fp8Format::E5M2;
  EXPECT_EQ(compiler::fp8_encode(1.0f, f), 0x3C);
  EXPECT_EQ(compiler::fp8_encode(57344.0f, f), 0x7B);
  EXPECT_EQ(compiler::fp8_encode(61440.0f, f), 0x7B) << "saturates";
  EXPECT_EQ(compiler::fp8_encode(std::numeric_limits<float>::infinity(), f), 0x7B);
  EXPECT_EQ(compiler::fp8_encode(-std::numeric_limits<float>::infinity(), f), 0xFB);
  EXPECT_EQ(compiler::fp8_encode(std::numeric_limits<float>::quiet_NaN(), f), 0x7E);
  EXPECT_EQ(compiler::fp8_encode(std::ldexp(1.0f, -16), f), 0x01);
  EXPECT_EQ(compiler::fp8_encode(std::ldexp(1.0f, -17), f), 0x00) << "tie to even (0)";
  EXPECT_EQ(compiler::fp8_encode(std::ldexp(1.5f, -16), f), 0x02);
  EXPECT_EQ(compiler::fp8_encode(std::ldexp(1.0f, -14), f), 0x04) << "smallest normal";
  EXPECT_EQ(compiler::fp8_encode(1.125f, f), 0x3C) << "tie 1.0|1.25 -> even 1.0";
  EXPECT_EQ(compiler::fp8_encode(1.375f, f), 0x3E) << "tie 1.25|1.5 -> even 1.5";
}

TEST(Fp8, DecodeIsExactAndRoundTrips) {
  EXPECT_TRUE(std::isnan(quant::fp8_e4m3_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(quant::fp8_e4m3_to_float(0xFF)));
  EXPECT_EQ(quant::fp8_e4m3_to_float(0x7E), 448.0f);
  EXPECT_EQ(quant::fp8_e4m3_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(quant::fp8_e4m3_to_float(0x07), 7.0f * std::ldexp(1.0f, -9));
  EXPECT_EQ(quant::fp8_e4m3_to_float(0x08), std::ldexp(1.0f, -6));
  EXPECT_EQ(quant::fp8_e5m2_to_float(0x7C), std::numeric_limits<float>::infinity());
  EXPECT_EQ(quant::fp8_e5m2_to_float(0xFC), -std::numeric_limits<float>::infinity());
  for (uint8_t b : {0x7D, 0x7E, 0x7F, 0xFD}) EXPECT_TRUE(std::isnan(quant::fp8_e5m2_to_float(b)));
  EXPECT_EQ(quant::fp8_e5m2_to_float(0x7B), 57344.0f);
  EXPECT_EQ(quant::fp8_e5m2_to_float(0x03), 3.0f * std::ldexp(1.0f, -16));
  EXPECT_TRUE(std::signbit(quant::fp8_e4m3_to_float(0x80)));
  for (Fp8Format f : {Fp8Format::E4M3, Fp8Format::E5M2}) {
    for (int b = 0; b < 256; ++b) {
      const float v = compiler::fp8_decode(static_cast<uint8_t>(b), f);
      if (std::isnan(v) || std::isinf(v)) continue;
      EXPECT_EQ(compiler::fp8_encode(v, f), b) << "byte " << b;
      // Values between two neighbours round to one of them, never elsewhere.
    }
  }
}

TEST(Fp8, ScalesPerTensorPerChannelAndBlocks) {
  // 3 x 4 weight; row 1 all zero (scale 1.0).
  const std::vector<float> x = {1, -2, 3, -4, 0, 0, 0, 0, 448, 0.5f, -896, 1};
  auto pc = compiler::fp8_quantize(x.data(), 3, 4, Fp8Format::E4M3, Fp8Granularity::PerChannel);
  ASSERT_EQ(pc.scales.size(), 3u);
  EXPECT_EQ(pc.scales[0], 4.0f / 448.0f);
  EXPECT_EQ(pc.scales[1], 1.0f);
  EXPECT_EQ(pc.scales[2], 896.0f / 448.0f);
  EXPECT_EQ(pc.codes[3], compiler::fp8_encode(-4.0f / (4.0f / 448.0f), Fp8Format::E4M3));
  EXPECT_EQ(pc.codes[3], 0xFE) << "-amax encodes to -448";
  EXPECT_EQ(pc.codes[10], 0xFE);
  EXPECT_EQ(pc.codes[4], 0x00);
  auto pt = compiler::fp8_quantize(x.data(), 3, 4, Fp8Format::E5M2, Fp8Granularity::PerTensor);
  ASSERT_EQ(pt.scales.size(), 1u);
  EXPECT_EQ(pt.scales[0], 896.0f / 57344.0f);
  auto bl = compiler::fp8_quantize(x.data(), 3, 4, Fp8Format::E4M3, Fp8Granularity::Block2D, 2, 3);
  ASSERT_EQ(bl.scales.size(), 4u);  // ceil(3/2) x ceil(4/3)
  EXPECT_EQ(bl.scales[0], 3.0f / 448.0f);   // rows 0-1, cols 0-2
  EXPECT_EQ(bl.scales[1], 4.0f / 448.0f);   // rows 0-1, col 3
  EXPECT_EQ(bl.scales[2], 896.0f / 448.0f); // row 2, cols 0-2
  EXPECT_EQ(bl.scales[3], 1.0f / 448.0f);   // row 2, col 3
}

// ------------------------------------------------------------------------- dequantization

TensorView view(DType dtype, const std::vector<int64_t>& sizes, const void* data,
                const QuantView* q) {
  TensorView t;
  t.dtype = dtype;
  t.rank = static_cast<uint32_t>(sizes.size());
  t.sizes = sizes.data();
  t.data = const_cast<void*>(data);
  t.quant = q;
  return t;
}

TEST(Dequantize, Nf4AnyRangeAcrossBlocksAndNibbles) {
  // 3 x 23 = 69 elements, blocks of 32 (last partial).
  std::vector<float> x(69);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i)) * (1 + i / 32);
  const compiler::Nf4Encoded e = compiler::nf4_quantize(x.data(), x.size(), 32);
  QuantView q;
  q.scheme = QuantView::Scheme::NF4;
  q.block_size = 32;
  q.absmax = e.absmax.data();
  const std::vector<int64_t> sizes = {3, 23};
  const TensorView t = view(DType::NF4, sizes, e.packed.data(), &q);
  std::vector<float> all(69);
  quant::dequantize(t, 0, 69, all.data());
  for (size_t i = 0; i < all.size(); ++i) {
    const uint8_t byte = e.packed[i / 2];
    const uint8_t code = i % 2 ? byte & 0xF : byte >> 4;
    EXPECT_EQ(all[i], quant::kNf4Code[code] * e.absmax[i / 32]) << i;
  }
  // Odd starts and lengths give the same values.
  for (uint64_t begin : {1u, 22u, 23u, 31u, 63u}) {
    std::vector<float> part(69 - begin);
    quant::dequantize(t, begin, part.size(), part.data());
    for (size_t i = 0; i < part.size(); ++i) EXPECT_EQ(part[i], all[begin + i]);
  }
}

TEST(Dequantize, Nf4DoubleQuantAbsmax) {
  std::vector<float> x(64 * 5);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.11f * static_cast<float>(i)) * (1 + i % 7);
  const compiler::Nf4Encoded e = compiler::nf4_quantize(x.data(), x.size(), 64);
  const compiler::Nf4DoubleQuant dq = compiler::nf4_double_quantize(e.absmax, 256);
  QuantView q;
  q.scheme = QuantView::Scheme::NF4DoubleQuant;
  q.block_size = 64;
  q.dq_codes = dq.codes.data();
  q.dq_absmax2 = dq.absmax2.data();
  q.dq_table = dq.table.data();
  q.dq_offset = dq.offset;
  q.dq_block_size = 256;
  const std::vector<int64_t> sizes = {5, 64};
  std::vector<float> out(x.size());
  quant::dequantize(view(DType::NF4, sizes, e.packed.data(), &q), 0, x.size(), out.data());
  for (size_t i = 0; i < x.size(); ++i) {
    const uint8_t byte = e.packed[i / 2];
    const uint8_t code = i % 2 ? byte & 0xF : byte >> 4;
    EXPECT_EQ(out[i], quant::kNf4Code[code] * compiler::nf4_dq_absmax(dq, i / 64)) << i;
  }
}

TEST(Dequantize, Fp8EveryGranularity) {
  const int64_t rows = 5, cols = 7;
  std::vector<float> x(rows * cols);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(1.3f * static_cast<float>(i)) * (1 + i);
  const std::vector<int64_t> sizes = {rows, cols};
  for (Fp8Format f : {Fp8Format::E4M3, Fp8Format::E5M2}) {
    for (Fp8Granularity g :
         {Fp8Granularity::PerTensor, Fp8Granularity::PerChannel, Fp8Granularity::Block2D}) {
      const auto enc = compiler::fp8_quantize(x.data(), rows, cols, f, g, 2, 3);
      QuantView q;
      q.scheme = QuantView::Scheme::FP8;
      q.granularity = static_cast<QuantView::Granularity>(g);
      q.block_rows = 2;
      q.block_cols = 3;
      q.scale = enc.scales.data();
      const TensorView t = view(f == Fp8Format::E4M3 ? DType::FP8E4M3 : DType::FP8E5M2, sizes,
                                enc.codes.data(), &q);
      for (uint64_t begin : {0u, 4u, 9u}) {
        std::vector<float> out(x.size() - begin);
        quant::dequantize(t, begin, out.size(), out.data());
        for (size_t k = 0; k < out.size(); ++k) {
          const size_t i = begin + k;
          const size_t r = i / cols, c = i % cols;
          size_t s = 0;
          if (g == Fp8Granularity::PerChannel) s = r;
          if (g == Fp8Granularity::Block2D) s = (r / 2) * 3 + c / 3;
          EXPECT_EQ(out[k], compiler::fp8_decode(enc.codes[i], f) * enc.scales[s])
              << "element " << i << " granularity " << static_cast<int>(g);
          // And the round trip is close: within half an fp8 step of the scaled value.
          EXPECT_NEAR(out[k], x[i], std::fabs(x[i]) * (f == Fp8Format::E4M3 ? 0.0625 : 0.125) +
                                        enc.scales[s] * 0.01);
        }
      }
    }
  }
}

}  // namespace
}  // namespace tern
