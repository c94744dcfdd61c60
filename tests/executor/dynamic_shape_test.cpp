// Bounded-dynamic shapes end to end (docs/dynamic-shapes.md): a program with a dynamic "seq"
// dim runs at several sizes against values worked by formula; beyond-bound, static-dim, rank
// and symbol-disagreement errors; kernels that do not take dynamic shapes fail at load; and a
// property test running a small transformer block at random sizes within the bound against
// the same graph compiled statically at that size.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/kernels/portable/register_portable_kernels.h"
#include "tests/executor/method_test_util.h"

namespace tern {
namespace {

using compiler::GraphBuilder;
using testing::f32_view;

std::vector<float> ramp(size_t n, float start, float step) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + step * static_cast<float>(i);
  return v;
}

constexpr int64_t kMaxSeq = 8;

/// x [1, seq<=8, 4] -> linear(w [3, 4], b [3]) -> silu -> y [1, seq, 3];
/// plus y2 = view(y, [seq, 3]) through an int list that follows seq.
std::vector<uint8_t> linear_silu_program() {
  GraphBuilder b("forward");
  const int seq = b.symbol("seq", 1, kMaxSeq);
  const int x = b.input("x", DType::F32, {1, kMaxSeq, 4});
  b.dynamic_dims(x, {-1, seq, -1});
  const int w = b.constant_f32("w", {3, 4}, ramp(12, -1.0f, 0.2f));
  const int bias = b.constant_f32("b", {3}, {0.5f, -0.25f, 0.0f});
  const int h = b.op("tern::linear", {x, w, bias}, DType::F32, {1, kMaxSeq, 3}, "fc");
  b.dynamic_dims(h, {-1, seq, -1});
  const int y = b.op("tern::silu", {h}, DType::F32, {1, kMaxSeq, 3}, "act");
  b.dynamic_dims(y, {-1, seq, -1});
  const int shape = b.int_list({kMaxSeq, 3});
  b.int_symbols(shape, {seq, -1});
  const int y2 = b.op("tern::view", {y, shape}, DType::F32, {kMaxSeq, 3}, "flat");
  b.dynamic_dims(y2, {seq, -1});
  b.output(y);
  b.output(y2);
  return testing::compile_graph(b.build());
}

/// silu(x · wᵀ + b), worked in double from the same ramps.
std::vector<float> expected_linear_silu(const std::vector<float>& x, int64_t seq) {
  const std::vector<float> w = ramp(12, -1.0f, 0.2f);
  const float bias[3] = {0.5f, -0.25f, 0.0f};
  std::vector<float> out;
  for (int64_t s = 0; s < seq; ++s) {
    for (int o = 0; o < 3; ++o) {
      double acc = bias[o];
      for (int i = 0; i < 4; ++i) acc += double(x[s * 4 + i]) * double(w[o * 4 + i]);
      out.push_back(static_cast<float>(acc / (1.0 + std::exp(-acc))));
    }
  }
  return out;
}

class DynamicShapeTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(register_portable_kernels(), Error::Ok); }
};

TEST_F(DynamicShapeTest, RunsAtSeveralSizesWithinTheBound) {
  testing::LoadedProgram lp(linear_silu_program());
  MethodMeta meta = lp.program().method_meta("forward").get();
  ASSERT_EQ(meta.num_symbols(), 1u);
  EXPECT_STREQ(meta.symbol(0)->name, "seq");
  EXPECT_EQ(meta.symbol(0)->max, kMaxSeq);
  TensorInfo info = meta.input_tensor_info(0).get();
  ASSERT_EQ(info.dim_symbols.size(), 3u);
  EXPECT_EQ(info.dim_symbols[1], 0);
  EXPECT_EQ(info.sizes[1], kMaxSeq);
  testing::MethodMemory memory(meta);
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << last_error_message();
  for (int64_t seq : {int64_t{3}, int64_t{1}, kMaxSeq, int64_t{5}}) {
    std::vector<int64_t> sizes = {1, seq, 4};
    std::vector<float> x = ramp(static_cast<size_t>(seq * 4), 0.3f * float(seq), -0.17f);
    ASSERT_EQ(method->set_input(0, f32_view(sizes, x)), Error::Ok) << last_error_message();
    ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
    const TensorView* y = method->output(0).get();
    ASSERT_EQ(y->rank, 3u);
    EXPECT_EQ(y->sizes[0], 1);
    EXPECT_EQ(y->sizes[1], seq);
    EXPECT_EQ(y->sizes[2], 3);
    EXPECT_EQ(y->nbytes, static_cast<uint64_t>(seq * 3 * 4));
    const std::vector<float> want = expected_linear_silu(x, seq);
    const std::vector<float> got = testing::to_vector(*y);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "seq " << seq;
    const TensorView* y2 = method->output(1).get();
    ASSERT_EQ(y2->rank, 2u);
    EXPECT_EQ(y2->sizes[0], seq);
    EXPECT_EQ(testing::to_vector(*y2), got);
  }
}

