// The vulkan backend on references worked by hand or in double precision rather than the
// portable kernels: transcendentals over wide arguments, NaN propagation, a compensated
// cumsum, comparisons and where on computed conditions, argmax indices held as floats,
// embedding and index_select with their refusals; and what the backend refuses to take.
// (Every op against the portable kernels: vulkan_conformance_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "tests/backends/vulkan/vulkan_test_util.h"

namespace tern::vulkan_test {
namespace {

// sin and cos of the arguments a diffusion model's timestep embedding and rotary tables take
// (timesteps up to 1000 times frequencies up to 1 — or 1000 times that, AuraFlow's — positions
// times inverse wavelengths), far outside the [-pi, pi] where Vulkan bounds a device's own sin:
// against sin / cos in double of the same f32 argument, within 2 f32 ulps of 1 (2^-22), up to
// |x| = 2.5e7 (the shader reduces the argument by pi/2 in exact Cody-Waite steps).
TEST(VulkanUnaryMath, SinCosOfWideArgumentsMatchDoublePrecision) {
  register_all();
  const int64_t n = 4096;
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {n});
  b.output(b.op("tern::sin", {x}, DType::F32, {n}));
  b.output(b.op("tern::cos", {x}, DType::F32, {n}));
  delegate_vulkan(b, 0, 1);
  const compiler::Graph graph = b.build();
  const std::vector<uint8_t> pte = testing::compile_graph(graph);
  std::vector<float> args = random_floats(n, 77, -1000.0f, 1000.0f);
  // Near multiples of pi/2 (where the reduction cancels most), tiny, signed zeros, 1e5.
  const float special[] = {0.0f, -0.0f, 1e-20f, -3e-8f, 1.5707964f, 3.1415927f, -4.712389f,
                           6.2831855f, 1000.0f, 999.99994f, 314.15927f, 1e5f, -99999.99f,
                           5e5f, 499999.97f, -1e6f, 1.6e7f, -2.5e7f};
  // Every 7th argument up to +-5e5 (AuraFlow scales its timestep by 1000 before the sines).
  for (size_t i = 1200; i < args.size(); i += 7) args[i] *= 500.0f;
  for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); ++i) args[i] = special[i];
  for (int64_t i = 0; i < 1000; ++i) args[static_cast<size_t>(100 + i)] = static_cast<float>(i) * 0.7853982f;
  const RunResult r = run_program(pte, graph, {args}, /*disable=*/false);
  ASSERT_EQ(r.paths, std::vector<DelegatePath>{DelegatePath::Backend});
  ASSERT_EQ(r.outputs.size(), 2u);
  double worst[2] = {0, 0};
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(args[static_cast<size_t>(i)]);
    const double want[2] = {std::sin(v), std::cos(v)};
    for (int o = 0; o < 2; ++o) {
      const double err = std::fabs(r.outputs[static_cast<size_t>(o)][static_cast<size_t>(i)] - want[o]);
      worst[o] = std::max(worst[o], err);
      EXPECT_LE(err, 2.4e-7) << (o == 0 ? "sin(" : "cos(") << args[static_cast<size_t>(i)] << ")";
    }
  }
  std::printf("sin / cos on %s: worst absolute error %.3g / %.3g\n", vulkan_device_name(),
              worst[0], worst[1]);
  EXPECT_EQ(std::signbit(r.outputs[0][1]), true) << "sin(-0) is -0";
}

