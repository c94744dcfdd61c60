// The cpu delegate's edge conversions (backends/cpu/runtime/layout_transpose.h) against the index
// formula, for one channel and RGB (pixel by pixel), 2 (plain loops), 4 and more (4x4 register
// transposes, with channels and pixels past the last multiple of 4: LR-ASPP's 21 classes), one
// image and several, pixel counts that do not divide into blocks, with no pool and a 2-thread
// pool (blocks starting at any pixel).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/cpu/runtime/layout_transpose.h"
#include "tests/backends/cpu/kernel_test_util.h"

namespace tern::cpu {
namespace {

struct Shape {
  uint64_t n, c, hw;
};

TEST(CpuLayoutTranspose, MatchesTheIndexFormula) {
  kernel_test::Pool pool2(2);
  for (const Shape& s : {Shape{1, 3, 224 * 224}, Shape{2, 3, 17 * 19}, Shape{1, 1, 5000},
                         Shape{1, 8, 9000}, Shape{2, 64, 56 * 56 + 5}, Shape{1, 1000, 1},
                         Shape{1, 17, 33}, Shape{1, 21, 64 * 64 + 3}, Shape{2, 4, 1001},
                         Shape{1, 5, 4099}, Shape{1, 2, 77}, Shape{3, 12, 2731}}) {
    for (pthreadpool_t pool : {static_cast<pthreadpool_t>(nullptr), pool2.pool}) {
      const uint64_t total = s.n * s.c * s.hw;
      const std::vector<float> nchw = kernel_test::random_floats(total, 7);
      std::vector<float> nhwc(total + 1, -7.0f), back(total + 1, -7.0f);
      nchw_to_nhwc(nchw.data(), nhwc.data(), s.n, s.c, s.hw, pool);
      bool ok = true;
      for (uint64_t b = 0; b < s.n && ok; ++b) {
        for (uint64_t ch = 0; ch < s.c && ok; ++ch) {
          for (uint64_t p = 0; p < s.hw && ok; ++p) {
            ok = nhwc[(b * s.hw + p) * s.c + ch] == nchw[(b * s.c + ch) * s.hw + p];
          }
        }
      }
      EXPECT_TRUE(ok) << "to NHWC: n " << s.n << " c " << s.c << " hw " << s.hw;
      EXPECT_EQ(nhwc[total], -7.0f);  // nothing written past the end
      nhwc_to_nchw(nhwc.data(), back.data(), s.n, s.c, s.hw, pool);
      EXPECT_TRUE(std::equal(nchw.begin(), nchw.end(), back.begin()))
          << "round trip: n " << s.n << " c " << s.c << " hw " << s.hw;
      EXPECT_EQ(back[total], -7.0f);
    }
  }
}

}  // namespace
}  // namespace tern::cpu