TEST_F(DynamicShapeTest, BeyondTheBoundNamesMethodInputDimBoundAndSize) {
  testing::LoadedProgram lp(linear_silu_program());
  testing::MethodMemory memory(lp.program().method_meta("forward").get());
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << last_error_message();
  std::vector<int64_t> sizes = {1, kMaxSeq + 1, 4};
  std::vector<float> x(static_cast<size_t>((kMaxSeq + 1) * 4), 1.0f);
  EXPECT_EQ(method->set_input(0, f32_view(sizes, x)), Error::InvalidArgument);
  EXPECT_EQ(std::string(last_error_message()),
            "method 'forward': input 0 ('x'): dim 1 ('seq') is 9, beyond its bound 8 (the "
            "program was exported with seq <= 8)");

  std::vector<int64_t> zero = {1, 0, 4};
  std::vector<float> none;
  EXPECT_EQ(method->set_input(0, f32_view(zero, none)), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("below its minimum 1"), std::string::npos)
      << last_error_message();

  std::vector<int64_t> wide = {1, 2, 5};
  std::vector<float> w(10, 1.0f);
  EXPECT_EQ(method->set_input(0, f32_view(wide, w)), Error::InvalidArgument);
  EXPECT_EQ(std::string(last_error_message()),
            "method 'forward': input 0 ('x'): dim 2 is static and must be 4, got 5");

  std::vector<int64_t> flat = {2, 4};
  std::vector<float> f(8, 1.0f);
  EXPECT_EQ(method->set_input(0, f32_view(flat, f)), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("expected a rank-3 f32 tensor, got rank 2"),
            std::string::npos)
      << last_error_message();

  std::vector<int64_t> ok = {1, 2, 4};
  std::vector<float> short_data(7, 1.0f);  // nbytes of 7 floats for 8 elements
  EXPECT_EQ(method->set_input(0, f32_view(ok, short_data)), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("expected 32 bytes"), std::string::npos)
      << last_error_message();

  // A refused set_input after a good one leaves the input unset, not half-updated.
  std::vector<float> good(8, 0.5f);
  ASSERT_EQ(method->set_input(0, f32_view(ok, good)), Error::Ok) << last_error_message();
  std::vector<int64_t> three = {1, 3, 4};
  std::vector<float> good3(12, 0.5f);
  TensorView strided = f32_view(three, good3);
  const uint8_t order[3] = {0, 2, 1};
  strided.dim_order = order;
  EXPECT_EQ(method->set_input(0, strided), Error::InvalidArgument);
  EXPECT_EQ(method->execute(), Error::InvalidState);
  EXPECT_NE(std::string(last_error_message()).find("has not been set"), std::string::npos)
      << last_error_message();
}

