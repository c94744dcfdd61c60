// Conformance of the cpu backend's transposed conv (XNNPACK's deconvolution, op 41, since blob
// version 19) against the portable kernel (harness: cpu_conformance_util.h): a U-Net's 2x
// upsampling (kernel 2, stride 2) between NHWC convs, DPT's reassemble (kernel 4, stride 4, no
// bias), kernel 3 stride 2 padding 1 output padding 1 (a decoder's), dilation, a
// non-square window, a plain method input, and a 1-D transposed conv's [N, C, 1, L] form;
// groups (two, and VOLO's fold: one per channel); then what the compile half refuses (groups
// that do not divide the channels, an output padding not below the stride, a
// weight that is not a constant, an output shape the attributes do not give) and the blob
// reader's checks of the node's fields.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {
namespace {

struct Window {
  std::vector<int64_t> stride{1, 1}, pad{0, 0}, out_pad{0, 0}, dil{1, 1};
};

/// conv_transpose2d of x [N, C, H, W] to o channels, kernel kh x kw (weight [C, o, kh, kw]).
int deconv(GraphBuilder& b, int x, const std::vector<int64_t>& xs, int64_t o, int64_t kh,
           int64_t kw, const Window& w, bool bias, uint32_t seed, int64_t groups = 1) {
  const int wv = constant(b, "w" + std::to_string(seed), {xs[1], o / groups, kh, kw}, seed);
  const int bv = bias ? constant(b, "b" + std::to_string(seed), {o}, seed + 1) : b.none();
  const int64_t oh = (xs[2] - 1) * w.stride[0] - 2 * w.pad[0] + w.dil[0] * (kh - 1) +
                     w.out_pad[0] + 1;
  const int64_t ow = (xs[3] - 1) * w.stride[1] - 2 * w.pad[1] + w.dil[1] * (kw - 1) +
                     w.out_pad[1] + 1;
  return b.op("tern::conv_transpose2d",
              {x, wv, bv, b.int_list(w.stride), b.int_list(w.pad), b.int_list(w.out_pad),
               b.int_value(groups), b.int_list(w.dil)},
              DType::F32, {xs[0], o, oh, ow}, "deconv" + std::to_string(seed));
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  OpCase unet = {"unet_up_between_convs", [](GraphBuilder& b) {
                   const std::vector<int64_t> xs{1, 6, 8, 8}, h{1, 8, 4, 4};
                   const int x = b.input("x", DType::F32, xs);
                   const int d = conv(b, x, xs, 8, 3, 3, {2, 2}, {1, 1}, {1, 1}, 1, true, 3);
                   Window w;
                   w.stride = {2, 2};
                   const int up = deconv(b, d, h, 6, 2, 2, w, true, 5);
                   const int r = b.op("tern::relu", {up}, DType::F32, xs);
                   b.output(conv(b, b.op("tern::add", {r, x}, DType::F32, xs), xs, 4, 3, 3,
                                 {1, 1}, {1, 1}, {1, 1}, 1, true, 7));
                 }, 1e-10};
  unet.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Deconv2d), 1u);
  };
  c.push_back(unet);
  c.push_back({"dpt_reassemble_k4_s4_no_bias", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 16, 3, 3};
                 Window w;
                 w.stride = {4, 4};
                 b.output(deconv(b, b.input("x", DType::F32, xs), xs, 8, 4, 4, w, false, 11));
               }, 1e-10});
  c.push_back({"k3_s2_p1_output_padding_1", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{2, 5, 4, 6};
                 Window w;
                 w.stride = {2, 2};
                 w.pad = {1, 1};
                 w.out_pad = {1, 1};
                 b.output(deconv(b, b.input("x", DType::F32, xs), xs, 7, 3, 3, w, true, 13));
               }, 1e-10});
  c.push_back({"dilated_non_square", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 3, 5, 4};
                 Window w;
                 w.stride = {3, 1};
                 w.pad = {2, 0};
                 w.out_pad = {1, 0};
                 w.dil = {2, 3};
                 b.output(deconv(b, b.input("x", DType::F32, xs), xs, 4, 3, 2, w, true, 17));
               }, 1e-10});
  c.push_back({"conv_transpose1d_form", [](GraphBuilder& b) {
                 // The exporter's ConvTranspose1d: x [N, C, L] viewed [N, C, 1, L], the result
                 // viewed back to [N, O, L'].
                 const std::vector<int64_t> xs{1, 6, 12};
                 const int x = b.input("x", DType::F32, xs);
                 const int x4 = b.op("tern::view", {x, b.int_list({1, 6, 1, 12})}, DType::F32,
                                     {1, 6, 1, 12});
                 Window w;
                 w.stride = {1, 3};
                 w.pad = {0, 1};
                 w.out_pad = {0, 2};
                 const int y = deconv(b, x4, {1, 6, 1, 12}, 5, 1, 4, w, true, 19);
                 b.output(b.op("tern::view", {y, b.int_list({1, 5, 37})}, DType::F32,
                               {1, 5, 37}));
               }, 1e-10});
  // Groups (XNNPACK's grouped deconvolution): two groups of a decoder's window, and VOLO's
  // fold (F.fold of 3x3 patches: C = channels x 9, one group per channel, 9 in, 1 out).
  OpCase grouped = {"two_groups_k3_s2", [](GraphBuilder& b) {
                      const std::vector<int64_t> xs{1, 4, 5, 6};
                      Window w;
                      w.stride = {2, 2};
                      w.pad = {1, 1};
                      w.out_pad = {1, 0};
                      const int x = b.input("x", DType::F32, xs);
                      const int r = b.op("tern::relu", {x}, DType::F32, xs);
                      b.output(deconv(b, r, xs, 6, 3, 3, w, true, 21, 2));
                    }, 1e-10};
  grouped.check_blob = [](const std::vector<uint8_t>& blob) {
    ASSERT_EQ(count_op(blob, cpu::NodeOp::Deconv2d), 1u);
  };
  c.push_back(grouped);
  c.push_back({"volo_fold_one_group_per_channel", [](GraphBuilder& b) {
                 const std::vector<int64_t> xs{1, 27, 4, 4};
                 Window w;
                 w.stride = {2, 2};
                 w.pad = {1, 1};
                 const int x = b.input("x", DType::F32, xs);
                 const int r = b.op("tern::relu", {x}, DType::F32, xs);
                 b.output(deconv(b, r, xs, 3, 3, 3, w, false, 23, 3));
               }, 1e-10});
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformanceDeconv, cases());

