// The quantization pass of `tern compile --quantize` and quantized programs end to end: scheme
// parsing, which weights are quantized (linear, matmul-with-constant, embedding; others stay
// f32), the portable kernels' dequantize-then-op against an f32 reference within 1e-5 relative
// (also with less scratch than planned), and corrupt quantization parameters as load errors
// that name the tensor.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/kernels/portable/register_portable_kernels.h"
#include "runtime/kernels/util/quant_formats.h"
#include "runtime/kernels/util/scratch_sizes.h"
#include "tests/executor/method_test_util.h"
#include "tests/executor/raw_program.h"
#include "tools/compiler/compile.h"
#include "tools/compiler/graph_builder.h"
#include "tools/compiler/kernel_scratch.h"
#include "tools/compiler/quantize.h"

namespace tern {
namespace {

using compiler::GraphBuilder;
using compiler::QuantizeOptions;
using compiler::QuantScheme;
using compiler::QuantSpec;

std::vector<float> pattern(size_t n, float seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = std::sin(seed + 0.731f * static_cast<float>(i)) * (1.0f + 0.01f * static_cast<float>(i % 97));
  }
  return v;
}

// ---------------------------------------------------------------------------- schemes

TEST(QuantScheme, ParsesAndPrints) {
  const std::pair<const char*, const char*> cases[] = {
      {"nf4", "nf4:block=64"},
      {"nf4:block=128", "nf4:block=128"},
      {"nf4:double", "nf4:block=64:double"},
      {"nf4:block=32:double", "nf4:block=32:double"},
      {"nf4:block=4096", "nf4:block=4096"},
      {"fp8_e4m3", "fp8_e4m3:per_channel"},
      {"fp8_e4m3:per_tensor", "fp8_e4m3:per_tensor"},
      {"fp8_e4m3:block=128", "fp8_e4m3:block=128x128"},
      {"fp8_e5m2:block=64x32", "fp8_e5m2:block=64x32"},
      {"fp8_e5m2:per_channel", "fp8_e5m2:per_channel"},
      {"none", "none"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(compiler::quant_scheme_string(compiler::parse_quant_scheme(c.first)), c.second)
        << c.first;
  }
  const QuantScheme q = compiler::parse_quant_scheme("fp8_e5m2:block=64x32");
  EXPECT_EQ(q.kind, QuantScheme::Kind::FP8E5M2);
  EXPECT_EQ(q.granularity, QuantSpec::Granularity::Block2D);
  EXPECT_EQ(q.block_rows, 64u);
  EXPECT_EQ(q.block_cols, 32u);
}

TEST(QuantScheme, RefusesBadSchemesSayingWhy) {
  const std::pair<const char*, const char*> cases[] = {
      {"nf4:block=48", "not a power of two in [32, 4096]"},
      {"nf4:block=16", "not a power of two in [32, 4096]"},
      {"nf4:block=8192", "not a power of two in [32, 4096]"},
      {"nf4:block=", "not a positive integer"},
      {"nf4:triple", "unknown nf4 option 'triple'"},
      {"fp8_e4m3:per_row", "unknown fp8 option 'per_row'"},
      {"fp8_e4m3:block=0", "block size of 0"},
      {"fp8_e4m3:per_tensor:per_channel", "at most one granularity"},
      {"int4", "unknown scheme 'int4'"},
      {"none:block=64", "'none' takes no options"},
  };
  for (const auto& c : cases) {
    try {
      compiler::parse_quant_scheme(c.first);
      ADD_FAILURE() << c.first << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(c.second), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("nf4[:block=N][:double]"), std::string::npos);
    }
  }
  EXPECT_THROW(compiler::parse_quant_rule("nf4"), std::invalid_argument);
  EXPECT_THROW(compiler::parse_quant_rule("=nf4"), std::invalid_argument);
  const compiler::QuantRule r = compiler::parse_quant_rule("layers.*.weight=nf4:block=128");
  EXPECT_EQ(r.pattern, "layers.*.weight");
  EXPECT_EQ(r.scheme.block_size, 128u);
}

TEST(QuantScheme, GlobMatch) {
  EXPECT_TRUE(compiler::glob_match("fc1.weight", "fc1.weight"));
  EXPECT_FALSE(compiler::glob_match("fc1.weight", "fc1.weights"));
  EXPECT_TRUE(compiler::glob_match("*", "anything"));
  EXPECT_TRUE(compiler::glob_match("layers.*.weight", "layers.10.attn.weight"));
  EXPECT_FALSE(compiler::glob_match("layers.*.weight", "layers.10.attn.bias"));
  EXPECT_TRUE(compiler::glob_match("fc?.weight", "fc2.weight"));
  EXPECT_FALSE(compiler::glob_match("fc?.weight", "fc10.weight"));
  EXPECT_TRUE(compiler::glob_match("*head*", "lm_head.weight"));
}

// ------------------------------------------------------------------------------ the pass

// idx [3] -> emb (embedding [10, 40]) -> e [3, 40] -> fc (linear [24, 40] + bias) -> h [3, 24]
// -> y = matmul(h, m [24, 12]) [3, 12] -> t = linear(y, both [12, 12]) [3, 12]; and
// y2 = both + both, so `both` is read by an add too (left f32, with the reason reported).
struct Ids {
  int idx, emb, fc, bias, m, both, y, t, y2;
};

compiler::Graph model_graph(Ids* ids) {
  GraphBuilder g;
  Ids& i = *ids;
  i.idx = g.input("idx", DType::I64, {3});
  i.emb = g.constant_f32("emb.weight", {10, 40}, pattern(400, 0.1f));
  i.fc = g.constant_f32("fc.weight", {24, 40}, pattern(960, 0.7f));
  i.bias = g.constant_f32("fc.bias", {24}, pattern(24, 1.3f));
  i.m = g.constant_f32("m", {24, 12}, pattern(288, 2.1f));
  i.both = g.constant_f32("both", {12, 12}, pattern(144, 3.3f));
  const int e = g.op("tern::embedding", {i.emb, i.idx}, DType::F32, {3, 40});
  const int h = g.op("tern::linear", {e, i.fc, i.bias}, DType::F32, {3, 24});
  i.y = g.op("tern::matmul", {h, i.m}, DType::F32, {3, 12});
  i.t = g.op("tern::linear", {i.y, i.both, g.none()}, DType::F32, {3, 12});
  i.y2 = g.op("tern::add", {i.both, i.both}, DType::F32, {12, 12});
  g.output(i.y);
  g.output(i.t);
  g.output(i.y2);
  return g.build();
}

TEST(QuantizePass, QuantizesLinearMatmulAndEmbeddingWeightsOnly) {
  Ids ids{};
  compiler::ProgramGraph program;
  program.methods.push_back(model_graph(&ids));
  QuantizeOptions options;
  options.scheme = compiler::parse_quant_scheme("nf4");
  const compiler::QuantizeReport report = compiler::quantize_program(program, options);
  const compiler::Graph& g = program.methods[0];
  ASSERT_EQ(report.weights.size(), 3u);
  EXPECT_EQ(report.weights[0].name, "emb.weight");
  EXPECT_EQ(report.weights[1].name, "fc.weight");
  EXPECT_EQ(report.weights[2].name, "m");
  EXPECT_TRUE(report.weights[2].transposed);
  EXPECT_EQ(report.weights[2].shape, (std::vector<int64_t>{12, 24}));
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_NE(report.skipped[0].find("'both' [12, 12]: also read by tern::add"), std::string::npos)
      << report.skipped[0];
  EXPECT_EQ(g.values[ids.emb].dtype, DType::NF4);
  EXPECT_EQ(g.values[ids.fc].dtype, DType::NF4);
  EXPECT_EQ(g.values[ids.bias].dtype, DType::F32) << "biases stay f32";
  EXPECT_EQ(g.values[ids.both].dtype, DType::F32);
  EXPECT_EQ(g.values[ids.fc].data.size(), 480u);
  const QuantSpec& q = g.values[ids.fc].quant;
  EXPECT_EQ(q.scheme, QuantSpec::Scheme::NF4);
  EXPECT_EQ(q.block_size, 64u);
  ASSERT_GE(q.absmax, 0);
  EXPECT_EQ(g.values[q.absmax].name, "fc.weight.absmax");
  EXPECT_EQ(g.values[q.absmax].sizes, (std::vector<int64_t>{15}));
  // The matmul became linear(h, m^T [12, 24], None).
  EXPECT_EQ(g.nodes[2].op, "tern::linear");
  ASSERT_EQ(g.nodes[2].args.size(), 3u);
  EXPECT_EQ(g.nodes[2].args[1], ids.m);
  EXPECT_EQ(g.values[g.nodes[2].args[2]].kind, compiler::Value::Kind::None);
  EXPECT_EQ(g.values[ids.m].sizes, (std::vector<int64_t>{12, 24}));
  EXPECT_EQ(report.weights[1].bytes_before, 3840u);
  EXPECT_EQ(report.weights[1].bytes_after, 480u + 15 * 4);
  EXPECT_GT(report.constant_bytes_before, report.constant_bytes_after);
  compiler::validate_graph(g);
  // The planner sizes the dequantization panel of the quantized linears.
  EXPECT_EQ(compiler::node_scratch_bytes(g, g.nodes[1]),
            portable::quant_panel_scratch_bytes(24, 40) + portable::kScratchAlignment);
  EXPECT_GT(compiler::method_scratch_bytes(g), 0u);
}

TEST(QuantizePass, RulesChooseSchemesPerWeight) {
  Ids ids{};
  compiler::ProgramGraph program;
  program.methods.push_back(model_graph(&ids));
  QuantizeOptions options;
  options.rules.push_back(compiler::parse_quant_rule("emb.*=fp8_e5m2:per_tensor"));
  options.rules.push_back(compiler::parse_quant_rule("fc.*=none"));
  options.scheme = compiler::parse_quant_scheme("nf4:block=32:double");
  const compiler::QuantizeReport report = compiler::quantize_program(program, options);
  const compiler::Graph& g = program.methods[0];
  EXPECT_EQ(g.values[ids.emb].dtype, DType::FP8E5M2);
  EXPECT_EQ(g.values[ids.emb].quant.granularity, QuantSpec::Granularity::PerTensor);
  EXPECT_EQ(g.values[ids.fc].dtype, DType::F32) << "a 'none' rule keeps it f32";
  EXPECT_EQ(g.values[ids.m].dtype, DType::NF4);
  const QuantSpec& q = g.values[ids.m].quant;
  EXPECT_EQ(q.scheme, QuantSpec::Scheme::NF4DoubleQuant);
  EXPECT_EQ(q.block_size, 32u);
  ASSERT_GE(q.dq_table, 0);
  EXPECT_EQ(g.values[q.dq_table].sizes, (std::vector<int64_t>{256}));
  EXPECT_EQ(g.values[q.dq_codes].dtype, DType::U8);
  EXPECT_EQ(g.values[q.dq_codes].sizes, (std::vector<int64_t>{9}));  // ceil(288 / 32)
  EXPECT_EQ(g.values[q.dq_absmax2].sizes, (std::vector<int64_t>{1}));
  EXPECT_EQ(report.weights.size(), 2u);
  // Only ruled weights when there is no default scheme.
  compiler::ProgramGraph only;
  only.methods.push_back(model_graph(&ids));
  QuantizeOptions ruled;
  ruled.rules.push_back(compiler::parse_quant_rule("fc.weight=fp8_e4m3"));
  EXPECT_EQ(compiler::quantize_program(only, ruled).weights.size(), 1u);
  EXPECT_EQ(only.methods[0].values[ids.fc].dtype, DType::FP8E4M3);
  EXPECT_EQ(only.methods[0].values[ids.emb].dtype, DType::F32);
}

TEST(QuantizePass, NonFiniteWeightIsAnErrorNamingIt) {
  Ids ids{};
  compiler::ProgramGraph program;
  program.methods.push_back(model_graph(&ids));
  float nan = std::nanf("");
  std::memcpy(program.methods[0].values[ids.fc].data.mutable_vector().data() + 4 * 17, &nan, 4);
  QuantizeOptions options;
  options.scheme = compiler::parse_quant_scheme("fp8_e4m3");
  try {
    compiler::quantize_program(program, options);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("weight 'fc.weight' [24, 40]: element 17 is nan"),
              std::string::npos)
        << e.what();
  }
}