TEST_F(DynamicShapeTest, InputsSharingASymbolMustAgree) {
  GraphBuilder b("forward");
  const int seq = b.symbol("seq", 1, 6);
  const int x = b.input("x", DType::F32, {6, 2});
  b.dynamic_dims(x, {seq, -1});
  const int y = b.input("y", DType::F32, {6, 2});
  b.dynamic_dims(y, {seq, -1});
  const int z = b.op("tern::add", {x, y}, DType::F32, {6, 2}, "sum");
  b.dynamic_dims(z, {seq, -1});
  b.output(z);
  testing::LoadedProgram lp(testing::compile_graph(b.build()));
  testing::MethodMemory memory(lp.program().method_meta("forward").get());
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << last_error_message();
  std::vector<int64_t> s3 = {3, 2}, s4 = {4, 2};
  std::vector<float> a = ramp(6, 1, 1), c = ramp(8, 10, 1);
  ASSERT_EQ(method->set_input(0, f32_view(s3, a)), Error::Ok);
  ASSERT_EQ(method->set_input(1, f32_view(s4, c)), Error::Ok);
  EXPECT_EQ(method->execute(), Error::InvalidArgument);
  EXPECT_EQ(std::string(last_error_message()),
            "method 'forward': inputs 0 ('x') and 1 ('y') disagree on dynamic dim 'seq': 3 and 4");
  std::vector<float> c3 = ramp(6, 10, 1);
  ASSERT_EQ(method->set_input(1, f32_view(s3, c3)), Error::Ok);
  ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
  const std::vector<float> got = testing::to_vector(*method->output(0).get());
  ASSERT_EQ(got.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(got[i], a[i] + c3[i]);
}

TEST_F(DynamicShapeTest, KernelWithoutDynamicSupportFailsAtLoad) {
  GraphBuilder b("forward");
  const int seq = b.symbol("seq", 1, 6);
  const int x = b.input("x", DType::F32, {1, 6, 2});
  b.dynamic_dims(x, {-1, seq, -1});
  const int y =
      b.op("tern::pad", {x, b.int_list({1, 1}), b.string_value("constant"), b.double_value(0.0)},
           DType::F32, {1, 6, 4}, "padded");
  b.dynamic_dims(y, {-1, seq, -1});
  b.output(y);
  testing::LoadedProgram lp(testing::compile_graph(b.build()));
  testing::MethodMemory memory(lp.program().method_meta("forward").get());
  auto method = lp.program().load_method("forward", memory.manager());
  ASSERT_FALSE(method.ok());
  EXPECT_EQ(method.error(), Error::NotSupported);
  EXPECT_EQ(std::string(last_error_message()),
            "method 'forward': instruction 0 (op 'tern::pad', 'padded') takes the dynamic-shaped "
            "tensor 'x', but the 'tern::pad' kernel does not support dynamic shapes "
            "(docs/dynamic-shapes.md lists those that do)");
}

/// A transformer-ish block over x [1, S, 8] (S = `seq`, or the bound with a dynamic dim):
/// rms_norm -> q/k/v linears -> view [1, S, 2, 4] -> transpose -> causal sdpa -> transpose ->
/// reshape [1, S, 8] -> linear -> + x -> layer_norm -> gelu; softmax over the last dim;
/// mean over S (keepdim) and neg, cos, sin, mul broadcasting.
compiler::Graph transformer_block(int64_t seq, bool dynamic) {
  GraphBuilder b("forward");
  const int s = dynamic ? b.symbol("seq", 1, seq) : -1;
  auto tag = [&](int id, std::vector<int> dims) {
    if (dynamic) b.dynamic_dims(id, std::move(dims));
  };
  auto shape = [&](std::vector<int64_t> v, std::vector<int> syms) {
    const int id = b.int_list(std::move(v));
    if (dynamic) b.int_symbols(id, std::move(syms));
    return id;
  };
  const int D = 8;
  const int x = b.input("x", DType::F32, {1, seq, D});
  tag(x, {-1, s, -1});
  auto weight = [&](const std::string& name, int64_t rows, int64_t cols, float start) {
    return b.constant_f32(
        name, {rows, cols},
        ramp(static_cast<size_t>(rows * cols), start, 0.37f / float(rows * cols)));
  };
  const int g = b.constant_f32("g", {D}, ramp(D, 0.8f, 0.05f));
  const int n = b.op("tern::rms_norm", {x, b.int_list({D}), g, b.double_value(1e-6)}, DType::F32,
                     {1, seq, D}, "norm");
  tag(n, {-1, s, -1});
  int heads[3];
  const char* names[3] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    const int w = weight(std::string("w") + names[i], D, D, -0.2f + 0.1f * float(i));
    const int p = b.op("tern::linear", {n, w, b.none()}, DType::F32, {1, seq, D}, names[i]);
    tag(p, {-1, s, -1});
    const int v =
        b.op("tern::view", {p, shape({1, seq, 2, 4}, {-1, s, -1, -1})}, DType::F32, {1, seq, 2, 4});
    tag(v, {-1, s, -1, -1});
    heads[i] =
        b.op("tern::transpose", {v, b.int_value(1), b.int_value(2)}, DType::F32, {1, 2, seq, 4});
    tag(heads[i], {-1, -1, s, -1});
  }
  const int att = b.op("tern::scaled_dot_product_attention",
                       {heads[0], heads[1], heads[2], b.none(), b.bool_value(true), b.none()},
                       DType::F32, {1, 2, seq, 4}, "sdpa");
  tag(att, {-1, -1, s, -1});
  const int back =
      b.op("tern::transpose", {att, b.int_value(1), b.int_value(2)}, DType::F32, {1, seq, 2, 4});
  tag(back, {-1, s, -1, -1});
  const int merged =
      b.op("tern::reshape", {back, shape({1, seq, D}, {-1, s, -1})}, DType::F32, {1, seq, D});
  tag(merged, {-1, s, -1});
  const int o = b.op("tern::linear", {merged, weight("wo", D, D, 0.1f), b.none()}, DType::F32,
                     {1, seq, D}, "o");
  tag(o, {-1, s, -1});
  const int res = b.op("tern::add", {o, x}, DType::F32, {1, seq, D}, "residual");
  tag(res, {-1, s, -1});
  const int ln =
      b.op("tern::layer_norm", {res, b.int_list({D}), b.none(), b.none(), b.double_value(1e-5)},
           DType::F32, {1, seq, D}, "ln");
  tag(ln, {-1, s, -1});
  const int act = b.op("tern::gelu", {ln, b.string_value("none")}, DType::F32, {1, seq, D}, "gelu");
  tag(act, {-1, s, -1});
  const int sm = b.op("tern::softmax", {act, b.int_value(-1)}, DType::F32, {1, seq, D}, "softmax");
  tag(sm, {-1, s, -1});
  const int mean =
      b.op("tern::mean", {act, b.int_list({1}), b.bool_value(true)}, DType::F32, {1, 1, D}, "mean");
  const int neg = b.op("tern::neg", {mean}, DType::F32, {1, 1, D});
  const int cs = b.op("tern::cos", {act}, DType::F32, {1, seq, D});
  tag(cs, {-1, s, -1});
  const int sn = b.op("tern::sin", {cs}, DType::F32, {1, seq, D});
  tag(sn, {-1, s, -1});
  const int prod = b.op("tern::mul", {sn, neg}, DType::F32, {1, seq, D}, "broadcast_mul");
  tag(prod, {-1, s, -1});
  b.output(sm);
  b.output(prod);
  b.output(neg);
  return b.build();
}