TEST(CpuDeconv, WhatTheCompileHalfRefuses) {
  register_all();
  auto reason = [](GraphBuilder& b) {
    return compiler::CpuBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes.back());
  };
  const std::vector<int64_t> xs{1, 4, 5, 5};
  {
    GraphBuilder b;
    Window w;
    w.stride = {2, 2};
    deconv(b, b.input("x", DType::F32, xs), xs, 3, 3, 3, w, true, 31, 3);
    EXPECT_NE(reason(b).find("conv_transpose2d: groups 3 do not divide 4 channels"),
              std::string::npos)
        << reason(b);
  }
  {
    GraphBuilder b;
    Window w;
    w.stride = {2, 2};
    w.dil = {3, 3};
    w.out_pad = {2, 2};  // PyTorch allows it below the dilation; XNNPACK only below the stride
    deconv(b, b.input("x", DType::F32, xs), xs, 4, 3, 3, w, true, 33);
    EXPECT_NE(reason(b).find("output_padding not below the stride"), std::string::npos)
        << reason(b);
  }
  {
    GraphBuilder b;
    const int x = b.input("x", DType::F32, xs);
    const int wv = b.input("w", DType::F32, {4, 4, 3, 3});
    b.op("tern::conv_transpose2d",
         {x, wv, b.none(), b.int_list({1, 1}), b.int_list({0, 0}), b.int_list({0, 0}),
          b.int_value(1), b.int_list({1, 1})},
         DType::F32, {1, 4, 7, 7});
    EXPECT_NE(reason(b).find("weight: not a constant"), std::string::npos) << reason(b);
  }
  {
    GraphBuilder b;
    const int x = b.input("x", DType::F32, xs);
    const int wv = constant(b, "w", {4, 4, 3, 3}, 35);
    b.op("tern::conv_transpose2d",
         {x, wv, b.none(), b.int_list({1, 1}), b.int_list({0, 0}), b.int_list({0, 0}),
          b.int_value(1), b.int_list({1, 1})},
         DType::F32, {1, 4, 8, 7});
    EXPECT_NE(reason(b).find("out [1, 4, 8, 7] is not [1, 4, 7, 7]"), std::string::npos)
        << reason(b);
  }
}

std::vector<uint8_t> deconv_blob() {
  GraphBuilder b;
  const std::vector<int64_t> xs{1, 4, 5, 5};
  Window w;
  w.stride = {2, 2};
  w.pad = {1, 1};
  w.out_pad = {1, 1};
  b.output(deconv(b, b.input("x", DType::F32, xs), xs, 3, 3, 3, w, true, 41));
  delegate_cpu(b, 0, static_cast<int>(b.num_nodes()) - 1);
  return b.graph().delegates[0].blob;
}

