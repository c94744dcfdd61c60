// Linear-algebra, convolution and pooling kernels: conv2d against a naive direct loop (every
// path: im2col tiles, 1x1, depthwise), the scratch contract with the temp allocator and the
// compiler's plan, and error paths (messages name the op, the argument, expected and found).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "runtime/core/memory_allocator.h"
#include "runtime/kernels/util/scratch_sizes.h"
#include "tests/kernels/kernel_test_util.h"
#include "tools/compiler/graph.h"
#include "tools/compiler/kernel_scratch.h"

namespace tern {
namespace testing {
namespace {

// Calls `name` with a temp allocator over `scratch` bytes (none when scratch_bytes < 0).
Error call_with_scratch(const char* name, std::vector<EValue*> args, int64_t scratch_bytes) {
  KernelFn fn = find_kernel(name);
  if (fn == nullptr) {
    ADD_FAILURE() << name << " not registered";
    return Error::NotFound;
  }
  // 64-byte aligned base, so the allocator's alignment needs no slack.
  std::vector<uint8_t> storage(static_cast<size_t>(scratch_bytes > 0 ? scratch_bytes : 0) + 64);
  uint8_t* base = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
  MemoryAllocator allocator(base, static_cast<size_t>(scratch_bytes > 0 ? scratch_bytes : 0));
  KernelContext context;
  context.op_name = name;
  context.temp_allocator = scratch_bytes >= 0 ? &allocator : nullptr;
  return fn(context, Span<EValue*>(args.data(), args.size()));
}

struct ConvCase {
  int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, groups;
  bool bias;
};

std::ostream& operator<<(std::ostream& os, const ConvCase& c) {
  return os << "x[" << c.n << "," << c.c << "," << c.h << "," << c.w << "] o" << c.o << " k"
            << c.kh << "x" << c.kw << " s" << c.sh << "," << c.sw << " p" << c.ph << "," << c.pw
            << " d" << c.dh << "," << c.dw << " g" << c.groups;
}

class ConvNaiveTest : public KernelTest, public ::testing::WithParamInterface<ConvCase> {};

TEST_P(ConvNaiveTest, MatchesDirectLoopWithPlannedScratch) {
  const ConvCase& p = GetParam();
  const int64_t oh = (p.h + 2 * p.ph - p.dh * (p.kh - 1) - 1) / p.sh + 1;
  const int64_t ow = (p.w + 2 * p.pw - p.dw * (p.kw - 1) - 1) / p.sw + 1;
  const int64_t cg = p.c / p.groups, og = p.o / p.groups;
  auto x = random_tensor<float>({p.n, p.c, p.h, p.w}, 1);
  auto w = random_tensor<float>({p.o, cg, p.kh, p.kw}, 2);
  auto b = random_tensor<float>({p.o}, 3);
  auto out = zeros<float>({p.n, p.o, oh, ow});
  const int64_t stride[2] = {p.sh, p.sw}, pad[2] = {p.ph, p.pw}, dil[2] = {p.dh, p.dw};
  EValue vs = EValue::from_int_list(Span<const int64_t>(stride, 2));
  EValue vp = EValue::from_int_list(Span<const int64_t>(pad, 2));
  EValue vd = EValue::from_int_list(Span<const int64_t>(dil, 2));
  EValue vg = EValue::from_int(p.groups);
  EValue none;
  const uint64_t scratch = portable::conv2d_scratch_bytes(p.c, p.groups, p.kh, p.kw, p.sh, p.sw,
                                                          p.ph, p.pw, oh, ow);
  std::vector<EValue*> args = {&x->value, &w->value, p.bias ? &b->value : &none, &vs, &vp, &vd,
                               &vg, &out->value};
  ASSERT_EQ(call_with_scratch("tern::conv2d", args, static_cast<int64_t>(scratch)), Error::Ok)
      << last_error_message();
  for (int64_t n = 0; n < p.n; ++n) {
    for (int64_t o = 0; o < p.o; ++o) {
      const int64_t grp = o / og;
      for (int64_t y = 0; y < oh; ++y) {
        for (int64_t xo = 0; xo < ow; ++xo) {
          double sum = p.bias ? b->data[o] : 0.0, mag = std::fabs(sum);
          for (int64_t c = 0; c < cg; ++c) {
            for (int64_t ky = 0; ky < p.kh; ++ky) {
              for (int64_t kx = 0; kx < p.kw; ++kx) {
                const int64_t iy = y * p.sh - p.ph + ky * p.dh;
                const int64_t ix = xo * p.sw - p.pw + kx * p.dw;
                if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
                const double v = static_cast<double>(
                                     x->data[((n * p.c + grp * cg + c) * p.h + iy) * p.w + ix]) *
                                 w->data[((o * cg + c) * p.kh + ky) * p.kw + kx];
                sum += v;
                mag += std::fabs(v);
              }
            }
          }
          ASSERT_NEAR(out->data[((n * p.o + o) * oh + y) * ow + xo], sum, 1e-5 * mag + 1e-5)
              << "n=" << n << " o=" << o << " y=" << y << " x=" << xo;
        }
      }
    }
  }
}

std::string conv_case_name(const ::testing::TestParamInfo<ConvCase>& info) {
  static const char* const kNames[] = {"Im2col",    "GroupedStrided", "PixelTiles",
                                       "Pointwise", "Depthwise",      "DepthwiseMultiplier"};
  return kNames[info.index];
}

INSTANTIATE_TEST_SUITE_P(
    Paths, ConvNaiveTest,
    ::testing::Values(
        ConvCase{2, 3, 9, 8, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},     // im2col
        ConvCase{1, 4, 11, 13, 6, 3, 2, 2, 3, 1, 0, 2, 1, 2, false},  // grouped, strided
        ConvCase{1, 8, 121, 121, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},  // several pixel tiles
        ConvCase{2, 6, 7, 5, 4, 1, 1, 1, 1, 0, 0, 1, 1, 2, true},     // 1x1 direct GEMM
        ConvCase{1, 5, 9, 10, 5, 3, 3, 2, 1, 1, 1, 1, 1, 5, true},    // depthwise
        ConvCase{1, 3, 8, 8, 6, 5, 3, 1, 2, 2, 1, 1, 2, 3, false}),  // depthwise, multiplier 2
    conv_case_name);

class LinalgKernelTest : public KernelTest {};

TEST_F(LinalgKernelTest, ConvScratchTooSmallOrMissingIsAnError) {
  auto x = random_tensor<float>({1, 4, 6, 6}, 1);
  auto w = random_tensor<float>({2, 4, 3, 3}, 2);
  auto out = zeros<float>({1, 2, 6, 6});
  const int64_t one[2] = {1, 1};
  EValue vs = EValue::from_int_list(Span<const int64_t>(one, 2));
  EValue vg = EValue::from_int(1);
  EValue none;
  std::vector<EValue*> args = {&x->value, &w->value, &none, &vs, &vs, &vs, &vg, &out->value};
  const uint64_t need = portable::conv2d_scratch_bytes(4, 1, 3, 3, 1, 1, 1, 1, 6, 6);
  ASSERT_EQ(need, 4u * 9 * 36 * sizeof(float));
  EXPECT_EQ(call_with_scratch("tern::conv2d", args, static_cast<int64_t>(need) - 1),
            Error::MemoryAllocationFailed);
  EXPECT_NE(std::string(last_error_message()).find(std::to_string(need) + " bytes"), std::string::npos)
      << last_error_message();
  EXPECT_EQ(call_with_scratch("tern::conv2d", args, -1), Error::MemoryAllocationFailed);
  EXPECT_EQ(call_with_scratch("tern::conv2d", args, static_cast<int64_t>(need)), Error::Ok)
      << last_error_message();
}

TEST_F(LinalgKernelTest, ConvScratchIsBoundedByTheBudget) {
  // 512 channels x 3x3 over 128x128 outputs: a full im2col would be 288 MiB.
  const uint64_t bytes = portable::conv2d_scratch_bytes(512, 1, 3, 3, 1, 1, 1, 1, 128, 128);
  EXPECT_LE(bytes, portable::kConvScratchBudgetBytes);
  EXPECT_GT(bytes, portable::kConvScratchBudgetBytes / 2);
  EXPECT_EQ(portable::conv2d_scratch_bytes(32, 32, 3, 3, 1, 1, 1, 1, 112, 112), 0u);  // depthwise
  EXPECT_EQ(portable::conv2d_scratch_bytes(64, 1, 1, 1, 1, 1, 0, 0, 56, 56), 0u);     // 1x1
}

TEST_F(LinalgKernelTest, CompilerPlansTheKernelsScratch) {
  using compiler::Value;
  compiler::Graph g;
  auto tensor = [&](std::vector<int64_t> sizes) {
    Value v;
    v.kind = Value::Kind::Tensor;
    v.sizes = std::move(sizes);
    g.values.push_back(v);
    return static_cast<int>(g.values.size() - 1);
  };
  auto ints = [&](std::vector<int64_t> list) {
    Value v;
    v.kind = Value::Kind::IntList;
    v.ints = std::move(list);
    g.values.push_back(v);
    return static_cast<int>(g.values.size() - 1);
  };
  auto integer = [&](int64_t i) {
    Value v;
    v.kind = Value::Kind::Int;
    v.int_value = i;
    g.values.push_back(v);
    return static_cast<int>(g.values.size() - 1);
  };
  Value none;
  g.values.push_back(none);
  const int none_id = 0;
  compiler::Node conv;
  conv.op = "tern::conv2d";
  conv.args = {tensor({1, 64, 56, 56}), tensor({64, 64, 3, 3}), none_id, ints({1, 1}),
               ints({1}), ints({1, 1}), integer(1)};
  conv.outputs = {tensor({1, 64, 56, 56})};
  EXPECT_EQ(compiler::node_scratch_bytes(g, conv),
            portable::conv2d_scratch_bytes(64, 1, 3, 3, 1, 1, 1, 1, 56, 56) +
                portable::kScratchAlignment);
  compiler::Node conv1d;
  conv1d.op = "tern::conv1d";
  conv1d.args = {tensor({2, 8, 100}), tensor({4, 8, 5}), none_id, ints({2}), ints({2}),
                 ints({1}), integer(1)};
  conv1d.outputs = {tensor({2, 4, 50})};
  EXPECT_EQ(compiler::node_scratch_bytes(g, conv1d),
            portable::conv2d_scratch_bytes(8, 1, 1, 5, 1, 2, 0, 2, 1, 50) +
                portable::kScratchAlignment);
  compiler::Node convt;
  convt.op = "tern::conv_transpose2d";
  convt.args = {tensor({1, 16, 7, 7}), tensor({16, 8, 4, 4}), none_id, ints({2, 2}),
                ints({1, 1}), ints({0, 0}), integer(1), ints({1, 1})};
  convt.outputs = {tensor({1, 8, 14, 14})};
  EXPECT_EQ(compiler::node_scratch_bytes(g, convt),
            portable::conv_transpose2d_scratch_bytes(8, 4, 4, 2, 2, 1, 1, 7, 7) +
                portable::kScratchAlignment);
  compiler::Node conv3d;
  conv3d.op = "tern::conv3d";
  conv3d.args = {tensor({1, 64, 4, 28, 28}), tensor({16, 64, 3, 3, 3}), none_id, ints({1, 2, 2}),
                 ints({1}), ints({1, 1, 1}), integer(1)};
  conv3d.outputs = {tensor({1, 16, 4, 14, 14})};
  EXPECT_EQ(compiler::node_scratch_bytes(g, conv3d),
            portable::conv3d_scratch_bytes(64, 1, 3, 3, 3, 1, 2, 2, 1, 1, 1, 4, 14, 14) +
                portable::kScratchAlignment);
  // 1728 rows (64 x 27 taps) of 4 MiB / 1728 / 4 = 606 voxels, fewer than the 784 of the output.
  EXPECT_EQ(portable::conv3d_scratch_bytes(64, 1, 3, 3, 3, 1, 2, 2, 1, 1, 1, 4, 14, 14),
            uint64_t{1728} * 606 * 4);
  compiler::Node pointwise3d = conv3d;
  pointwise3d.args[1] = tensor({16, 64, 1, 1, 1});
  pointwise3d.args[3] = ints({1});
  pointwise3d.args[4] = ints({0});
  pointwise3d.outputs = {tensor({1, 16, 4, 28, 28})};
  EXPECT_EQ(compiler::node_scratch_bytes(g, pointwise3d), 0u);
  compiler::Node depthwise = conv;
  depthwise.args[1] = tensor({64, 1, 3, 3});
  depthwise.args[6] = integer(64);
  EXPECT_EQ(compiler::node_scratch_bytes(g, depthwise), 0u);
}

TEST_F(LinalgKernelTest, MatmulShapeErrorsNameExpectedAndFound) {
  auto a = random_tensor<float>({2, 3, 4}, 1);
  auto b = random_tensor<float>({5, 6}, 2);
  auto out = zeros<float>({2, 3, 6});
  expect_invalid(call_kernel("tern::matmul", {&a->value, &b->value, &out->value}),
                 {"tern::matmul", "expected 4 rows", "found 5"});
  auto b2 = random_tensor<float>({3, 4, 6}, 2);
  expect_invalid(call_kernel("tern::matmul", {&a->value, &b2->value, &out->value}),
                 {"tern::matmul", "do not broadcast"});
  auto b3 = random_tensor<float>({4, 6}, 2);
  auto bad_out = zeros<float>({2, 3, 7});
  expect_invalid(call_kernel("tern::matmul", {&a->value, &b3->value, &bad_out->value}),
                 {"tern::matmul", "out", "[2, 3, 6]", "[2, 3, 7]"});
  auto ai = random_tensor<int32_t>({2, 4}, 1);
  expect_invalid(call_kernel("tern::matmul", {&ai->value, &b3->value, &out->value}),
                 {"tern::matmul", "a", "f32", "i32"});
}

TEST_F(LinalgKernelTest, BmmAddmmLinearErrors) {
  auto a = random_tensor<float>({2, 3, 4}, 1);
  auto b = random_tensor<float>({3, 4, 5}, 2);
  auto out = zeros<float>({2, 3, 5});
  expect_invalid(call_kernel("tern::bmm", {&a->value, &b->value, &out->value}),
                 {"tern::bmm", "b", "[2, 4, 5]", "[3, 4, 5]"});
  auto m1 = random_tensor<float>({3, 4}, 1);
  auto m2 = random_tensor<float>({4, 5}, 2);
  auto bias = random_tensor<float>({3}, 3);
  auto o2 = zeros<float>({3, 5});
  EValue one = EValue::from_double(1.0);
  expect_invalid(call_kernel("tern::addmm", {&bias->value, &m1->value, &m2->value, &one, &one,
                                             &o2->value}),
                 {"tern::addmm", "do not broadcast"});
  auto x = random_tensor<float>({2, 7}, 1);
  auto w = random_tensor<float>({3, 8}, 2);
  auto lo = zeros<float>({2, 3});
  EValue none;
  expect_invalid(call_kernel("tern::linear", {&x->value, &w->value, &none, &lo->value}),
                 {"tern::linear", "expected in_features 7", "found 8"});
  EValue text = EValue::from_string("x", 1);
  expect_invalid(call_kernel("tern::linear", {&x->value, &w->value, &text, &lo->value}),
                 {"tern::linear", "bias", "tensor or none", "string"});
}

TEST_F(LinalgKernelTest, ConvAttributeErrors) {
  auto x = random_tensor<float>({1, 4, 6, 6}, 1);
  auto w = random_tensor<float>({2, 4, 3, 3}, 2);
  auto out = zeros<float>({1, 2, 4, 4});
  const int64_t one[2] = {1, 1}, zero[2] = {0, 0}, neg[2] = {-1, 0}, three[3] = {1, 1, 1};
  EValue v1 = EValue::from_int_list(Span<const int64_t>(one, 2));
  EValue v0 = EValue::from_int_list(Span<const int64_t>(zero, 2));
  EValue vneg = EValue::from_int_list(Span<const int64_t>(neg, 2));
  EValue v3 = EValue::from_int_list(Span<const int64_t>(three, 3));
  EValue g1 = EValue::from_int(1), g3 = EValue::from_int(3);
  EValue none;
  ASSERT_EQ(call_with_scratch("tern::conv2d", {&x->value, &w->value, &none, &v1, &v0, &v1, &g1,
                                                &out->value},
                              1 << 20),
            Error::Ok)
      << last_error_message();
  expect_invalid(call_kernel("tern::conv2d", {&x->value, &w->value, &none, &v1, &vneg, &v1, &g1,
                                              &out->value}),
                 {"tern::conv2d", "padding", ">= 0", "-1"});
  expect_invalid(call_kernel("tern::conv2d", {&x->value, &w->value, &none, &v3, &v0, &v1, &g1,
                                              &out->value}),
                 {"tern::conv2d", "stride", "expected 2 values", "found 3"});
  expect_invalid(call_kernel("tern::conv2d", {&x->value, &w->value, &none, &v1, &v0, &v1, &g3,
                                              &out->value}),
                 {"tern::conv2d", "groups 3"});
  auto w5 = random_tensor<float>({2, 2, 3, 3}, 2);
  expect_invalid(call_kernel("tern::conv2d", {&x->value, &w5->value, &none, &v1, &v0, &v1, &g1,
                                              &out->value}),
                 {"tern::conv2d", "expected 4 input channels per group", "found 2"});
  auto wbig = random_tensor<float>({2, 4, 7, 7}, 2);
  expect_invalid(call_kernel("tern::conv2d", {&x->value, &wbig->value, &none, &v1, &v0, &v1,
                                              &g1, &out->value}),
                 {"tern::conv2d", "height", "below 1"});
  auto bad_out = zeros<float>({1, 2, 6, 6});
  expect_invalid(call_kernel("tern::conv2d", {&x->value, &w->value, &none, &v1, &v0, &v1, &g1,
                                              &bad_out->value}),
                 {"tern::conv2d", "out", "[1, 2, 4, 4]", "[1, 2, 6, 6]"});
  auto bias = random_tensor<float>({3}, 4);
  expect_invalid(call_kernel("tern::conv2d", {&x->value, &w->value, &bias->value, &v1, &v0, &v1,
                                              &g1, &out->value}),
                 {"tern::conv2d", "bias", "[2]", "[3]"});
  // conv3d: the same checks over three spatial dims, naming the dim.
  const int64_t zeros3[3] = {0, 0, 0};
  EValue z3 = EValue::from_int_list(Span<const int64_t>(zeros3, 3));
  auto x3 = random_tensor<float>({1, 4, 3, 6, 6}, 6);
  auto w3 = random_tensor<float>({2, 4, 3, 3, 3}, 7);
  auto out3 = zeros<float>({1, 2, 1, 4, 4});
  ASSERT_EQ(call_with_scratch("tern::conv3d", {&x3->value, &w3->value, &none, &v3, &z3, &v3,
                                                &g1, &out3->value},
                              1 << 20),
            Error::Ok)
      << last_error_message();
  expect_invalid(call_kernel("tern::conv3d", {&x3->value, &w3->value, &none, &v1, &z3, &v3, &g1,
                                              &out3->value}),
                 {"tern::conv3d", "stride", "expected 3 values", "found 2"});
  auto w3deep = random_tensor<float>({2, 4, 5, 3, 3}, 8);
  expect_invalid(call_kernel("tern::conv3d", {&x3->value, &w3deep->value, &none, &v3, &z3, &v3,
                                              &g1, &out3->value}),
                 {"tern::conv3d", "depth", "below 1"});
  auto bad_out3 = zeros<float>({1, 2, 3, 4, 4});
  expect_invalid(call_kernel("tern::conv3d", {&x3->value, &w3->value, &none, &v3, &z3, &v3, &g1,
                                              &bad_out3->value}),
                 {"tern::conv3d", "out", "[1, 2, 1, 4, 4]", "[1, 2, 3, 4, 4]"});
  expect_invalid(call_kernel("tern::conv3d", {&x->value, &w3->value, &none, &v3, &z3, &v3, &g1,
                                              &out3->value}),
                 {"tern::conv3d", "x"});
  EXPECT_EQ(call_kernel("tern::conv3d", {&x3->value, &w3->value, &none, &v3, &z3, &v3, &g1,
                                         &out3->value}),
            Error::MemoryAllocationFailed);
  EXPECT_NE(std::string(last_error_message()).find("tern::conv3d: needs"), std::string::npos)
      << last_error_message();
  // conv_transpose2d: output_padding must stay below the stride or the dilation.
  auto tw = random_tensor<float>({4, 2, 3, 3}, 5);
  auto tout = zeros<float>({1, 2, 9, 9});
  expect_invalid(call_kernel("tern::conv_transpose2d", {&x->value, &tw->value, &none, &v1, &v0,
                                                        &v1, &g1, &v1, &tout->value}),
                 {"tern::conv_transpose2d", "output_padding 1", "stride"});
}

TEST_F(LinalgKernelTest, PoolAttributeErrors) {
  auto x = random_tensor<float>({1, 2, 6, 6}, 1);
  auto out = zeros<float>({1, 2, 3, 3});
  const int64_t k2[2] = {2, 2}, p2[2] = {2, 2}, zero[2] = {0, 0}, one[2] = {1, 1};
  EValue vk = EValue::from_int_list(Span<const int64_t>(k2, 2));
  EValue vp = EValue::from_int_list(Span<const int64_t>(p2, 2));
  EValue v0 = EValue::from_int_list(Span<const int64_t>(zero, 2));
  EValue v1 = EValue::from_int_list(Span<const int64_t>(one, 2));
  EValue f = EValue::from_bool(false);
  ASSERT_EQ(call_kernel("tern::max_pool2d", {&x->value, &vk, &vk, &v0, &v1, &f, &out->value}),
            Error::Ok)
      << last_error_message();
  expect_invalid(call_kernel("tern::max_pool2d", {&x->value, &vk, &vk, &vp, &v1, &f, &out->value}),
                 {"tern::max_pool2d", "padding 2", "half the kernel size"});
  EValue zero_div = EValue::from_int(0);
  expect_invalid(call_kernel("tern::avg_pool2d",
                             {&x->value, &vk, &vk, &v0, &f, &f, &zero_div, &out->value}),
                 {"tern::avg_pool2d", "divisor_override", "found 0"});
  EValue i1 = EValue::from_int(1);
  expect_invalid(call_kernel("tern::max_pool2d", {&x->value, &vk, &vk, &v0, &v1, &i1, &out->value}),
                 {"tern::max_pool2d", "ceil_mode", "expected a bool", "int"});
  auto bad = zeros<float>({1, 2, 4, 4});
  expect_invalid(call_kernel("tern::adaptive_avg_pool2d", {&x->value, &vk, &bad->value}),
                 {"tern::adaptive_avg_pool2d", "out", "[1, 2, 2, 2]", "[1, 2, 4, 4]"});
}

}  // namespace
}  // namespace testing
}  // namespace tern
