// The weight recipes in parts (weights/weight_recipe.h recipe_parts / run_recipe_part) and run
// over a pool (runtime/recipe_jobs.h), as the cpu backend's first prepare packs a model's
// weights on every thread. Expected floats come from the packed layouts as cpu_blob_format.h
// and kernels/packed_gemm.h describe them, worked out here element by element (and, for
// Winograd, G g Gᵀ computed here in double), never from a packing routine.
#include <gtest/gtest.h>
#include <pthreadpool.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "backends/cpu/runtime/recipe_jobs.h"
#include "backends/cpu/weights/weight_recipe.h"

namespace tern {
namespace {

using cpu::BlobRecipe;
using cpu::RecipeOp;
using cpu::RecipeShape;
using cpu::RecipeSource;

/// Deterministic, distinct-ish floats (no two neighbours equal, none zero).
std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i * 7919) % 1009 + 1);
  return v;
}

BlobRecipe recipe(RecipeOp op, std::initializer_list<uint32_t> params, uint32_t flags = 0) {
  BlobRecipe r;
  std::memset(&r, 0, sizeof(r));
  r.op = static_cast<uint32_t>(op);
  r.flags = flags;
  for (uint32_t& s : r.sources) s = cpu::kNoValue;
  r.sources[0] = 0;
  r.sources[1] = 1;
  uint32_t i = 0;
  for (uint32_t p : params) r.params[i++] = p;
  r.scale = 1.0;
  r.shift = 0.0;
  return r;
}

RecipeShape shape_of(const BlobRecipe& r) {
  RecipeShape s;
  const char* why = "";
  EXPECT_TRUE(cpu::recipe_shape(r, 0, &s, &why)) << why;
  return s;
}

/// Runs every part of `r`, last part first, into a buffer poisoned with NaN (a part writing
/// outside its floats, or a float no part writes, shows against the expected layout).
std::vector<float> run_parts_backwards(const BlobRecipe& r, const float* w, const float* bias,
                                       uint64_t* parts) {
  const RecipeShape s = shape_of(r);
  RecipeSource src[cpu::kRecipeSources];
  src[0].data = w;
  src[1].data = bias;
  std::vector<float> out(s.out_floats, std::nanf(""));
  *parts = cpu::recipe_parts(r);
  for (uint64_t p = *parts; p-- > 0;) cpu::run_recipe_part(r, s, src, out.data(), p);
  return out;
}

// PackFc: ceil(N/16) panels of [16 bias][K rows of 16 columns]; column n of the weight is lane
// n % 16 of panel n / 16, padded columns zero.
TEST(CpuRecipeParts, PackFcPartsAreTheLayoutInAnyOrder) {
  const uint32_t n = 300, k = 1000;  // 19 panels of 16016 floats: 16 a part, so 2 parts
  const std::vector<float> w = ramp(size_t{n} * k, 1e-3f), bias = ramp(n, -0.5f);
  for (const bool fold : {false, true}) {
    SCOPED_TRACE(fold ? "hardsigmoid folded" : "plain");
    const BlobRecipe r =
        recipe(RecipeOp::PackFc, {n, k}, fold ? cpu::kRecipeFoldHardsigmoid : 0u);
    uint64_t parts = 0;
    const std::vector<float> out = run_parts_backwards(r, w.data(), bias.data(), &parts);
    EXPECT_EQ(parts, 2u);
    ASSERT_EQ(out.size(), size_t{19} * 16 * (k + 1));
    size_t bad = 0;
    for (uint32_t col = 0; col < 19 * 16; ++col) {
      const float* panel = out.data() + size_t{col / 16} * 16 * (k + 1);
      const uint32_t lane = col % 16;
      // The hardsigmoid's 1/2 goes into the real columns' bias slots; padding stays zero.
      const float b = col < n ? bias[col] : 0.0f;
      const float want_b = fold && col < n ? static_cast<float>(b * (1.0 / 6.0)) + 0.5f : b;
      bad += !(panel[lane] == want_b);
      for (uint32_t kk = 0; kk < k; ++kk) {
        const float x = col < n ? w[size_t{col} * k + kk] : 0.0f;
        const float want = fold ? static_cast<float>(x * (1.0 / 6.0)) : x;
        bad += !(panel[16 + size_t{kk} * 16 + lane] == want);
      }
    }
    EXPECT_EQ(bad, 0u);
  }
}

// PackConv with 2 groups: each group's O/G filters are a packed [O/G, KH*KW*C] matrix of their
// own, K row (kh * KW + kw) * C + c.
TEST(CpuRecipeParts, PackConvSplitsEachGroupByPanels) {
  const uint32_t o = 192, c = 1000, kh = 3, kw = 3, groups = 2;  // K = 9000: a panel a part
  const uint32_t og = o / groups, k = c * kh * kw;
  const std::vector<float> w = ramp(size_t{o} * k, 1e-3f), bias = ramp(o, 0.25f);
  const BlobRecipe r = recipe(RecipeOp::PackConv, {o, c, kh, kw, groups});
  uint64_t parts = 0;
  const std::vector<float> out = run_parts_backwards(r, w.data(), bias.data(), &parts);
  EXPECT_EQ(parts, 2u * 6u);
  const size_t matrix = size_t{og / 16} * 16 * (k + 1);
  ASSERT_EQ(out.size(), groups * matrix);
  size_t bad = 0;
  for (uint32_t g = 0; g < groups; ++g) {
    for (uint32_t col = 0; col < og; ++col) {
      const uint32_t ch_out = g * og + col;
      const float* panel = out.data() + g * matrix + size_t{col / 16} * 16 * (k + 1);
      const uint32_t lane = col % 16;
      bad += !(panel[lane] == bias[ch_out]);
      for (uint32_t ci = 0; ci < c; ++ci) {
        for (uint32_t y = 0; y < kh; ++y) {
          for (uint32_t x = 0; x < kw; ++x) {
            const float want = w[((size_t{ch_out} * c + ci) * kh + y) * kw + x];
            bad += !(panel[16 + (size_t{(y * kw + x)} * c + ci) * 16 + lane] == want);
          }
        }
      }
    }
  }
  EXPECT_EQ(bad, 0u);
}