// softplus against log1p(exp(x)) in double: relative error in the far negative tail (where
// softplus is e^x, tiny, and log(1 + u) near 1 is what a device's log does worst: the shader
// sums log1p's series there) and around 0, within what Vulkan allows the device's exp.
TEST(VulkanUnaryMath, SoftplusMatchesDoublePrecision) {
  register_all();
  const int64_t n = 2001;
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {n});
  const int r = b.op("tern::mul", {x, b.double_value(1.0)}, DType::F32, {n});
  b.output(b.op("tern::softplus", {r, b.double_value(1.0), b.double_value(20.0)}, DType::F32, {n}));
  delegate_vulkan(b, 0, 1);
  const compiler::Graph graph = b.build();
  const std::vector<uint8_t> pte = testing::compile_graph(graph);
  std::vector<float> args(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) args[static_cast<size_t>(i)] = -60.0f + 0.04f * static_cast<float>(i);  // -60 .. 20
  const RunResult res = run_program(pte, graph, {args}, false);
  ASSERT_EQ(res.paths, std::vector<DelegatePath>{DelegatePath::Backend});
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = args[static_cast<size_t>(i)];
    const double want = v > 20.0 ? v : std::log1p(std::exp(v));
    const double rel = std::fabs(res.outputs[0][static_cast<size_t>(i)] - want) / want;
    worst = std::max(worst, rel);
    // Vulkan bounds a device's exp to (3 + 2|x|) ulp; the log1p series adds under an ulp.
    EXPECT_LE(rel, (4.0 + 2.0 * std::fabs(v)) * 1.2e-7) << "softplus(" << v << ")";
  }
  std::printf("softplus on %s: worst relative error %.3g\n", vulkan_device_name(), worst);
}

// maximum / minimum with NaN operands: NaN wins (ATen's maximum / minimum, not fmax / fmin),
// otherwise the larger / smaller; expected values by hand.
TEST(VulkanUnaryMath, MaximumMinimumPropagateNaN) {
  register_all();
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {6});
  const int y = b.input("y", DType::F32, {6});
  const int rx = b.op("tern::mul", {x, b.double_value(1.0)}, DType::F32, {6});
  b.output(b.op("tern::maximum", {rx, y}, DType::F32, {6}));
  b.output(b.op("tern::minimum", {rx, y}, DType::F32, {6}));
  delegate_vulkan(b, 0, 2);
  const compiler::Graph graph = b.build();
  const std::vector<uint8_t> pte = testing::compile_graph(graph);
  const float nan = std::nanf("");
  const RunResult r = run_program(pte, graph, {{1.0f, nan, 2.0f, nan, -3.0f, 0.5f},
                                               {nan, 1.0f, -2.0f, nan, -1.0f, 0.5f}}, false);
  ASSERT_EQ(r.paths, std::vector<DelegatePath>{DelegatePath::Backend});
  ASSERT_EQ(r.outputs.size(), 2u);
  const float want_max[6] = {nan, nan, 2.0f, nan, -1.0f, 0.5f};
  const float want_min[6] = {nan, nan, -2.0f, nan, -3.0f, 0.5f};
  for (int i = 0; i < 6; ++i) {
    if (std::isnan(want_max[i])) {
      EXPECT_TRUE(std::isnan(r.outputs[0][static_cast<size_t>(i)])) << "max " << i;
      EXPECT_TRUE(std::isnan(r.outputs[1][static_cast<size_t>(i)])) << "min " << i;
    } else {
      EXPECT_EQ(r.outputs[0][static_cast<size_t>(i)], want_max[i]) << "max " << i;
      EXPECT_EQ(r.outputs[1][static_cast<size_t>(i)], want_min[i]) << "min " << i;
    }
  }
}

// amax / amin with NaN: NaN wins (ATen), else the largest / smallest; expected by hand.
TEST(VulkanUnaryMath, AmaxAminPropagateNaN) {
  register_all();
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {3, 4});
  const int r = b.op("tern::mul", {x, b.double_value(1.0)}, DType::F32, {3, 4});
  b.output(b.op("tern::amax", {r, b.int_list({1}), b.bool_value(false)}, DType::F32, {3}));
  b.output(b.op("tern::amin", {r, b.int_list({1}), b.bool_value(false)}, DType::F32, {3}));
  delegate_vulkan(b, 0, 2);
  const compiler::Graph graph = b.build();
  const float nan = std::nanf("");
  const RunResult res = run_program(testing::compile_graph(graph), graph,
                                    {{nan, 1.0f, 5.0f, -2.0f, 3.0f, -7.0f, nan, 4.0f,
                                      0.5f, -0.5f, 2.5f, 1.5f}}, false);
  ASSERT_EQ(res.paths, std::vector<DelegatePath>{DelegatePath::Backend});
  EXPECT_TRUE(std::isnan(res.outputs[0][0]));
  EXPECT_TRUE(std::isnan(res.outputs[0][1]));
  EXPECT_EQ(res.outputs[0][2], 2.5f);
  EXPECT_TRUE(std::isnan(res.outputs[1][0]));
  EXPECT_TRUE(std::isnan(res.outputs[1][1]));
  EXPECT_EQ(res.outputs[1][2], -0.5f);
}

