// View values and the fused LSTM cell (cpu blob version 18). A split's chunk, a slice of whole
// rows or a reshape of a value tern's kernels made is read in place, as a contiguous run of its
// base's elements, instead of being copied by a StridedCopy node; an LSTM cell written out
// (split gates, sigmoids, tanhs, products) is one LstmCell node (op 37) whose c' and h' are
// views of its output, a GRU cell one GruCell node (op 40). Conformance against the portable kernels (harness:
// cpu_conformance_util.h) of unrolled LSTM and GRU steps, a cell with a constant state, chunks of
// an XNNPACK stage's output read in the same stage, views of views and a strided slice that
// must stay a copy; then what the reader checks in a View value's and the cell nodes' fields.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backends/cpu/cpu_blob_format.h"
#include "backends/cpu/runtime/blob_reader.h"
#include "tests/backends/cpu/cpu_conformance_util.h"
#include "tests/backends/cpu/cpu_test_util.h"

namespace tern::cpu_test {
namespace {

constexpr uint32_t kCopyOp = static_cast<uint32_t>(cpu::NodeOp::StridedCopy);
constexpr uint32_t kViewKind = static_cast<uint32_t>(cpu::ValueKind::View);

/// The value records of `blob`.
std::vector<cpu::BlobValue> blob_values(const std::vector<uint8_t>& blob) {
  cpu::BlobHeader h;
  std::memcpy(&h, blob.data(), sizeof(h));
  std::vector<cpu::BlobValue> values(h.num_values);
  std::memcpy(values.data(), blob.data() + sizeof(cpu::BlobHeader),
              sizeof(cpu::BlobValue) * h.num_values);
  return values;
}

size_t count_views(const std::vector<uint8_t>& blob) {
  const std::vector<cpu::BlobValue> v = blob_values(blob);
  return static_cast<size_t>(
      std::count_if(v.begin(), v.end(), [](const cpu::BlobValue& x) { return x.kind == kViewKind; }));
}

std::vector<int64_t> with(std::vector<int64_t> s, size_t dim, int64_t size) {
  s[dim] = size;
  return s;
}

int linear(GraphBuilder& b, int x, const std::vector<int64_t>& xs, int64_t out, uint32_t seed) {
  const int w = constant(b, "fc_w" + std::to_string(seed), {out, xs.back()}, seed, 0.3f);
  const int bias = constant(b, "fc_b" + std::to_string(seed), {out}, seed + 1, 0.3f);
  return b.op("tern::linear", {x, w, bias}, DType::F32, with(xs, xs.size() - 1, out));
}

int view(GraphBuilder& b, int x, std::vector<int64_t> to) {
  return b.op("tern::view", {x, b.int_list(to)}, DType::F32, to);
}

int binary(GraphBuilder& b, const char* op, int x, int y, const std::vector<int64_t>& s) {
  return b.op(op, {x, y}, DType::F32, s);
}

/// tern::split of `v` along `dim` into `parts` equal pieces of `piece` sizes.
std::vector<int> split_equal(GraphBuilder& b, int v, int64_t parts, int64_t dim,
                             const std::vector<int64_t>& piece) {
  const std::vector<int64_t> sizes(static_cast<size_t>(parts), piece[static_cast<size_t>(dim)]);
  const int first =
      b.op("tern::split", {v, b.int_list(sizes), b.int_value(dim)}, DType::F32, piece);
  compiler::Node& node = b.graph().nodes.back();
  for (int64_t i = 1; i < parts; ++i) {
    b.graph().values.push_back(b.graph().values[static_cast<size_t>(first)]);
    node.outputs.push_back(static_cast<int>(b.graph().values.size()) - 1);
  }
  return node.outputs;
}

int select(GraphBuilder& b, int x, std::vector<int64_t> xs, int64_t dim, int64_t index) {
  xs.erase(xs.begin() + dim);
  return b.op("tern::select", {x, b.int_value(dim), b.int_value(index)}, DType::F32, xs);
}

/// `steps` steps of an LSTM layer (hidden h) over x [steps, 1, in] as torch.export unrolls it:
/// the input projection of every step at once, then per step gates = h W + b + its row of the
/// projection, split in four, c = σ(f) c + σ(i) tanh(g), h = σ(o) tanh(c). Outputs h and c.
void lstm_steps(GraphBuilder& b, int64_t steps, int64_t in, int64_t h) {
  const int x = b.input("x", DType::F32, {steps, 1, in});
  const int p = linear(b, x, {steps, 1, in}, 4 * h, 11);  // [steps, 1, 4h]
  int hv = b.input("h0", DType::F32, {1, h});
  int cv = b.input("c0", DType::F32, {1, 1, h});
  const std::vector<int64_t> gate{1, 1, h};
  for (int64_t t = 0; t < steps; ++t) {
    const int xt = select(b, p, {steps, 1, 4 * h}, 0, t);                     // [1, 4h]
    const int rec =
        view(b, linear(b, hv, {1, h}, 4 * h, 21 + 2 * static_cast<uint32_t>(t)), {1, 1, 4 * h});
    const int g = binary(b, "tern::add", rec, xt, {1, 1, 4 * h});
    const std::vector<int> parts = split_equal(b, g, 4, 2, gate);
    const int i = b.op("tern::sigmoid", {parts[0]}, DType::F32, gate);
    const int f = b.op("tern::sigmoid", {parts[1]}, DType::F32, gate);
    const int gg = b.op("tern::tanh", {parts[2]}, DType::F32, gate);
    const int o = b.op("tern::sigmoid", {parts[3]}, DType::F32, gate);
    cv = binary(b, "tern::add", binary(b, "tern::mul", f, cv, gate),
                binary(b, "tern::mul", i, gg, gate), gate);
    const int ht = binary(b, "tern::mul", o, b.op("tern::tanh", {cv}, DType::F32, gate), gate);
    hv = view(b, ht, {1, h});
  }
  b.output(hv);
  b.output(cv);
}

/// `steps` steps of a GRU layer (hidden h) over x [steps, 1, in] as torch.export unrolls it:
/// the input projection of every step at once, then per step gh = h W + b, both split in
/// three, r = σ(hr + xr), z = σ(hz + xz), n = tanh(xn + hn r), h = (h - n) z + n.
void gru_steps(GraphBuilder& b, int64_t steps, int64_t in, int64_t h) {
  const int x = b.input("x", DType::F32, {steps, 1, in});
  const int p = linear(b, x, {steps, 1, in}, 3 * h, 41);  // [steps, 1, 3h]
  int hv = b.input("h0", DType::F32, {1, 1, h});
  const std::vector<int64_t> gate{1, 1, h}, row{1, h};
  for (int64_t t = 0; t < steps; ++t) {
    const std::vector<int> xs = split_equal(b, select(b, p, {steps, 1, 3 * h}, 0, t), 3, 1, row);
    const int gh = view(b, linear(b, view(b, hv, {1, h}), {1, h}, 3 * h,
                                  51 + 2 * static_cast<uint32_t>(t)),
                        {1, 1, 3 * h});
    const std::vector<int> hs = split_equal(b, gh, 3, 2, gate);
    const int r = b.op("tern::sigmoid", {binary(b, "tern::add", hs[0], xs[0], gate)}, DType::F32,
                       gate);
    const int z = b.op("tern::sigmoid", {binary(b, "tern::add", hs[1], xs[1], gate)}, DType::F32,
                       gate);
    const int n = b.op("tern::tanh", {binary(b, "tern::add", xs[2],
                                             binary(b, "tern::mul", hs[2], r, gate), gate)},
                       DType::F32, gate);
    hv = binary(b, "tern::add",
                binary(b, "tern::mul", binary(b, "tern::sub", hv, n, gate), z, gate), n, gate);
  }
  b.output(hv);
}

std::vector<OpCase> cases() {
  std::vector<OpCase> c;
  OpCase lstm = {"lstm_steps_fused_cells_read_in_place",
                 [](GraphBuilder& b) { lstm_steps(b, 3, 40, 128); }, 1e-10};
  lstm.check_blob = [](const std::vector<uint8_t>& blob) {
    // Each step one LstmCell node (op 37, since version 18) taking the recurrent product and
    // its row of the projection as its two gates operands: no XNNPACK sigmoid, add or copy.
    EXPECT_EQ(count_op(blob, cpu::NodeOp::LstmCell), 3u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::StridedCopy), 0u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Sigmoid), 0u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Add), 0u);
    // Views: per step its row of the projection and the cell's c' and h'; and step 0's
    // reshape of the recurrent product (tern's GEMM made it: 128 x 512 multiply-adds a row;
    // the later steps' view -> linear -> view make the product in the reshaped dims).
    EXPECT_EQ(count_views(blob), 3u * 3u + 1u);
    const std::vector<cpu::BlobValue> values = blob_values(blob);
    for (uint32_t n = 0; n < blob_ops(blob).size(); ++n) {
      const cpu::BlobNode node = blob_node(blob, n);
      if (node.op != static_cast<uint32_t>(cpu::NodeOp::LstmCell)) continue;
      EXPECT_EQ(node.num_inputs, 3u);
      EXPECT_EQ(node.params[0], 128u);
      EXPECT_EQ(values[node.inputs[2]].kind, kViewKind) << "the step's row of the projection";
    }
  };
  c.push_back(lstm);
  // A cell whose gates are one linear's output (no add) and whose previous state is a
  // constant (torch.export's zero initial state), two rows (a batch of 2).
  OpCase cell = {"lstm_cell_constant_state_two_rows",
                 [](GraphBuilder& b) {
                   const int x = b.input("x", DType::F32, {2, 24});
                   const std::vector<int64_t> gate{2, 16};
                   const int g = linear(b, x, {2, 24}, 64, 31);
                   const std::vector<int> p = split_equal(b, g, 4, 1, gate);
                   const int c0 = constant(b, "c0", gate, 33);
                   const int i = b.op("tern::sigmoid", {p[0]}, DType::F32, gate);
                   const int f = b.op("tern::sigmoid", {p[1]}, DType::F32, gate);
                   const int gg = b.op("tern::tanh", {p[2]}, DType::F32, gate);
                   const int o = b.op("tern::sigmoid", {p[3]}, DType::F32, gate);
                   const int cn = binary(b, "tern::add", binary(b, "tern::mul", c0, f, gate),
                                         binary(b, "tern::mul", gg, i, gate), gate);
                   b.output(binary(b, "tern::mul", b.op("tern::tanh", {cn}, DType::F32, gate), o,
                                   gate));
                 },
                 1e-10};
  cell.check_blob = [](const std::vector<uint8_t>& blob) {
    ASSERT_EQ(count_op(blob, cpu::NodeOp::LstmCell), 1u);
    for (uint32_t n = 0; n < blob_ops(blob).size(); ++n) {
      const cpu::BlobNode node = blob_node(blob, n);
      if (node.op != static_cast<uint32_t>(cpu::NodeOp::LstmCell)) continue;
      EXPECT_EQ(node.num_inputs, 2u);
      EXPECT_EQ(node.params[0], 16u);
    }
  };
  c.push_back(cell);
  OpCase gru = {"gru_steps_fused_cells",
                [](GraphBuilder& b) { gru_steps(b, 3, 40, 128); }, 1e-10};
  gru.check_blob = [](const std::vector<uint8_t>& blob) {
    // Each step one GruCell node (op 40): no XNNPACK sigmoid, add, subtract or copy.
    EXPECT_EQ(count_op(blob, cpu::NodeOp::GruCell), 3u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::StridedCopy), 0u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Sigmoid), 0u);
    EXPECT_EQ(count_op(blob, cpu::NodeOp::Subtract), 0u);
  };
  c.push_back(gru);
  // Chunks (rows) of an XNNPACK stage's output read by the same stage, one chunk of a chunk
  // (a view of a view: its base is the first value), and a reshape of a chunk.
  OpCase rows = {"row_chunks_read_by_the_stage_that_makes_them",
                 [](GraphBuilder& b) {
                   const int x = b.input("x", DType::F32, {6, 20});
                   const int y = b.input("y", DType::F32, {6, 20});
                   const int s = binary(b, "tern::add", x, y, {6, 20});
                   const std::vector<int> parts = split_equal(b, s, 3, 0, {2, 20});
                   const int m = binary(b, "tern::mul", parts[0], parts[1], {2, 20});
                   const std::vector<int> halves = split_equal(b, parts[2], 2, 0, {1, 20});
                   const int q = binary(b, "tern::sub", m, view(b, halves[1], {20}), {2, 20});
                   b.output(b.op("tern::sigmoid", {q}, DType::F32, {2, 20}));
                 },
                 1e-10};
  rows.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::StridedCopy), 0u);
    const std::vector<cpu::BlobValue> v = blob_values(blob);
    bool found = false;
    for (const cpu::BlobValue& x : v) {
      // halves[1]: rows 5 of s, at element 100, and its reshape the same run.
      if (x.kind == kViewKind && x.data_offset == 100) {
        found = true;
        EXPECT_NE(v[x.view_base].kind, kViewKind);
      }
    }
    EXPECT_TRUE(found);
  };
  c.push_back(rows);
  // Every other column is no contiguous run: still one StridedCopy; a region output that is a
  // chunk is the output's own value (a copy), never a view.
  OpCase strided = {"strided_slice_and_output_chunk_are_copies",
                    [](GraphBuilder& b) {
                      const int x = b.input("x", DType::F32, {4, 12});
                      const int s = b.op("tern::sigmoid", {x}, DType::F32, {4, 12});
                      const int odd = b.op("tern::slice",
                                           {s, b.int_value(1), b.int_value(1), b.int_value(12),
                                            b.int_value(2)},
                                           DType::F32, {4, 6});
                      b.output(binary(b, "tern::mul", odd, odd, {4, 6}));
                      b.output(split_equal(b, s, 2, 0, {2, 12})[1]);
                    },
                    1e-10};
  strided.check_blob = [](const std::vector<uint8_t>& blob) {
    EXPECT_EQ(count_op(blob, cpu::NodeOp::StridedCopy), 2u);
    EXPECT_EQ(count_views(blob), 0u);
  };
  c.push_back(strided);
  return c;
}

