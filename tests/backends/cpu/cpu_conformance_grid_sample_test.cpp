// Conformance of the cpu backend's grid sample (tern's own node, op 43, since blob version 20)
// against the portable kernel (harness: cpu_conformance_util.h): bilinear and nearest, zeros,
// border and reflection padding, with and without align_corners, grids reaching past the image,
// x a method input or a conv's NHWC output, the grid a method input, a linear's output viewed
// as (x, y) pairs (Mask2Former's deformable attention: sampling offsets) or a constant, the
// output read by a conv; then what the compile half refuses and the reader's field checks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {
namespace {

struct Sampling {
  int64_t mode = 0, padding = 0;
  bool align = false;
};

/// grid_sample2d(x [N, C, H, W], grid [N, HO, WO, 2]) -> [N, C, HO, WO].
int grid_sample(GraphBuilder& b, int x, const std::vector<int64_t>& xs, int grid,
                const std::vector<int64_t>& gs, const Sampling& s) {
  return b.op("tern::grid_sample2d",
              {x, grid, b.int_value(s.mode), b.int_value(s.padding), b.bool_value(s.align)},
              DType::F32, {xs[0], xs[1], gs[1], gs[2]});
}

/// A grid input scaled past [-1, 1] (points outside the image).
int wide_grid(GraphBuilder& b, const std::vector<int64_t>& gs, double scale) {
  return b.op("tern::mul", {b.input("grid", DType::F32, gs), b.double_value(scale)}, DType::F32,
              gs);
}

void all_modes(GraphBuilder& b, bool align) {
  const std::vector<int64_t> xs{2, 5, 7, 6}, gs{2, 4, 9, 2};
  const int x = b.input("x", DType::F32, xs);
  const int grid = wide_grid(b, gs, 1.4);
  for (int64_t mode : {0, 1}) {
    for (int64_t padding : {0, 1, 2}) {
      b.output(grid_sample(b, x, xs, grid, gs, {mode, padding, align}));
    }
  }
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  OpCase modes = {"every_mode_and_padding", [](GraphBuilder& b) { all_modes(b, false); }, 1e-10};
  modes.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::GridSample), 6u);
  };
  c.push_back(modes);
  c.push_back({"every_mode_and_padding_align_corners",
               [](GraphBuilder& b) { all_modes(b, true); }, 1e-10});
  // Mask2Former's deformable attention: the sampling points a linear of the queries, viewed as
  // (x, y) pairs, tanh'd into [-1, 1]; x a conv's NHWC output; the samples read by a conv.
  OpCase deformable = {"deformable_points_from_a_linear",
                       [](GraphBuilder& b) {
                         const std::vector<int64_t> xs{1, 3, 12, 10}, fs{1, 8, 12, 10};
                         const int x = b.input("x", DType::F32, xs);
                         const int f = conv(b, x, xs, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, true, 11);
                         const int q = b.input("queries", DType::F32, {1, 20, 6});
                         const int w = constant(b, "offsets_w", {2, 6}, 13, 0.8f);
                         const int pts = b.op("tern::linear", {q, w, b.none()}, DType::F32,
                                              {1, 20, 2});
                         const int t = b.op("tern::tanh", {pts}, DType::F32, {1, 20, 2});
                         const std::vector<int64_t> gs{1, 4, 5, 2};
                         const int grid = b.op("tern::view", {t, b.int_list(gs)}, DType::F32, gs);
                         const int s = grid_sample(b, f, fs, grid, gs, {0, 0, false});
                         b.output(conv(b, s, {1, 8, 4, 5}, 4, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1,
                                       true, 15));
                       },
                       1e-10};
  deformable.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::GridSample), 1u);
  };
  c.push_back(deformable);
  // A constant grid (a spatial transformer's fixed warp) and a grid split over the pool.
  c.push_back({"constant_grid_and_a_large_one",
               [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 16, 20, 24}, gs{1, 6, 7, 2};
                 const int x = b.input("x", DType::F32, xs);
                 const int grid = constant(b, "grid", gs, 17, 1.2f);
                 b.output(grid_sample(b, x, xs, grid, gs, {0, 1, true}));
                 const std::vector<int64_t> big{1, 40, 36, 2};
                 b.output(grid_sample(b, x, xs, wide_grid(b, big, 1.1), big, {0, 0, false}));
               },
               1e-10});
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformanceGridSample, cases());

TEST(CpuGridSample, WhatTheCompileHalfRefuses) {
  register_all();
  auto reason = [](GraphBuilder& b) {
    return compiler::CpuBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes.back());
  };
  const std::vector<int64_t> xs{1, 3, 5, 5}, gs{1, 2, 2, 2};
  {  // bicubic (the exporter refuses it first; a hand-made graph here)
    GraphBuilder b;
    grid_sample(b, b.input("x", DType::F32, xs), xs, b.input("g", DType::F32, gs), gs,
                {2, 0, false});
    EXPECT_NE(reason(b).find("mode 2"), std::string::npos) << reason(b);
  }
  {  // a grid of another batch
    GraphBuilder b;
    const std::vector<int64_t> g2{2, 2, 2, 2};
    b.op("tern::grid_sample2d",
         {b.input("x", DType::F32, xs), b.input("g", DType::F32, g2), b.int_value(0),
          b.int_value(0), b.bool_value(false)},
         DType::F32, {1, 3, 2, 2});
    EXPECT_NE(reason(b).find("expected [N, C, H, W] and [N, HO, WO, 2]"), std::string::npos)
        << reason(b);
  }
  {  // a constant x
    GraphBuilder b;
    grid_sample(b, constant(b, "x", xs, 3), xs, b.input("g", DType::F32, gs), gs, {0, 0, false});
    EXPECT_NE(reason(b).find("x: a constant"), std::string::npos) << reason(b);
  }
}

TEST(CpuGridSampleBlob, FieldsAreChecked) {
  register_all();
  GraphBuilder b;
  const std::vector<int64_t> xs{1, 3, 5, 5}, gs{1, 2, 4, 2};
  b.output(grid_sample(b, b.input("x", DType::F32, xs), xs, b.input("g", DType::F32, gs), gs,
                       {1, 2, true}));
  delegate_cpu(b, 0, static_cast<int>(b.num_nodes()) - 1);
  const std::vector<uint8_t>& blob = b.graph().delegates[0].blob;
  ASSERT_EQ(blob_ops(blob), std::vector<uint32_t>{static_cast<uint32_t>(cpu::NodeOp::GridSample)});
  const cpu::BlobNode n = blob_node(blob, 0);
  EXPECT_EQ(n.params[0], 1u);
  EXPECT_EQ(n.params[1], 2u);
  EXPECT_EQ(n.params[2], 1u);
  expect_refused(
      blob, 0,
      {{"mode 2", [](cpu::BlobNode& m) { m.params[0] = 2; }, "mode 2, padding 2"},
       {"padding 3", [](cpu::BlobNode& m) { m.params[1] = 3; }, "padding 3"},
       {"align 2", [](cpu::BlobNode& m) { m.params[2] = 2; }, "align_corners 2"},
       {"an unused parameter", [](cpu::BlobNode& m) { m.params[3] = 1; },
        "unused parameter 3 is 1"},
       {"x as the grid", [](cpu::BlobNode& m) { m.inputs[1] = m.inputs[0]; },
        "the grid (value 0) f32 row-major [N, HO, WO, 2]"},
       {"the grid as x", [](cpu::BlobNode& m) { m.inputs[0] = m.inputs[1]; },
        "the inputs and parameters give [1, 2, 4, 2]"}});
}

}  // namespace
}  // namespace tern::cpu_test