// ---------------------------------------------------------------------------- end to end

// Dequantizes value `id` of a quantized graph to f32 with the runtime's dequantizer.
std::vector<float> dequantized(const compiler::Graph& g, int id) {
  const compiler::Value& v = g.values[id];
  if (v.dtype == DType::F32) {
    std::vector<float> out(v.data.size() / 4);
    std::memcpy(out.data(), v.data.data(), v.data.size());
    return out;
  }
  const QuantSpec& s = v.quant;
  auto f32 = [&](int ref) {
    return ref < 0 ? nullptr : reinterpret_cast<const float*>(g.values[ref].data.data());
  };
  QuantView q;
  q.scheme = static_cast<QuantView::Scheme>(s.scheme);
  q.block_size = s.block_size;
  q.absmax = f32(s.absmax);
  q.dq_codes = s.dq_codes < 0 ? nullptr : g.values[s.dq_codes].data.data();
  q.dq_absmax2 = f32(s.dq_absmax2);
  q.dq_table = f32(s.dq_table);
  q.dq_offset = s.dq_offset;
  q.dq_block_size = s.dq_block_size;
  q.scale = f32(s.scale);
  q.granularity = static_cast<QuantView::Granularity>(s.granularity);
  q.block_rows = s.block_rows;
  q.block_cols = s.block_cols;
  TensorView t;
  t.dtype = v.dtype;
  t.rank = static_cast<uint32_t>(v.sizes.size());
  t.sizes = v.sizes.data();
  t.data = const_cast<uint8_t*>(v.data.data());
  t.quant = &q;
  std::vector<float> out(t.numel());
  quant::dequantize(t, 0, out.size(), out.data());
  return out;
}