TERN_CPU_CONFORMANCE_SUITE(CpuConformanceView, cases());

/// The blob of `build` delegated whole.
std::vector<uint8_t> blob_of(const std::function<void(GraphBuilder&)>& build) {
  GraphBuilder b;
  build(b);
  delegate_cpu(b, 0, static_cast<int>(b.num_nodes()) - 1);
  return b.graph().delegates[0].blob;
}

TEST(CpuViewBlob, ViewFieldsAreChecked) {
  register_all();
  const std::vector<uint8_t> blob = blob_of([](GraphBuilder& b) { lstm_steps(b, 2, 6, 8); });
  std::string msg;
  ASSERT_EQ(parse(blob, &msg), Error::Ok) << msg;
  const std::vector<cpu::BlobValue> values = blob_values(blob);
  uint32_t view = cpu::kNoValue, constant = cpu::kNoValue, internal = cpu::kNoValue;
  for (uint32_t i = 0; i < values.size(); ++i) {
    const auto kind = static_cast<cpu::ValueKind>(values[i].kind);
    if (kind == cpu::ValueKind::View && view == cpu::kNoValue && values[i].data_offset > 0) view = i;
    if (kind == cpu::ValueKind::Constant && constant == cpu::kNoValue) constant = i;
    if (kind == cpu::ValueKind::Internal && internal == cpu::kNoValue) internal = i;
  }
  ASSERT_NE(view, cpu::kNoValue);
  ASSERT_NE(constant, cpu::kNoValue);
  ASSERT_NE(internal, cpu::kNoValue);
  const uint64_t base_numel = cpu::value_numel(values[values[view].view_base]);
  struct ValueCase {
    const char* what;
    uint32_t index;
    std::function<void(cpu::BlobValue&)> mutate;
    std::string expect;
  };
  const uint32_t last = static_cast<uint32_t>(values.size()) - 1;
  const std::vector<ValueCase> cases = {
      {"a base at or after the view", view, [&](cpu::BlobValue& v) { v.view_base = view; },
       "expected an earlier value"},
      {"a base out of range", view, [&](cpu::BlobValue& v) { v.view_base = last + 5; },
       "expected an earlier value"},
      {"a constant base", view, [&](cpu::BlobValue& v) { v.view_base = constant; },
       "expected an internal value (kind 0)"},
      {"past the base's elements", view,
       [&](cpu::BlobValue& v) { v.data_offset = base_numel; }, "which has"},
      {"an offset that overflows", view,
       [&](cpu::BlobValue& v) { v.data_offset = ~uint64_t{0} - 2; }, "which has"},
      {"NHWC layout", view,
       [&](cpu::BlobValue& v) { v.layout = static_cast<uint32_t>(cpu::ValueLayout::Nhwc); },
       "NHWC layout needs an external"},
      {"data bytes", view, [&](cpu::BlobValue& v) { v.data_bytes = 4; },
       "4 data bytes, expected 0"},
      {"dynamic", view, [&](cpu::BlobValue& v) { v.dynamic_mask = 1; }, "dynamic mask"},
      {"a view_base on an internal value", internal,
       [&](cpu::BlobValue& v) { v.view_base = 1; }, "on a value that is no view, expected 0"},
      {"an unknown kind", view, [&](cpu::BlobValue& v) { v.kind = 7; }, "kind 7 unknown (0..6)"},
  };
  for (const ValueCase& vc : cases) {
    SCOPED_TRACE(vc.what);
    std::vector<uint8_t> bad = blob;
    cpu::BlobValue v = values[vc.index];
    vc.mutate(v);
    std::memcpy(bad.data() + sizeof(cpu::BlobHeader) + vc.index * sizeof(cpu::BlobValue), &v,
                sizeof(v));
    EXPECT_EQ(parse(bad, &msg), Error::InvalidProgram) << msg;
    EXPECT_NE(msg.find(vc.expect), std::string::npos) << msg;
  }
  // The LstmCell node's fields.
  uint32_t cell = cpu::kNoValue;
  for (uint32_t n = 0; n < blob_ops(blob).size() && cell == cpu::kNoValue; ++n) {
    if (blob_ops(blob)[n] == static_cast<uint32_t>(cpu::NodeOp::LstmCell)) cell = n;
  }
  ASSERT_NE(cell, cpu::kNoValue);
  expect_refused(
      blob, cell,
      {{"hidden 0", [](cpu::BlobNode& m) { m.params[0] = 0; }, "hidden size 0, expected 1..2^30"},
       {"hidden 4", [](cpu::BlobNode& m) { m.params[0] = 4; },
        "has last dim 8, expected the hidden size 4"},
       {"hidden 2^31", [](cpu::BlobNode& m) { m.params[0] = 1u << 31; }, "expected 1..2^30"},
       {"parameter 3", [](cpu::BlobNode& m) { m.params[3] = 1; }, "unused parameter 3 is 1"},
       {"bounds", [](cpu::BlobNode& m) { m.fparams[1] = 6.0f; }, "expected (-inf, +inf)"},
       {"gates and c swapped", [](cpu::BlobNode& m) { std::swap(m.inputs[0], m.inputs[1]); },
        "lstm_cell"},
       {"one input",
        [](cpu::BlobNode& m) {
          m.num_inputs = 1;
          m.inputs[1] = m.inputs[2] = cpu::kNoValue;
        },
        "(lstm_cell): 1 inputs, expected 2..3"},
       {"gates2 the cell state", [](cpu::BlobNode& m) { m.inputs[2] = m.inputs[1]; },
        "expected 1 rows of 4 x 8"}});
  {  // The GruCell node's fields.
    const std::vector<uint8_t> g = blob_of([](GraphBuilder& b) { gru_steps(b, 2, 6, 8); });
    uint32_t gru = cpu::kNoValue;
    for (uint32_t n = 0; n < blob_ops(g).size() && gru == cpu::kNoValue; ++n) {
      if (blob_ops(g)[n] == static_cast<uint32_t>(cpu::NodeOp::GruCell)) gru = n;
    }
    ASSERT_NE(gru, cpu::kNoValue);
    expect_refused(
        g, gru,
        {{"hidden 0", [](cpu::BlobNode& m) { m.params[0] = 0; }, "(gru_cell): hidden size 0"},
         {"hidden 4", [](cpu::BlobNode& m) { m.params[0] = 4; },
          "has last dim 8, expected the hidden size 4"},
         {"parameter 2", [](cpu::BlobNode& m) { m.params[2] = 7; }, "unused parameter 2 is 7"},
         {"bounds", [](cpu::BlobNode& m) { m.fparams[0] = 0.0f; }, "expected (-inf, +inf)"},
         {"h as the gates", [](cpu::BlobNode& m) { m.inputs[0] = m.inputs[2]; },
          "expected 1 rows of 3 x 8"},
         {"two inputs",
          [](cpu::BlobNode& m) {
            m.num_inputs = 2;
            m.inputs[2] = cpu::kNoValue;
          },
          "(gru_cell): 2 inputs, expected 3..3"}});
  }
  // A node that writes a view (no node makes one: its base's maker does).
  for (uint32_t n = 0;; ++n) {
    ASSERT_LT(n, blob_ops(blob).size()) << "no node reads the view";
    const cpu::BlobNode node = blob_node(blob, n);
    if (std::find(node.inputs, node.inputs + node.num_inputs, view) == node.inputs + node.num_inputs)
      continue;
    // The node that makes the view's base writes the view instead: refused.
    for (uint32_t m = 0; m < n; ++m) {
      cpu::BlobNode maker = blob_node(blob, m);
      if (maker.output != values[view].view_base) continue;
      std::vector<uint8_t> bad = blob;
      maker.output = view;
      std::memcpy(bad.data() + node_offset(bad, m), &maker, sizeof(maker));
      EXPECT_EQ(parse(bad, &msg), Error::InvalidProgram) << msg;
    }
    break;
  }
}

}  // namespace
}  // namespace tern::cpu_test