/// Winograd F(2x2, 3x3)'s G.
constexpr double kG[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};

/// U = G g Gᵀ at position (a, b) for the 3x3 filter g.
double winograd_u(const float* g, int a, int b) {
  double u = 0;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) u += kG[a][i] * static_cast<double>(g[i * 3 + j]) * kG[b][j];
  }
  return u;
}

// Run together over a two-thread pool: a Winograd weight (16 matrices, each a packed [O, C]
// of one position of G g Gᵀ, the bias once in matrix 5's slots), a PackFc and an Affine — each
// value exactly its layout, whatever thread made which part.
TEST(CpuRecipeParts, JobsOverAPoolMakeEveryValue) {
  const uint32_t wo = 40, wc = 600;  // 3 panels of 16 * 601 * 16 floats: a part each
  const std::vector<float> ww = ramp(size_t{wo} * wc * 9, 1e-3f), wb = ramp(wo, 0.125f);
  const BlobRecipe rw = recipe(RecipeOp::PackWinograd, {wo, wc, cpu::kWinogradTileF2x2});
  const uint32_t fn = 70, fk = 5000;  // 5 panels of 80016 floats: 3 a part, 2 parts
  const std::vector<float> fw = ramp(size_t{fn} * fk, 2e-3f);
  const BlobRecipe rf = recipe(RecipeOp::PackFc, {fn, fk});
  BlobRecipe ra = recipe(RecipeOp::Affine, {});
  ra.sources[1] = cpu::kNoValue;
  ra.scale = 2.0;
  ra.shift = -1.0;
  const std::vector<float> ax = ramp(1000, 0.01f);

  const BlobRecipe* recipes[3] = {&rw, &rf, &ra};
  const float* weights[3] = {ww.data(), fw.data(), ax.data()};
  const float* biases[3] = {wb.data(), nullptr, nullptr};
  std::vector<float> outs[3];
  cpu::RecipeJob jobs[3];
  for (int j = 0; j < 3; ++j) {
    const char* why = "";
    ASSERT_TRUE(cpu::recipe_shape(*recipes[j], j == 2 ? 1000 : 0, &jobs[j].shape, &why)) << why;
    jobs[j].recipe = recipes[j];
    jobs[j].sources[0].data = weights[j];
    jobs[j].sources[1].data = biases[j];
    outs[j].assign(jobs[j].shape.out_floats, std::nanf(""));
    jobs[j].out = outs[j].data();
  }
  EXPECT_EQ(cpu::recipe_parts(rw), 3u);
  EXPECT_EQ(cpu::recipe_parts(rf), 2u);
  pthreadpool_t pool = pthreadpool_create(2);
  ASSERT_NE(pool, nullptr);
  cpu::run_recipe_jobs(jobs, 3, pool);
  pthreadpool_destroy(pool);

  size_t bad = 0;
  const size_t matrix = size_t{3} * 16 * (wc + 1);
  ASSERT_EQ(outs[0].size(), 16 * matrix);
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 4; ++b) {
      const float* m = outs[0].data() + (a * 4 + b) * matrix;
      for (uint32_t col = 0; col < 48; ++col) {
        const float* panel = m + size_t{col / 16} * 16 * (wc + 1);
        const uint32_t lane = col % 16;
        const float want_b = (a == 1 && b == 1 && col < wo) ? wb[col] : 0.0f;
        bad += !(panel[lane] == want_b);
        for (uint32_t ci = 0; ci < wc; ++ci) {
          const float want =
              col < wo ? static_cast<float>(winograd_u(&ww[(size_t{col} * wc + ci) * 9], a, b))
                       : 0.0f;
          bad += !(panel[16 + size_t{ci} * 16 + lane] == want);
        }
      }
    }
  }
  EXPECT_EQ(bad, 0u) << "winograd";
  bad = 0;
  for (uint32_t col = 0; col < 80; ++col) {
    const float* panel = outs[1].data() + size_t{col / 16} * 16 * (fk + 1);
    bad += !(panel[col % 16] == 0.0f);  // no bias: zeros
    for (uint32_t kk = 0; kk < fk; ++kk) {
      const float want = col < fn ? fw[size_t{col} * fk + kk] : 0.0f;
      bad += !(panel[16 + size_t{kk} * 16 + col % 16] == want);
    }
  }
  EXPECT_EQ(bad, 0u) << "pack_fc";
  bad = 0;
  for (size_t i = 0; i < ax.size(); ++i) {
    bad += !(outs[2][i] == static_cast<float>(static_cast<double>(ax[i]) * 2.0 - 1.0));
  }
  EXPECT_EQ(bad, 0u) << "affine";
}

}  // namespace
}  // namespace tern
