// tern's bilinear resize from a channels-last image to channel planes
// (backends/cpu/kernels/resize_planes.h) against PyTorch's definition written here (ATen's
// area-pixel source index in f32: src = (o + 0.5) · in / out − 0.5 clamped at 0, or o · (in −
// 1) / (out − 1) with align_corners; the two nearest rows and columns weighted by the distance,
// in double):
// upsampling by 8 (LR-ASPP's logits), non-integer ratios, shrinking, sizes of 1, align_corners
// both ways, a batch of two, no pool and a pool of two; y is exactly sized and ends at a
// PROT_NONE page, x is read-only; no heap allocation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/kernels/resize_planes.h"
#include "tests/backends/cpu/kernel_test_util.h"
#include "tests/support/allocation_counter.h"

namespace tern::cpu {
namespace {

using kernel_test::GuardedBuffer;
using kernel_test::Pool;
using kernel_test::random_floats;

struct Case {
  int64_t n, h, w, c, oh, ow;
  bool align;
};

/// Source index and weight of output index o along a dim of `in` -> `out`: the index in f32
/// as ATen computes it for float tensors (area_pixel_compute_scale / _source_index), the
/// interpolation itself then in double.
void source(int64_t o, int64_t in, int64_t out, bool align, int64_t* i0, int64_t* i1,
            double* lambda) {
  float real = 0.0f;
  if (align) {
    const float scale = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
    real = scale * static_cast<float>(o);
  } else {
    const float scale = static_cast<float>(in) / static_cast<float>(out);
    real = scale * (static_cast<float>(o) + 0.5f) - 0.5f;
  }
  if (in == out) real = static_cast<float>(o);
  if (real < 0.0f) real = 0.0f;
  *i0 = static_cast<int64_t>(std::floor(real));
  if (*i0 > in - 1) *i0 = in - 1;
  *i1 = *i0 < in - 1 ? *i0 + 1 : *i0;
  *lambda = static_cast<double>(real) - static_cast<double>(*i0);
}

TEST(CpuResizePlanes, MatchesTheDefinition) {
  const Case cases[] = {
      {1, 64, 64, 21, 512, 512, false},  // LR-ASPP's logits to the input size
      {2, 5, 7, 3, 13, 9, false},
      {1, 9, 11, 8, 4, 6, false},  // shrink
      {1, 1, 1, 5, 3, 4, false},
      {1, 6, 5, 4, 6, 5, false},  // same size: a copy into planes
      {2, 4, 7, 5, 9, 13, true},
      {1, 3, 3, 2, 1, 1, true},
      {1, 7, 300, 3, 14, 601, false},  // more columns than one chunk of taps
  };
  Pool two(2);
  for (const Case& cs : cases) {
    const size_t xn = static_cast<size_t>(cs.n * cs.h * cs.w * cs.c);
    const size_t yn = static_cast<size_t>(cs.n * cs.c * cs.oh * cs.ow);
    GuardedBuffer x(xn * 4), y(yn * 4);
    ASSERT_NE(x.data(), nullptr);
    ASSERT_NE(y.data(), nullptr);
    const std::vector<float> xs = random_floats(static_cast<int64_t>(xn), 3);
    std::memcpy(x.data(), xs.data(), xn * 4);
    ASSERT_TRUE(x.make_read_only());
    for (pthreadpool_t pool : {static_cast<pthreadpool_t>(nullptr), two.pool}) {
      const std::string what = std::to_string(cs.h) + "x" + std::to_string(cs.w) + " -> " +
                               std::to_string(cs.oh) + "x" + std::to_string(cs.ow) +
                               (cs.align ? " aligned" : "") + (pool ? " pool2" : "");
      std::fill(y.data(), y.data() + yn, -1e30f);
      ResizePlanesProblem p;
      p.batch = cs.n;
      p.in_h = cs.h;
      p.in_w = cs.w;
      p.channels = cs.c;
      p.out_h = cs.oh;
      p.out_w = cs.ow;
      p.align_corners = cs.align;
      p.x = x.data();
      p.y = y.data();
      long allocations = 0;
      {
        testing_support::ArmedCounter counter;
        resize_bilinear_to_planes(p, pool);
        allocations = counter.count();
      }
      if (TERN_ZERO_ALLOC_HOOKS && pool == nullptr) EXPECT_EQ(allocations, 0) << what;
      int bad = 0;
      for (int64_t n = 0; n < cs.n; ++n) {
        for (int64_t ch = 0; ch < cs.c; ++ch) {
          for (int64_t i = 0; i < cs.oh; ++i) {
            int64_t r0, r1;
            double ly;
            source(i, cs.h, cs.oh, cs.align, &r0, &r1, &ly);
            for (int64_t j = 0; j < cs.ow; ++j) {
              int64_t c0, c1;
              double lx;
              source(j, cs.w, cs.ow, cs.align, &c0, &c1, &lx);
              auto at = [&](int64_t r, int64_t col) {
                return static_cast<double>(xs[static_cast<size_t>(((n * cs.h + r) * cs.w + col) *
                                                                      cs.c + ch)]);
              };
              const double want = (1 - ly) * ((1 - lx) * at(r0, c0) + lx * at(r0, c1)) +
                                  ly * ((1 - lx) * at(r1, c0) + lx * at(r1, c1));
              const double got =
                  y.data()[static_cast<size_t>(((n * cs.c + ch) * cs.oh + i) * cs.ow + j)];
              if (!(std::fabs(got - want) <= 1e-5)) {
                if (bad++ < 5) {
                  ADD_FAILURE() << what << ": y[" << n << ", " << ch << ", " << i << ", " << j
                                << "] = " << got << ", want " << want;
                }
              }
            }
          }
        }
      }
      EXPECT_EQ(bad, 0) << what;
    }
  }
}

}  // namespace
}  // namespace tern::cpu