TEST(CpuDeconvBlob, FieldsAreChecked) {
  register_all();
  const std::vector<uint8_t> blob = deconv_blob();
  ASSERT_EQ(blob_ops(blob), (std::vector<uint32_t>{static_cast<uint32_t>(cpu::NodeOp::Deconv2d)}));
  const cpu::BlobNode d = blob_node(blob, 0);
  EXPECT_EQ(d.params[cpu::kStrideH], 2u);
  EXPECT_EQ(d.params[cpu::kDeconvAdjustW], 1u);
  EXPECT_EQ(d.params[cpu::kGroupInChannels], 4u);
  EXPECT_EQ(d.params[cpu::kGroupOutChannels], 3u);
  expect_refused(
      blob, 0,
      {{"no groups", [](cpu::BlobNode& n) { n.params[cpu::kGroups] = 0; },
        "parameter 10 is 0, expected >= 1"},
       {"two groups of the channels", [](cpu::BlobNode& n) { n.params[cpu::kGroups] = 2; },
        "expected 4 dims with 8 channels last"},
       {"adjustment at the stride",
        [](cpu::BlobNode& n) { n.params[cpu::kDeconvAdjustH] = 2; },
        "adjustment 2 x 1, expected below the stride 2 x 2"},
       {"wrong input channels", [](cpu::BlobNode& n) { n.params[cpu::kGroupInChannels] = 5; },
        "expected 4 dims with 5 channels last"},
       {"wrong output channels", [](cpu::BlobNode& n) { n.params[cpu::kGroupOutChannels] = 4; },
        "filter value"},
       {"padding past the output",
        [](cpu::BlobNode& n) { n.params[cpu::kPadTop] = n.params[cpu::kPadBottom] = 6; },
        "padding 12 leaves no output of the 12 rows"},
       {"a kernel of 0", [](cpu::BlobNode& n) { n.params[cpu::kKernelW] = 0; },
        "parameter 5 is 0, expected >= 1"},
       {"an unused parameter", [](cpu::BlobNode& n) { n.params[15] = 1; },
        "unused parameter 15 is 1"}});
}

// A grouped deconvolution's filter is a flat permute (kRecipeFlat): the weight seen as [G, C/G,
// O/G, KH·KW], permuted to [G, O/G, KH·KW, C/G] and read as [O, KH, KW, C/G]. Without the flag
// the reader names the dims the permute makes.
TEST(CpuDeconvBlob, GroupedFilterIsAFlatPermute) {
  register_all();
  GraphBuilder b;
  const std::vector<int64_t> xs{1, 4, 3, 3};
  Window w;
  w.stride = {2, 2};
  b.output(deconv(b, b.input("x", DType::F32, xs), xs, 6, 2, 3, w, false, 43, 2));
  delegate_cpu(b, 0, 0);
  std::vector<uint8_t> blob = b.graph().delegates[0].blob;
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  ASSERT_EQ(h.num_recipes, 1u);
  const size_t at = sizeof(h) + h.num_values * sizeof(cpu::BlobValue) +
                    h.num_nodes * sizeof(cpu::BlobNode);
  cpu::BlobRecipe r;
  std::memcpy(&r, blob.data() + at, sizeof(r));
  EXPECT_EQ(r.op, static_cast<uint32_t>(cpu::RecipeOp::Permute));
  EXPECT_EQ(r.flags, cpu::kRecipeFlat);
  EXPECT_EQ(std::vector<uint32_t>(r.params, r.params + 8),
            (std::vector<uint32_t>{2, 2, 3, 6, 0, 2, 3, 1}));
  const cpu::BlobNode d = blob_node(blob, 0);
  EXPECT_EQ(d.params[cpu::kGroups], 2u);
  EXPECT_EQ(d.params[cpu::kGroupInChannels], 2u);
  EXPECT_EQ(d.params[cpu::kGroupOutChannels], 3u);
  std::string message;
  EXPECT_EQ(parse(blob, &message), Error::Ok) << message;
  r.flags = 0;
  std::memcpy(blob.data() + at, &r, sizeof(r));
  EXPECT_EQ(parse(blob, &message), Error::InvalidProgram);
  EXPECT_NE(message.find("recipe 0 (permute) makes [2, 3, 6, 2]"), std::string::npos) << message;
}

}  // namespace
}  // namespace tern::cpu_test