// y = (emb[idx] @ fc^T + bias) @ m (m stored transposed as [12, 24] once quantized) and
// t = y @ both^T, in double from the dequantized weights (h and y rounded to f32 as the
// program stores them).
void reference(const compiler::Graph& g, const Ids& ids, const std::vector<int64_t>& idx,
               std::vector<double>* y, std::vector<double>* t) {
  const std::vector<float> emb = dequantized(g, ids.emb), fc = dequantized(g, ids.fc),
                           bias = dequantized(g, ids.bias), m = dequantized(g, ids.m),
                           both = dequantized(g, ids.both);
  const bool m_transposed = g.values[ids.m].sizes[0] == 12;
  std::vector<double> h(3 * 24);
  for (int r = 0; r < 3; ++r) {
    for (int o = 0; o < 24; ++o) {
      double acc = bias[o];
      for (int k = 0; k < 40; ++k) acc += double(emb[idx[r] * 40 + k]) * fc[o * 40 + k];
      h[r * 24 + o] = float(acc);
    }
  }
  y->assign(3 * 12, 0.0);
  t->assign(3 * 12, 0.0);
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 12; ++c) {
      double acc = 0;
      for (int k = 0; k < 24; ++k) {
        acc += h[r * 24 + k] * (m_transposed ? m[c * 24 + k] : m[k * 12 + c]);
      }
      (*y)[r * 12 + c] = acc;
    }
  }
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 12; ++c) {
      double acc = 0;
      for (int k = 0; k < 12; ++k) acc += double(float((*y)[r * 12 + k])) * both[c * 12 + k];
      (*t)[r * 12 + c] = acc;
    }
  }
}