// cumsum over a row where a plain f32 running sum drifts (a large first term, then many small
// ones of both signs): every output equals the double running sum rounded to f32, as the
// portable kernel (double accumulator) gives; expected values computed here in double.
TEST(VulkanUnaryMath, CumsumMatchesADoubleAccumulator) {
  register_all();
  const int64_t n = 20000;
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {n});
  const int r = b.op("tern::mul", {x, b.double_value(1.0)}, DType::F32, {n});
  b.output(b.op("tern::cumsum", {r, b.int_value(0)}, DType::F32, {n}));
  delegate_vulkan(b, 0, 1);
  const compiler::Graph graph = b.build();
  std::vector<float> xs = random_floats(static_cast<size_t>(n), 77, -0.01f, 0.013f);
  xs[0] = 4096.0f;
  const RunResult res = run_program(testing::compile_graph(graph), graph, {xs}, false);
  ASSERT_EQ(res.paths, std::vector<DelegatePath>{DelegatePath::Backend});
  double acc = 0.0, plain_worst = 0.0;
  float plain = 0.0f;
  int off = 0;
  for (int64_t k = 0; k < n; ++k) {
    acc += xs[static_cast<size_t>(k)];
    plain += xs[static_cast<size_t>(k)];
    plain_worst = std::max(plain_worst, std::fabs(static_cast<double>(plain) - acc));
    if (res.outputs[0][static_cast<size_t>(k)] != static_cast<float>(acc)) ++off;
  }
  EXPECT_GT(plain_worst, 1e-2);  // the row is one a plain f32 sum gets wrong
  EXPECT_EQ(off, 0) << "outputs differing from the rounded double running sum";
}