std::vector<std::vector<float>> run_once(const Program& program, int64_t seq,
                                         std::vector<float>& x) {
  testing::MethodMemory memory(program.method_meta("forward").get());
  auto method = program.load_method("forward", memory.manager());
  if (!method.ok()) throw std::runtime_error(last_error_message());
  std::vector<int64_t> sizes = {1, seq, 8};
  if (method->set_input(0, f32_view(sizes, x)) != Error::Ok || method->execute() != Error::Ok) {
    throw std::runtime_error(last_error_message());
  }
  std::vector<std::vector<float>> out;
  for (size_t i = 0; i < method->num_outputs(); ++i) {
    out.push_back(testing::to_vector(*method->output(i).get()));
  }
  return out;
}

TEST_F(DynamicShapeTest, PropertyRandomSizesMatchTheStaticProgram) {
  constexpr int64_t kBound = 24;
  testing::LoadedProgram dynamic(testing::compile_graph(transformer_block(kBound, true)));
  testing::MethodMemory memory(dynamic.program().method_meta("forward").get());
  auto method = dynamic.program().load_method("forward", memory.manager());
  ASSERT_TRUE(method.ok()) << last_error_message();
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int64_t> pick(1, kBound);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<int64_t> sizes = {1, kBound, 1};
  for (int round = 0; round < 12; ++round) {
    const int64_t seq = round == 0 ? kBound : round == 1 ? 1 : pick(rng);
    std::vector<float> x(static_cast<size_t>(seq * 8));
    for (float& v : x) v = normal(rng);
    // The same graph compiled statically at this size (its kernels are tested against
    // PyTorch op by op in tests/ops).
    testing::LoadedProgram fixed(testing::compile_graph(transformer_block(seq, false)));
    const std::vector<std::vector<float>> want = run_once(fixed.program(), seq, x);
    std::vector<int64_t> in_sizes = {1, seq, 8};
    ASSERT_EQ(method->set_input(0, f32_view(in_sizes, x)), Error::Ok) << last_error_message();
    ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
    ASSERT_EQ(method->num_outputs(), want.size());
    for (size_t o = 0; o < want.size(); ++o) {
      const std::vector<float> got = testing::to_vector(*method->output(o).get());
      ASSERT_EQ(got.size(), want[o].size()) << "seq " << seq << " output " << o;
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(got[i], want[o][i], 1e-6f * (1.0f + std::fabs(want[o][i])))
            << "seq " << seq << " output " << o << " element " << i;
      }
    }
  }
}

