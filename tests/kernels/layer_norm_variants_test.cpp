// tern::layer_norm in every instruction-set variant this machine runs, against a naive
// double-precision loop: row lengths around the kernel's lane and block sizes, with and without
// weight and bias, and in place (out is x).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "runtime/kernels/util/simd_dispatch.h"
#include "tests/kernels/kernel_test_util.h"

namespace tern {
namespace testing {
namespace {

using portable::SimdLevel;

std::vector<SimdLevel> variants() {
  std::vector<SimdLevel> out = {SimdLevel::Baseline};
  if (portable::simd_level_supported() >= SimdLevel::Avx2) out.push_back(SimdLevel::Avx2);
  if (portable::simd_level_supported() >= SimdLevel::Avx512) out.push_back(SimdLevel::Avx512);
  return out;
}

class LayerNormVariantsTest : public KernelTest {
 protected:
  void TearDown() override { portable::simd_level_cap() = SimdLevel::Avx512; }
};

// (x - mean) / sqrt(var + eps) * w + b per row of `cols`, in double.
std::vector<double> naive(const std::vector<float>& x, int64_t cols, const float* w, const float* b,
                          double eps) {
  std::vector<double> out(x.size());
  const int64_t rows = static_cast<int64_t>(x.size()) / cols;
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < cols; ++i) mean += x[r * cols + i];
    mean /= static_cast<double>(cols);
    for (int64_t i = 0; i < cols; ++i) {
      var += (x[r * cols + i] - mean) * (x[r * cols + i] - mean);
    }
    var /= static_cast<double>(cols);
    for (int64_t i = 0; i < cols; ++i) {
      double y = (x[r * cols + i] - mean) / std::sqrt(var + eps);
      if (w != nullptr) y *= w[i];
      if (b != nullptr) y += b[i];
      out[r * cols + i] = y;
    }
  }
  return out;
}

TEST_F(LayerNormVariantsTest, MatchesNaiveInEveryVariant) {
  uint32_t seed = 7;
  for (SimdLevel level : variants()) {
    portable::simd_level_cap() = level;
    for (int64_t cols : {1, 7, 8, 16, 17, 40, 1000}) {
      for (int affine = 0; affine < 4; ++affine) {
        const bool has_w = (affine & 1) != 0, has_b = (affine & 2) != 0;
        auto x = random_tensor<float>({3, cols}, seed++);
        for (float& v : x->data) v = v * 3.0f + 5.0f;  // an offset the mean must remove
        auto w = random_tensor<float>({cols}, seed++);
        auto b = random_tensor<float>({cols}, seed++);
        const auto want = naive(x->data, cols, has_w ? w->data.data() : nullptr,
                                has_b ? b->data.data() : nullptr, 1e-5);
        std::vector<int64_t> norm = {cols};
        EValue shape = EValue::from_int_list(Span<const int64_t>(norm.data(), 1));
        EValue none;
        EValue eps = EValue::from_double(1e-5);
        for (int in_place = 0; in_place < 2; ++in_place) {
          auto out = zeros<float>({3, cols});
          auto xin = random_tensor<float>({3, cols}, 0);
          std::copy(x->data.begin(), x->data.end(), xin->data.begin());  // keeps the view
          EValue* dst = in_place ? &xin->value : &out->value;
          ASSERT_EQ(call_kernel("tern::layer_norm", {&xin->value, &shape, has_w ? &w->value : &none,
                                                     has_b ? &b->value : &none, &eps, dst}),
                    Error::Ok)
              << last_error_message();
          const std::vector<float>& got = in_place ? xin->data : out->data;
          for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_NEAR(got[i], want[i], 2e-5)
                << "variant " << static_cast<int>(level) << " cols " << cols << " affine " << affine
                << (in_place ? " in place" : "") << " element " << i;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace tern