double max_relative_error(const std::vector<float>& got, const std::vector<double>& want) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::fabs(double(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  return err / scale;
}

class QuantizedProgram : public ::testing::TestWithParam<const char*> {};

TEST_P(QuantizedProgram, MatchesDequantizeThenF32Op) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  Ids ids{};
  compiler::ProgramGraph program;
  program.methods.push_back(model_graph(&ids));
  compiler::CompileOptions options;
  options.quantize.scheme = compiler::parse_quant_scheme(GetParam());
  compiler::ProgramGraph quantized = program;
  compiler::quantize_program(quantized, options.quantize);
  const compiler::CompileResult result = compiler::compile_program(program, options);
  ASSERT_EQ(result.quantization.weights.size(), 3u);
  EXPECT_GT(result.methods[0].temp_size, 0u);

  testing::LoadedProgram lp(result.bytes);
  auto meta = lp.program().method_meta("forward");
  ASSERT_TRUE(meta.ok()) << last_error_message();
  const std::vector<int64_t> idx = {3, 0, 9};
  std::vector<double> want_y, want_t;
  reference(quantized.methods[0], ids, idx, &want_y, &want_t);
  // Planned scratch, one row's worth (panels of one row) and none at all.
  const size_t planned = static_cast<size_t>(meta->temp_allocator_bytes());
  for (size_t temp : {planned, size_t{40 * 4 + 64}, size_t{0}}) {
    testing::MethodMemory memory(*meta, -1, 0, temp);
    auto method = lp.program().load_method("forward", memory.manager());
    ASSERT_TRUE(method.ok()) << last_error_message();
    std::vector<int64_t> sizes = {3};
    std::vector<int64_t> idx_data = idx;
    TensorView in;
    in.dtype = DType::I64;
    in.rank = 1;
    in.sizes = sizes.data();
    in.data = idx_data.data();
    in.nbytes = idx_data.size() * 8;
    ASSERT_EQ(method->set_input(0, in), Error::Ok) << last_error_message();
    const Error err = method->execute();
    if (temp == 0) {
      EXPECT_EQ(err, Error::MemoryAllocationFailed);
      EXPECT_NE(std::string(last_error_message()).find("bytes of scratch"), std::string::npos)
          << last_error_message();
      continue;
    }
    ASSERT_EQ(err, Error::Ok) << last_error_message();
    for (size_t o = 0; o < 2; ++o) {
      auto out = method->output(o);
      ASSERT_TRUE(out.ok());
      const double rel = max_relative_error(testing::to_vector(**out), o == 0 ? want_y : want_t);
      EXPECT_LE(rel, 1e-5) << GetParam() << " output " << o << " temp " << temp;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Schemes, QuantizedProgram,
                         ::testing::Values("nf4", "nf4:block=32:double", "fp8_e4m3",
                                           "fp8_e4m3:per_tensor", "fp8_e5m2:block=16x8",
                                           "fp8_e5m2"));

// A quantized b of tern::matmul (a hand-written graph: the compiler itself turns such matmuls
// into linear) runs through panels of b's rows.
TEST(QuantizedKernels, MatmulWithQuantizedB) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  for (const char* scheme : {"nf4:block=32", "fp8_e4m3", "fp8_e5m2:block=8x8"}) {
    // Built with b read as a linear weight so that the pass quantizes it as is ([24, 12] taken
    // as [out, in], no transposition), then turned back into matmul(a, b).
    GraphBuilder g;
    const int a = g.input("a", DType::F32, {2, 5, 24});
    const int b = g.constant_f32("b", {24, 12}, pattern(288, 0.4f));
    const int y = g.op("tern::linear", {a, b, g.none()}, DType::F32, {2, 5, 12});
    g.output(y);
    compiler::ProgramGraph holder;
    holder.methods.push_back(g.build());
    QuantizeOptions options;
    options.scheme = compiler::parse_quant_scheme(scheme);
    ASSERT_EQ(compiler::quantize_program(holder, options).weights.size(), 1u) << scheme;
    compiler::Graph q = holder.methods[0];
    q.nodes[0].op = "tern::matmul";
    q.nodes[0].args.pop_back();
    EXPECT_GT(compiler::method_scratch_bytes(q), 0u);
    const std::vector<float> bq = dequantized(q, b);
    testing::LoadedProgram lp(testing::compile_graph(q));
    auto meta = lp.program().method_meta("forward");
    ASSERT_TRUE(meta.ok()) << last_error_message();
    for (size_t temp : {static_cast<size_t>(meta->temp_allocator_bytes()), size_t{2 * 12 * 4 + 64}}) {
      testing::MethodMemory memory(*meta, -1, 0, temp);
      auto method = lp.program().load_method("forward", memory.manager());
      ASSERT_TRUE(method.ok()) << last_error_message();
      std::vector<float> x = pattern(2 * 5 * 24, 0.9f);
      std::vector<int64_t> sizes = {2, 5, 24};
      ASSERT_EQ(method->set_input(0, testing::f32_view(sizes, x)), Error::Ok);
      ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
      const std::vector<float> got = testing::to_vector(**method->output(0));
      std::vector<double> want(2 * 5 * 12);
      for (int r = 0; r < 10; ++r) {
        for (int c = 0; c < 12; ++c) {
          double acc = 0;
          for (int k = 0; k < 24; ++k) acc += double(x[r * 24 + k]) * bq[k * 12 + c];
          want[r * 12 + c] = acc;
        }
      }
      EXPECT_LE(max_relative_error(got, want), 1e-5) << scheme << " temp " << temp;
    }
  }
}

// ---------------------------------------------------------------- corrupt parameters

// A quantized program whose quantization parameters `corrupt` edits before serialization; the
// load error (Program::load's verifier) must be InvalidProgram naming `fc.weight`.
std::string load_error_of(const char* scheme,
                          void (*corrupt)(compiler::Graph& g, const Ids& ids)) {
  Ids ids{};
  compiler::ProgramGraph program;
  program.methods.push_back(model_graph(&ids));
  QuantizeOptions options;
  options.scheme = compiler::parse_quant_scheme(scheme);
  compiler::quantize_program(program, options);
  corrupt(program.methods[0], ids);
  std::vector<uint8_t> bytes;
  try {
    bytes = compiler::compile_program(program).bytes;
  } catch (const std::invalid_argument& e) {
    return std::string("compile: ") + e.what();
  }
  try {
    testing::LoadedProgram lp(bytes);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "loaded";
}

void resize_constant(compiler::Value& v, int64_t n) {
  v.sizes = {n};
  v.data.mutable_vector().resize(static_cast<size_t>(n) * (v.dtype == DType::U8 ? 1 : 4));
}

// Each corruption is refused by the compiler (validate_graph applies the loader's rules, so
// what `tern compile` writes loads; a fuzz finding), naming the tensor and what it expected. The
// loader's own checks of the same rules, for files not written by tern, are in program_test.cpp
// and the byte-flip and fuzz tests (docs/hardening.md).
TEST(QuantizedProgramVerification, CorruptParametersAreRefusedNamingTheTensor) {
  struct Case {
    const char* scheme;
    void (*corrupt)(compiler::Graph&, const Ids&);
    const char* expect;
    const char* tensor = "'fc.weight'";
  };
  const Case cases[] = {
      {"nf4",
       [](compiler::Graph& g, const Ids& i) {
         resize_constant(g.values[g.values[i.fc].quant.absmax], 14);
       },
       "quant absmax (value"},
      {"nf4",
       [](compiler::Graph& g, const Ids& i) { g.values[i.fc].quant.block_size = 48; },
       "NF4 block size 48 is not a power of two in [32, 4096]"},
      {"nf4",
       [](compiler::Graph& g, const Ids& i) { g.values[i.fc].quant.block_size = 8192; },
       "NF4 block size 8192"},
      {"nf4",
       [](compiler::Graph& g, const Ids& i) {
         g.values[i.fc].quant.block_size = 32;  // 30 blocks now, absmax holds 15
       },
       "has 15 elements, expected 30"},
      {"nf4",
       [](compiler::Graph& g, const Ids& i) { g.values[i.fc].quant = QuantSpec(); },
       "nf4 tensor without quantization parameters"},
      {"nf4:double",
       [](compiler::Graph& g, const Ids& i) {
         resize_constant(g.values[g.values[i.fc].quant.dq_table], 255);
       },
       "quant dq_table (value", "'emb.weight'"},  // the table is shared: first user
      {"nf4:double",
       [](compiler::Graph& g, const Ids& i) {
         resize_constant(g.values[g.values[i.fc].quant.dq_codes], 16);
       },
       "quant dq_codes (value"},
      {"nf4:double",
       [](compiler::Graph& g, const Ids& i) {
         resize_constant(g.values[g.values[i.fc].quant.dq_absmax2], 2);
       },
       "quant dq_absmax2 (value"},
      {"nf4:double",
       [](compiler::Graph& g, const Ids& i) { g.values[i.fc].quant.dq_block_size = 0; },
       "double-quant block size is 0"},
      {"nf4:double",
       [](compiler::Graph& g, const Ids& i) { g.values[i.fc].quant.dq_offset = std::nanf(""); },
       "double-quant offset is not finite"},
      {"fp8_e4m3",
       [](compiler::Graph& g, const Ids& i) {
         resize_constant(g.values[g.values[i.fc].quant.scale], 23);
       },
       "quant scale (value"},
      {"fp8_e4m3",
       [](compiler::Graph& g, const Ids& i) {
         g.values[i.fc].quant.granularity = QuantSpec::Granularity::PerTensor;
       },
       "has 24 elements, expected 1"},
      {"fp8_e4m3:block=16",
       [](compiler::Graph& g, const Ids& i) { g.values[i.fc].quant.block_cols = 8; },
       "has 6 elements, expected 10"},
      {"fp8_e5m2",
       [](compiler::Graph& g, const Ids& i) {
         g.values[i.fc].quant.scheme = QuantSpec::Scheme::NF4;
       },
       "NF4 quantization on a fp8_e5m2 tensor"},
      {"fp8_e5m2",
       [](compiler::Graph& g, const Ids& i) {
         compiler::Value& s = g.values[g.values[i.fc].quant.scale];
         s.dtype = DType::U8;
         s.data.mutable_vector().resize(24);
       },
       "has dtype u8, expected f32"},
  };
  for (const Case& c : cases) {
    const std::string msg = load_error_of(c.scheme, c.corrupt);
    EXPECT_EQ(msg.rfind("compile: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << "expected '" << c.expect << "' in: " << msg;
    EXPECT_NE(msg.find(c.tensor), std::string::npos) << msg;
  }
  // Intact, each of these loads.
  for (const char* scheme : {"nf4", "nf4:double", "fp8_e4m3", "fp8_e4m3:block=16", "fp8_e5m2"}) {
    EXPECT_EQ(load_error_of(scheme, [](compiler::Graph&, const Ids&) {}), "loaded") << scheme;
  }
}

TEST(QuantizedProgramVerification, PackedDataShorterThanItsShapeIsRefused) {
  // An nf4 [2, 64] weight needs 64 packed bytes; its segment holds 48.
  testing::RawProgram p = testing::valid_raw_program();
  p.area.resize(192);
  p.segments.push_back(testing::RawSegment{64, 48, 64, std::nullopt});
  p.segments.push_back(testing::RawSegment{128, 8, 64, std::nullopt});
  testing::RawValue q = testing::raw_f32_tensor({2, 64}, 1, 1, 0);
  q.tensor.dtype = static_cast<uint8_t>(DType::NF4);
  q.tensor.name = "packed.weight";
  testing::RawQuant quant;
  quant.scheme = static_cast<uint8_t>(fb::QuantScheme::NF4);
  quant.block_size = 64;
  quant.absmax = 5;
  q.tensor.quant = quant;
  p.methods[0].values.push_back(q);
  p.methods[0].values.push_back(testing::raw_f32_tensor({2}, 1, 2, 0));
  const std::vector<uint8_t> bytes = testing::assemble(p);
  try {
    testing::LoadedProgram lp(bytes);
    ADD_FAILURE() << "loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor bytes [0, +64) exceed segment 1 of 48 bytes"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tern