// Comparisons, logical ops and where on a computed condition (blob version 10): bools are
// 0 / 1 floats inside the delegate, bytes at its edges (a bool input, a bool output). Inputs
// hold equal pairs, NaN and the scalar itself; expected values by hand with C++'s comparisons
// (IEEE: NaN compares unequal), in f32 and f16 storage (inputs exact in f16).
TEST(VulkanConformanceCompare, ComparisonsLogicalOpsAndWhereOnAComputedCondition) {
  register_all();
  for (uint32_t storage : {vulkan::kStorageF32, vulkan::kStorageF16}) {
    GraphBuilder b;
    const int64_t n = 12;
    const int x = b.input("x", DType::F32, {n});
    const int y = b.input("y", DType::F32, {n});
    const int m = b.input("m", DType::Bool, {n});
    const int gt = b.op("tern::gt", {x, y}, DType::Bool, {n});
    const int le = b.op("tern::le", {y, b.double_value(0.0)}, DType::Bool, {n});
    const int not_le = b.op("tern::logical_not", {le}, DType::Bool, {n});
    const int both = b.op("tern::logical_and", {gt, not_le}, DType::Bool, {n});
    const int eq = b.op("tern::eq", {x, b.double_value(0.5)}, DType::Bool, {n});
    const int any = b.op("tern::logical_or", {both, eq}, DType::Bool, {n});
    b.output(b.op("tern::where", {any, x, b.double_value(-8.0)}, DType::F32, {n}));  // 0
    b.output(any);                                                                   // 1
    b.output(b.op("tern::ne", {x, y}, DType::Bool, {n}));                            // 2
    const int lt = b.op("tern::lt", {x, y}, DType::Bool, {n});
    const int ge = b.op("tern::ge", {x, y}, DType::Bool, {n});
    b.output(b.op("tern::where", {lt, x, y}, DType::F32, {n}));                      // 3
    b.output(b.op("tern::where", {ge, x, y}, DType::F32, {n}));                      // 4
    b.output(b.op("tern::where", {m, x, y}, DType::F32, {n}));                       // 5
    const std::vector<uint8_t> pte = whole_delegate_program(b, storage);
    ASSERT_FALSE(pte.empty());
    testing::LoadedProgram lp(pte);
    testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
    auto method = lp.program().load_method("forward", memory.manager());
    ASSERT_TRUE(method.ok()) << last_error_message();
    const float nan = std::nanf("");
    std::vector<float> xs{1.0f, 2.0f, 0.5f, -1.0f, nan, 3.0f, 0.5f, -2.0f, 4.0f, 0.25f, nan, 7.0f};
    std::vector<float> ys{1.0f, 1.5f, 0.0f, -3.0f, 1.0f, nan, 0.75f, -2.0f, -1.0f, 0.125f, nan, 8.0f};
    std::vector<uint8_t> ms{1, 0, 0, 1, 1, 0, 2, 0, 0, 1, 0, 1};  // any nonzero byte is true
    std::vector<int64_t> sizes{n};
    ASSERT_EQ(method->set_input(0, testing::f32_view(sizes, xs)), Error::Ok);
    ASSERT_EQ(method->set_input(1, testing::f32_view(sizes, ys)), Error::Ok);
    ASSERT_EQ(method->set_input(2, testing::input_view(DType::Bool, sizes, ms)), Error::Ok);
    ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
    ASSERT_EQ(method->delegate_path(0).get(), DelegatePath::Backend);
    auto same = [](float a, float e) { return std::isnan(e) ? std::isnan(a) : a == e; };
    const float* o0 = static_cast<const float*>(method->output(0).get()->data);
    const uint8_t* o1 = static_cast<const uint8_t*>(method->output(1).get()->data);
    const uint8_t* o2 = static_cast<const uint8_t*>(method->output(2).get()->data);
    const float* o3 = static_cast<const float*>(method->output(3).get()->data);
    const float* o4 = static_cast<const float*>(method->output(4).get()->data);
    const float* o5 = static_cast<const float*>(method->output(5).get()->data);
    ASSERT_EQ(method->output(1).get()->dtype, DType::Bool);
    for (size_t k = 0; k < static_cast<size_t>(n); ++k) {
      const float a = xs[k], c = ys[k];
      const bool want_any = (a > c && !(c <= 0.0f)) || a == 0.5f;
      EXPECT_TRUE(same(o0[k], want_any ? a : -8.0f)) << storage << " where/any " << k;
      EXPECT_EQ(o1[k], want_any ? 1 : 0) << storage << " any " << k;
      EXPECT_EQ(o2[k], a != c ? 1 : 0) << storage << " ne " << k;
      EXPECT_TRUE(same(o3[k], a < c ? a : c)) << storage << " lt " << k;
      EXPECT_TRUE(same(o4[k], a >= c ? a : c)) << storage << " ge " << k;
      EXPECT_TRUE(same(o5[k], ms[k] != 0 ? a : c)) << storage << " where/m " << k;
    }
  }
}

