// The shared GEMM (runtime/kernels/portable/gemm.h) against a naive double-precision triple
// loop: odd shapes around every tile and block edge, both transposes, padded leading
// dimensions, alpha/beta (beta == 0 must ignore NaN in C), generic strides, and every
// instruction-set variant this CPU runs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "runtime/kernels/portable/gemm.h"

namespace tern {
namespace portable {
namespace {

struct Shape {
  int64_t m, n, k;
};

std::vector<float> random_vector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

class GemmTest : public ::testing::TestWithParam<GemmVariant> {
 protected:
  void SetUp() override {
    if (!gemm_select_variant(GetParam())) GTEST_SKIP() << "variant not available here";
  }
  void TearDown() override { gemm_select_variant(GemmVariant::Auto); }

  // Runs gemm_f32 and compares against the naive loop; lda/ldb/ldc get `pad` extra columns.
  void check(const Shape& s, bool ta, bool tb, float alpha, float beta, int64_t pad,
             uint32_t seed) {
    const int64_t a_rows = ta ? s.k : s.m, a_cols = ta ? s.m : s.k;
    const int64_t b_rows = tb ? s.n : s.k, b_cols = tb ? s.k : s.n;
    const int64_t lda = a_cols + pad, ldb = b_cols + pad, ldc = s.n + pad;
    std::vector<float> a = random_vector(static_cast<size_t>(a_rows * lda), seed);
    std::vector<float> b = random_vector(static_cast<size_t>(b_rows * ldb), seed + 1);
    std::vector<float> c = random_vector(static_cast<size_t>(s.m * ldc), seed + 2);
    if (beta == 0.0f) {
      for (float& x : c) x = std::numeric_limits<float>::quiet_NaN();
    }
    const std::vector<float> c0 = c;
    gemm_f32(ta, tb, s.m, s.n, s.k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = 0; j < ldc; ++j) {
        const size_t at = static_cast<size_t>(i * ldc + j);
        if (j >= s.n) {  // padding columns of C are never touched
          if (beta == 0.0f) {
            ASSERT_TRUE(std::isnan(c[at])) << "padding at " << i << "," << j << " written";
          } else {
            ASSERT_EQ(c[at], c0[at]) << "padding at " << i << "," << j << " written";
          }
          continue;
        }
        double sum = 0.0, mag = 0.0;
        for (int64_t p = 0; p < s.k; ++p) {
          const double av = ta ? a[static_cast<size_t>(p * lda + i)] : a[static_cast<size_t>(i * lda + p)];
          const double bv = tb ? b[static_cast<size_t>(j * ldb + p)] : b[static_cast<size_t>(p * ldb + j)];
          sum += av * bv;
          mag += std::fabs(av * bv);
        }
        double want = alpha * sum;
        if (beta != 0.0f) want += static_cast<double>(beta) * c0[at];
        const double tol = 1e-5 * (std::fabs(alpha) * mag + std::fabs(beta) + 1.0);
        ASSERT_NEAR(c[at], want, tol) << "m=" << s.m << " n=" << s.n << " k=" << s.k
                                      << " ta=" << ta << " tb=" << tb << " at " << i << "," << j;
      }
    }
  }
};

TEST_P(GemmTest, MatchesNaiveLoopOverOddShapes) {
  const Shape shapes[] = {
      {1, 1, 1},    {1, 1, 7},     {1, 17, 5},    {1, 300, 260},  {300, 1, 260}, {2, 3, 1},
      {3, 5, 2},    {5, 33, 7},    {7, 16, 16},   {13, 15, 17},   {4, 16, 256},  {6, 32, 257},
      {8, 31, 129}, {9, 65, 300},  {17, 9, 33},   {33, 1, 20},    {25, 40, 3},   {97, 70, 13},
      {100, 100, 100}, {130, 47, 515}, {191, 3, 64}, {2, 200, 130}, {15, 2, 600}, {64, 64, 0}};
  uint32_t seed = 1;
  for (const Shape& s : shapes) {
    for (int t = 0; t < 4; ++t) {
      check(s, (t & 1) != 0, (t & 2) != 0, 1.0f, 0.0f, 0, seed++);
    }
  }
}

TEST_P(GemmTest, AlphaBetaAndLeadingDimensions) {
  const Shape shapes[] = {{5, 7, 9}, {37, 41, 43}, {1, 50, 70}, {70, 1, 50}, {12, 48, 300}};
  const float scalars[][2] = {{1.0f, 1.0f}, {0.5f, -2.0f}, {-1.5f, 0.0f}, {0.0f, 3.0f},
                              {2.0f, 0.25f}};
  uint32_t seed = 100;
  for (const Shape& s : shapes) {
    for (const auto& ab : scalars) {
      for (int t = 0; t < 4; ++t) {
        check(s, (t & 1) != 0, (t & 2) != 0, ab[0], ab[1], 3, seed++);
      }
    }
  }
}

TEST_P(GemmTest, KZeroScalesC) {
  std::vector<float> c = {1.0f, 2.0f, 3.0f, 4.0f};
  gemm_f32(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.5f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f}));
  std::vector<float> d(4, std::numeric_limits<float>::quiet_NaN());
  gemm_f32(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.0f, d.data(), 2);
  EXPECT_EQ(d, (std::vector<float>(4, 0.0f)));
}

TEST_P(GemmTest, GenericStridesWriteATransposedC) {
  // C^T stored column-major: rs_c = 1, cs_c = m.
  const int64_t m = 11, n = 37, k = 19;
  std::vector<float> a = random_vector(m * k, 7), b = random_vector(k * n, 8);
  std::vector<float> c(m * n, -9.0f);
  gemm_f32_strided(m, n, k, 1.0f, a.data(), k, 1, b.data(), n, 1, 0.0f, c.data(), 1, m);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0.0;
      for (int64_t p = 0; p < k; ++p) want += static_cast<double>(a[i * k + p]) * b[p * n + j];
      ASSERT_NEAR(c[j * m + i], want, 1e-4) << i << "," << j;
    }
  }
}

std::string variant_name(const ::testing::TestParamInfo<GemmVariant>& info) {
  switch (info.param) {
    case GemmVariant::Auto: return "Auto";
    case GemmVariant::Baseline: return "Baseline";
    case GemmVariant::Avx2: return "Avx2";
    case GemmVariant::Avx512: return "Avx512";
  }
  return "Unknown";
}

INSTANTIATE_TEST_SUITE_P(Variants, GemmTest,
                         ::testing::Values(GemmVariant::Auto, GemmVariant::Baseline,
                                           GemmVariant::Avx2, GemmVariant::Avx512),
                         variant_name);

}  // namespace
}  // namespace portable
}  // namespace tern
