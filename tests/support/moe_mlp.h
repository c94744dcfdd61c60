// A mixture of experts' MLP for the backends' grouped-product tests (cpu_quant_grouped_test,
// vulkan_grouped_test, cuda_grouped_test): x [rows, dim] -> grouped_mm(experts.w1 [experts,
// dim, hidden]) -> relu -> grouped_mm(experts.w2 [experts, hidden, out]), the group ends an
// input of dtype `ends` (the routing runs outside the delegates: int32 as transformers makes
// them, or int64). Inputs: x, then ends; output: y [rows, out]. run_moe executes its program.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/span.h"
#include "tests/executor/method_test_util.h"
#include "tests/support/backend_test_values.h"
#include "tools/compiler/graph_builder.h"

namespace tern::test_support {

struct MoeShape {
  int64_t rows, experts, dim, hidden, out;
};

/// The model's graph (random weights, seeds 1 and 2, in [-0.2, 0.2] and [-0.2, 0.2]·scale).
inline compiler::Graph moe_mlp(const MoeShape& s, DType ends, float scale = 1.0f) {
  compiler::GraphBuilder g;
  const int x = g.input("x", DType::F32, {s.rows, s.dim});
  const int e = g.input("ends", ends, {s.experts});
  const int w1 = g.constant_f32("experts.w1", {s.experts, s.dim, s.hidden},
                                random_floats(s.experts * s.dim * s.hidden, 1, -0.2f * scale,
                                              0.2f * scale));
  const int w2 = g.constant_f32("experts.w2", {s.experts, s.hidden, s.out},
                                random_floats(s.experts * s.hidden * s.out, 2, -0.2f * scale,
                                              0.2f * scale));
  const int h = g.op("tern::grouped_mm", {x, w1, e}, DType::F32, {s.rows, s.hidden});
  const int r = g.op("tern::relu", {h}, DType::F32, {s.rows, s.hidden});
  g.output(g.op("tern::grouped_mm", {r, w2, e}, DType::F32, {s.rows, s.out}));
  return g.build();
}

/// One execute of the model's program: its error (and message), y, and each delegate call's path.
struct MoeRun {
  Error error = Error::Ok;
  std::string message;
  std::vector<float> y;
  std::vector<DelegatePath> paths;
};

/// Loads `pte` once (`disabled_backend`, when given, disabled for the load: its delegates run
/// their portable fallback), sets x = random_floats(rows * dim, 7) and, for each routing in
/// turn, the ends (as `ends_dtype`) and executes forward: one MoeRun per routing (a delegate's
/// first execute and its replays).
inline std::vector<MoeRun> run_moe(const std::vector<uint8_t>& pte, const MoeShape& s,
                                   DType ends_dtype,
                                   const std::vector<std::vector<int64_t>>& routings,
                                   const char* disabled_backend = nullptr) {
  std::vector<MoeRun> all;
  testing::LoadedProgram lp(pte);
  testing::MethodMemory memory(lp.program().method_meta("forward").get(), -1, 0, 8 << 20);
  const char* disabled[] = {disabled_backend};
  MethodLoadOptions options;
  if (disabled_backend != nullptr) options.disabled_backends = Span<const char* const>(disabled, 1);
  auto method = lp.program().load_method("forward", memory.manager(), options);
  EXPECT_TRUE(method.ok()) << last_error_message();
  if (!method.ok()) return all;
  std::vector<float> xs = random_floats(static_cast<size_t>(s.rows * s.dim), 7);
  std::vector<int64_t> xsizes{s.rows, s.dim}, esizes{s.experts};
  EXPECT_EQ(method->set_input(0, testing::f32_view(xsizes, xs)), Error::Ok);
  for (const std::vector<int64_t>& ends : routings) {
    MoeRun out;
    std::vector<int32_t> e32(ends.begin(), ends.end());
    std::vector<int64_t> e64 = ends;
    TensorView ev;
    ev.dtype = ends_dtype;
    ev.rank = 1;
    ev.sizes = esizes.data();
    ev.data = ends_dtype == DType::I32 ? static_cast<void*>(e32.data()) : e64.data();
    ev.nbytes = ends.size() * (ends_dtype == DType::I32 ? 4 : 8);
    EXPECT_EQ(method->set_input(1, ev), Error::Ok) << last_error_message();
    out.error = method->execute();
    if (out.error != Error::Ok) {
      out.message = last_error_message();
    } else {
      out.y = testing::to_vector(*method->output(0).get());
      for (size_t i = 0; i < method->num_delegate_calls(); ++i) {
        out.paths.push_back(method->delegate_path(i).get());
      }
    }
    all.push_back(out);
  }
  return all;
}

}  // namespace tern::test_support