// Casts (blob version 11): an int64 input read only by casts (an attention mask's int64 ->
// bool, then -> f32 through where; a timestep's int64 -> f32) enters the delegate as floats
// rounded at its edge, any value accepted: int64 -> f32 is C++'s (and ATen's) rounding of the
// int64, int64 -> bool is v != 0. f32 -> bool is x != 0 with NaN true, bool -> f32 0 / 1.
// Expected values by hand; f32 storage, and f16 storage (there the f32 rounded to f16 as every
// value entering the delegate: compared where the value is exact in f16, bools everywhere).
TEST(VulkanConformanceCast, Int64ReadOnlyByCastsEntersAsRoundedFloats) {
  register_all();
  const int64_t big = (int64_t{1} << 40) + 1;
  std::vector<int64_t> ms{0, 1, -1, (int64_t{1} << 24) + 1, big, INT64_MIN, INT64_MAX, -3, 7, 0,
                          2048, 4096};
  const int64_t n = static_cast<int64_t>(ms.size());
  for (uint32_t storage : {vulkan::kStorageF32, vulkan::kStorageF16}) {
    GraphBuilder b;
    const int m = b.input("m", DType::I64, {n});
    const int x = b.input("x", DType::F32, {n});
    const int keep = b.op("tern::cast", {m}, DType::Bool, {n});
    b.output(b.op("tern::where", {keep, x, b.double_value(-8.0)}, DType::F32, {n}));  // 0
    b.output(b.op("tern::cast", {m}, DType::F32, {n}));                               // 1
    const int xb = b.op("tern::cast", {x}, DType::Bool, {n});
    b.output(xb);                                                                     // 2
    b.output(b.op("tern::mul", {b.op("tern::cast", {xb}, DType::F32, {n}), x}, DType::F32,
                  {n}));                                                              // 3
    const std::vector<uint8_t> pte = whole_delegate_program(b, storage);
    ASSERT_FALSE(pte.empty());
    testing::LoadedProgram lp(pte);
    testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
    auto method = lp.program().load_method("forward", memory.manager());
    ASSERT_TRUE(method.ok()) << last_error_message();
    const float nan = std::nanf("");
    std::vector<float> xs{1.0f, 0.0f, -0.0f, nan, 2.5f, -1.0f, 3.0f, 0.0f, 0.25f, 5.0f, nan, 6.0f};
    std::vector<int64_t> sizes{n};
    ASSERT_EQ(method->set_input(0, testing::input_view(DType::I64, sizes, ms)), Error::Ok);
    ASSERT_EQ(method->set_input(1, testing::f32_view(sizes, xs)), Error::Ok);
    ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
    ASSERT_EQ(method->delegate_path(0).get(), DelegatePath::Backend);
    auto same = [](float a, float e) { return std::isnan(e) ? std::isnan(a) : a == e; };
    const float* o0 = static_cast<const float*>(method->output(0).get()->data);
    const float* o1 = static_cast<const float*>(method->output(1).get()->data);
    const uint8_t* o2 = static_cast<const uint8_t*>(method->output(2).get()->data);
    const float* o3 = static_cast<const float*>(method->output(3).get()->data);
    for (size_t k = 0; k < static_cast<size_t>(n); ++k) {
      const float as_f32 = static_cast<float>(ms[k]);
      const bool exact_in_f16 = std::fabs(as_f32) <= 2048.0f || as_f32 == 4096.0f;
      EXPECT_TRUE(same(o0[k], ms[k] != 0 ? xs[k] : -8.0f)) << storage << " mask " << k;
      if (storage == vulkan::kStorageF32 || exact_in_f16) {
        EXPECT_EQ(o1[k], as_f32) << storage << " int64 -> f32 " << k << " (" << ms[k] << ")";
      }
      const bool xt = xs[k] != 0.0f || std::isnan(xs[k]);
      EXPECT_EQ(o2[k], xt ? 1 : 0) << storage << " f32 -> bool " << k;
      EXPECT_TRUE(same(o3[k], xt ? xs[k] : 0.0f * xs[k])) << storage << " bool -> f32 " << k;
    }
  }
}