/// The data-movement and product ops of a decoder on token ids [1, S] (S = `seq`, or the
/// bound with a dynamic dim): embedding -> permute -> slice (static dim) -> cat -> index_select;
/// matmul with a constant; bmm of the embedding with its own permute ([1, S, S]); a slice along
/// the dynamic dim whose end follows the symbol.
compiler::Graph data_movement_block(int64_t seq, bool dynamic) {
  GraphBuilder b("forward");
  const int s = dynamic ? b.symbol("seq", 1, seq) : -1;
  auto tag = [&](int id, std::vector<int> dims) {
    if (dynamic) b.dynamic_dims(id, std::move(dims));
  };
  auto bytes_of = [](const std::vector<int64_t>& v) {
    std::vector<uint8_t> out(v.size() * sizeof(int64_t));
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  };
  const int ids = b.input("ids", DType::I64, {1, seq});
  tag(ids, {-1, s});
  const int table = b.constant_f32("table", {10, 8}, ramp(80, -1.0f, 0.031f));
  const int emb = b.op("tern::embedding", {table, ids}, DType::F32, {1, seq, 8}, "embed");
  tag(emb, {-1, s, -1});
  const int per = b.op("tern::permute", {emb, b.int_list({0, 2, 1})}, DType::F32, {1, 8, seq});
  tag(per, {-1, -1, s});
  const int half =
      b.op("tern::slice", {per, b.int_value(1), b.int_value(2), b.int_value(6), b.int_value(1)},
           DType::F32, {1, 4, seq}, "slice_static");
  tag(half, {-1, -1, s});
  compiler::Value list;
  list.kind = compiler::Value::Kind::TensorList;
  list.tensors = {half, per};
  b.graph().values.push_back(list);
  const int list_id = static_cast<int>(b.graph().values.size()) - 1;
  const int cat = b.op("tern::cat", {list_id, b.int_value(1)}, DType::F32, {1, 12, seq}, "cat");
  tag(cat, {-1, -1, s});
  const int idx = b.constant("idx", DType::I64, {3}, bytes_of({11, 0, 5}));
  const int picked =
      b.op("tern::index_select", {cat, b.int_value(1), idx}, DType::F32, {1, 3, seq}, "pick");
  tag(picked, {-1, -1, s});
  const int w = b.constant_f32("w", {8, 5}, ramp(40, 0.5f, -0.027f));
  const int mm = b.op("tern::matmul", {emb, w}, DType::F32, {1, seq, 5}, "matmul");
  tag(mm, {-1, s, -1});
  const int gram = b.op("tern::bmm", {emb, per}, DType::F32, {1, seq, seq}, "bmm");
  tag(gram, {-1, s, s});
  const int end = b.int_value(seq);
  if (dynamic) b.int_symbols(end, {s});
  const int dyn_slice =
      b.op("tern::slice", {emb, b.int_value(1), b.int_value(0), end, b.int_value(1)}, DType::F32,
           {1, seq, 8}, "slice_dynamic");
  tag(dyn_slice, {-1, s, -1});
  for (int out : {picked, mm, gram, dyn_slice}) b.output(out);
  return b.build();
}

std::vector<std::vector<float>> run_ids(const Program& program, std::vector<int64_t>& ids) {
  testing::MethodMemory memory(program.method_meta("forward").get());
  auto method = program.load_method("forward", memory.manager());
  if (!method.ok()) throw std::runtime_error(last_error_message());
  std::vector<int64_t> sizes = {1, static_cast<int64_t>(ids.size())};
  TensorView view;
  view.dtype = DType::I64;
  view.rank = 2;
  view.sizes = sizes.data();
  view.data = ids.data();
  view.nbytes = ids.size() * sizeof(int64_t);
  if (method->set_input(0, view) != Error::Ok || method->execute() != Error::Ok) {
    throw std::runtime_error(last_error_message());
  }
  std::vector<std::vector<float>> out;
  for (size_t i = 0; i < method->num_outputs(); ++i) {
    const TensorView* t = method->output(i).get();
    std::vector<float> v = testing::to_vector(*t);
    v.push_back(static_cast<float>(t->rank));  // the shape takes part in the comparison
    for (uint32_t d = 0; d < t->rank; ++d) v.push_back(static_cast<float>(t->sizes[d]));
    out.push_back(std::move(v));
  }
  return out;
}

TEST_F(DynamicShapeTest, PropertyDataMovementAtRandomSizesMatchesTheStaticProgram) {
  constexpr int64_t kBound = 16;
  testing::LoadedProgram dynamic(testing::compile_graph(data_movement_block(kBound, true)));
  std::mt19937 rng(99);
  std::uniform_int_distribution<int64_t> pick(1, kBound);
  std::uniform_int_distribution<int64_t> token(0, 9);
  for (int round = 0; round < 8; ++round) {
    const int64_t seq = round == 0 ? kBound : round == 1 ? 1 : pick(rng);
    std::vector<int64_t> ids(static_cast<size_t>(seq));
    for (int64_t& t : ids) t = token(rng);
    testing::LoadedProgram fixed(testing::compile_graph(data_movement_block(seq, false)));
    EXPECT_EQ(run_ids(dynamic.program(), ids), run_ids(fixed.program(), ids)) << "seq " << seq;
  }
}

}  // namespace
}  // namespace tern