// argmax / argmin and a codebook lookup by their indices in one delegate (blob version 10:
// the indices held as floats on the device, int64 at the edge): first index of ties, a NaN
// counting as the maximum and the minimum (ATen), the whole tensor for dim None; expected
// values by hand, in f32 and f16 storage.
TEST(VulkanConformanceArgmax, NearestCodeLookupStaysInTheDelegate) {
  register_all();
  for (uint32_t storage : {vulkan::kStorageF32, vulkan::kStorageF16}) {
    GraphBuilder b;
    const int x = b.input("x", DType::F32, {4, 5});
    const int y = b.input("y", DType::F32, {2, 3});
    std::vector<float> book(15);
    for (size_t i = 0; i < 15; ++i) book[i] = static_cast<float>(10 * (i / 3) + i % 3);
    const int cb = b.constant_f32("codebook", {5, 3}, book);
    const int r = b.op("tern::mul", {x, b.double_value(1.0)}, DType::F32, {4, 5});
    const int amax = b.op("tern::argmax", {r, b.int_value(1), b.bool_value(false)}, DType::I64, {4});
    const int amin = b.op("tern::argmin", {r, b.int_value(-1), b.bool_value(false)}, DType::I64, {4});
    b.output(amax);                                                                    // 0
    b.output(b.op("tern::embedding", {cb, amin}, DType::F32, {4, 3}));                 // 1
    b.output(b.op("tern::index_select", {cb, b.int_value(0), amax}, DType::F32, {4, 3}));  // 2
    const int ry = b.op("tern::mul", {y, b.double_value(1.0)}, DType::F32, {2, 3});
    b.output(b.op("tern::argmax", {ry, b.none(), b.bool_value(false)}, DType::I64, {}));   // 3
    const std::vector<uint8_t> pte = whole_delegate_program(b, storage);
    ASSERT_FALSE(pte.empty());
    testing::LoadedProgram lp(pte);
    testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
    auto method = lp.program().load_method("forward", memory.manager());
    ASSERT_TRUE(method.ok()) << last_error_message();
    const float nan = std::nanf("");
    std::vector<float> xs{1, 3, 3, 0, 2,  nan, 5, nan, 1, 1,  2, -1, -1, 4, 4,  0, 0, 0, 0, 0};
    std::vector<float> ys{1, 7, -2, 7, 0, 3};
    std::vector<int64_t> x_sizes{4, 5}, y_sizes{2, 3};
    ASSERT_EQ(method->set_input(0, testing::f32_view(x_sizes, xs)), Error::Ok);
    ASSERT_EQ(method->set_input(1, testing::f32_view(y_sizes, ys)), Error::Ok);
    ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
    ASSERT_EQ(method->delegate_path(0).get(), DelegatePath::Backend);
    ASSERT_EQ(method->output(0).get()->dtype, DType::I64);
    const int64_t* o0 = static_cast<const int64_t*>(method->output(0).get()->data);
    const float* o1 = static_cast<const float*>(method->output(1).get()->data);
    const float* o2 = static_cast<const float*>(method->output(2).get()->data);
    const int64_t* o3 = static_cast<const int64_t*>(method->output(3).get()->data);
    const int64_t want_max[4] = {1, 0, 3, 0}, want_min[4] = {3, 0, 1, 0};
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(o0[i], want_max[i]) << storage << " argmax row " << i;
      for (int j = 0; j < 3; ++j) {
        EXPECT_EQ(o1[i * 3 + j], static_cast<float>(10 * want_min[i] + j)) << storage << " lookup " << i;
        EXPECT_EQ(o2[i * 3 + j], static_cast<float>(10 * want_max[i] + j)) << storage << " select " << i;
      }
    }
    EXPECT_EQ(o3[0], 1) << storage << " argmax of the whole tensor (first of the tied 7s)";
  }
}

TEST(VulkanConformanceEmbedding, GathersRowsAndRefusesAnOutOfRangeIndex) {
  register_all();
  GraphBuilder b;
  const int idx = b.input("idx", DType::I64, {2, 3});
  const int w = constant(b, "table", {10, 6}, 40);
  const int e = b.op("tern::embedding", {w, idx}, DType::F32, {2, 3, 6});
  b.output(b.op("tern::relu", {e}, DType::F32, {2, 3, 6}));
  ASSERT_EQ(compiler::VulkanBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes[0]), "");
  delegate_vulkan(b, 0, 1);
  const compiler::Graph graph = b.build();
  const std::vector<uint8_t> pte = testing::compile_graph(graph);
  for (bool disable : {false, true}) {
    testing::LoadedProgram lp(pte);
    testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
    const char* disabled[] = {"vulkan"};
    MethodLoadOptions options;
    if (disable) options.disabled_backends = Span<const char* const>(disabled, 1);
    auto method = lp.program().load_method("forward", memory.manager(), options);
    ASSERT_TRUE(method.ok()) << last_error_message();
    std::vector<int64_t> ids{0, 9, 3, 4, 4, 7}, sizes{2, 3};
    const TensorView view = testing::input_view(DType::I64, sizes, ids);
    ASSERT_EQ(method->set_input(0, view), Error::Ok) << last_error_message();
    ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
    const std::vector<float> got = testing::to_vector(*method->output(0).get());
    const std::vector<float> table(reinterpret_cast<const float*>(graph.values[static_cast<size_t>(w)].data.data()),
                                   reinterpret_cast<const float*>(graph.values[static_cast<size_t>(w)].data.data()) + 60);
    for (size_t r = 0; r < 6; ++r) {  // expected: the table's rows, by hand
      const int64_t row = ids[r];
      for (size_t d = 0; d < 6; ++d) {
        EXPECT_EQ(got[r * 6 + d], std::max(0.0f, table[static_cast<size_t>(row) * 6 + d])) << r;
      }
    }
    for (int64_t bad : {int64_t{10}, int64_t{-1}}) {  // refused as the portable kernel does
      ids[2] = bad;
      ASSERT_EQ(method->set_input(0, view), Error::Ok);
      EXPECT_EQ(method->execute(), Error::InvalidArgument) << "index " << bad;
      if (!disable) {
        EXPECT_NE(std::string(last_error_message()).find("index " + std::to_string(bad)),
                  std::string::npos) << last_error_message();
      }
      ids[2] = 3;
    }
  }
}

// index_select along an inner dim by an index the region reads (made outside it): the
// embedding node with an outer count; expected values by hand (x[o, idx[k], i]); an index out
// of range fails the execute as the portable kernel does.
TEST(VulkanConformanceEmbedding, IndexSelectByAnInputIndexAlongAnInnerDim) {
  register_all();
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {2, 4, 3});
  const int idx = b.input("idx", DType::I64, {5});
  const int r = b.op("tern::relu", {x}, DType::F32, {2, 4, 3});
  b.output(b.op("tern::index_select", {r, b.int_value(1), idx}, DType::F32, {2, 5, 3}));
  const std::vector<uint8_t> pte = whole_delegate_program(b, vulkan::kStorageF32);
  ASSERT_FALSE(pte.empty());
  testing::LoadedProgram lp(pte);
  testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 1 << 20);
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << last_error_message();
  std::vector<float> xs(24);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i) + 1.0f;
  std::vector<int64_t> x_sizes{2, 4, 3}, ids{3, 0, 0, 2, 1}, i_sizes{5};
  const TensorView xv = testing::f32_view(x_sizes, xs);
  const TensorView iv = testing::input_view(DType::I64, i_sizes, ids);
  ASSERT_EQ(method->set_input(0, xv), Error::Ok) << last_error_message();
  ASSERT_EQ(method->set_input(1, iv), Error::Ok) << last_error_message();
  ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
  const std::vector<float> got = testing::to_vector(*method->output(0).get());
  ASSERT_EQ(got.size(), 30u);
  for (size_t o = 0; o < 2; ++o) {
    for (size_t k = 0; k < 5; ++k) {
      for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(got[(o * 5 + k) * 3 + i], xs[(o * 4 + static_cast<size_t>(ids[k])) * 3 + i])
            << o << " " << k << " " << i;
      }
    }
  }
  ids[4] = 4;
  ASSERT_EQ(method->set_input(1, iv), Error::Ok);
  EXPECT_EQ(method->execute(), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("index 4"), std::string::npos)
      << last_error_message();
}

TEST(VulkanSupport, RefusesWhatItDoesNotImplement) {
  GraphBuilder b;
  const int x = b.input("x", DType::F32, {2, 8});
  const int i = b.input("i", DType::I32, {2, 8});
  b.output(b.op("tern::atan", {x}, DType::F32, {2, 8}));                      // not taken
  b.output(b.op("tern::pow", {x, x}, DType::F32, {2, 8}));                    // tensor exponent
  b.output(b.op("tern::div", {x, x, b.string_value("floor")}, DType::F32, {2, 8}));  // rounding
  b.output(b.op("tern::add", {i, i}, DType::I32, {2, 8}));                    // int tensors
  b.output(b.op("tern::pad", {x, b.int_list({1, 1}), b.string_value("replicate"), b.none()},
                DType::F32, {2, 10}));                                        // replicate mode
  b.output(b.op("tern::pad", {x, b.int_list({8, 0}), b.string_value("reflect"), b.none()},
                DType::F32, {2, 16}));                                        // reflect >= size
  // Casts to integers or f16; a cast of an int64 that an add reads too (its floats would be
  // rounded for the add as well); a cast of an int32.
  b.output(b.op("tern::cast", {x}, DType::I64, {2, 8}));
  b.output(b.op("tern::cast", {x}, DType::F16, {2, 8}));
  const int ids = b.input("ids", DType::I64, {2, 8});
  b.output(b.op("tern::cast", {ids}, DType::F32, {2, 8}));
  b.output(b.op("tern::add", {ids, ids}, DType::I64, {2, 8}));
  b.output(b.op("tern::cast", {i}, DType::F32, {2, 8}));
  // Attention with a bool mask made at run time: the attention node adds a mask (bools as
  // -inf / 0), which a comparison's 0 / 1 floats are not.
  const int q = b.input("q", DType::F32, {1, 4, 8});
  const int mask = b.op("tern::gt", {x, b.double_value(0.0)}, DType::Bool, {2, 8});
  const int m4 = b.op("tern::view", {mask, b.int_list({1, 4, 4})}, DType::Bool, {1, 4, 4});
  const size_t sdpa = b.num_nodes();
  b.output(b.op("tern::scaled_dot_product_attention",
                {q, q, q, m4, b.bool_value(false), b.none()}, DType::F32, {1, 4, 8}));
  EXPECT_NE(compiler::VulkanBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes[sdpa])
                .find("made at run time"),
            std::string::npos);
  for (size_t n = 0; n < b.num_nodes(); ++n) {
    if (n == sdpa - 2 || n == sdpa - 1) continue;  // the comparison and the view are taken
    EXPECT_NE(compiler::VulkanBackendCompiler::unsupported_reason(b.graph(), b.graph().nodes[n]), "")
        << "node " << n;
  }
  // A region of only data movement is not worth a delegate call.
  GraphBuilder v;
  const int y = v.input("y", DType::F32, {2, 8});
  v.output(v.op("tern::view", {y, v.int_list({16})}, DType::F32, {16}));
  EXPECT_FALSE(compiler::VulkanBackendCompiler().accepts_region(v.graph(), {0}));
  // Nor one of only casts and data movement.
  const int yb = v.op("tern::cast", {y}, DType::Bool, {2, 8});
  v.output(v.op("tern::view", {yb, v.int_list({16})}, DType::Bool, {16}));
  EXPECT_FALSE(compiler::VulkanBackendCompiler().accepts_region(v.graph(), {1, 2}));
  v.output(v.op("tern::relu", {y}, DType::F32, {2, 8}));
  EXPECT_TRUE(compiler::VulkanBackendCompiler().accepts_region(v.graph(), {1, 2, 3}));
}

}  // namespace
}  // namespace tern::vulkan_test
