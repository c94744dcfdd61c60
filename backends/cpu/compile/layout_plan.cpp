#include "backends/cpu/compile/layout_plan.h"

#include <functional>
#include <string>

#include "backends/cpu/compile/channel_mix_match.h"
#include "backends/cpu/compile/group_sum_match.h"
#include "backends/cpu/compile/index_map_ops.h"
#include "backends/cpu/compile/node_attrs.h"
#include "backends/cpu/compile/norm_parts.h"
#include "backends/cpu/compile/where_select.h"
#include "backends/cpu/cpu_blob_format.h"

namespace tern::compiler::cpu_compile {
namespace {

const std::vector<int64_t> kToChannelsLast = {0, 2, 3, 1};
const std::vector<int64_t> kToChannelsFirst = {0, 3, 1, 2};

bool is_4d_tensor(const Graph& g, int id) {
  if (id < 0 || static_cast<size_t>(id) >= g.values.size()) return false;
  const Value& v = g.values[static_cast<size_t>(id)];
  return v.is_tensor() && v.sizes.size() == 4;
}

bool is_binary(const std::string& op) {
  return op == "tern::add" || op == "tern::sub" || op == "tern::mul" || op == "tern::div" ||
         op == "tern::maximum" || op == "tern::minimum";
}

/// Ops whose output keeps the layout of their activation operands.
bool follows_operands(const std::string& op) {
  return op == "tern::layer_norm" || op == "tern::rms_norm" || op == "tern::linear" ||
         op == "tern::gelu" ||
         op == "tern::relu" || op == "tern::hardtanh" || op == "tern::clamp" ||
         op == "tern::leaky_relu" ||
         op == "tern::hardswish" || op == "tern::sigmoid" || op == "tern::hardsigmoid" ||
         op == "tern::silu" || op == "tern::softmax" || op == "tern::pad" || op == "tern::pow" ||
         op == "tern::rsqrt" || op == "tern::tanh" || op == "tern::neg" || op == "tern::where" ||
         op == "tern::sqrt" || op == "tern::abs" || op == "tern::reciprocal" ||
         is_unary_math_op(op) ||
         op == "tern::cumsum" || is_binary(op);
}

/// How a mean or sum of a 4-D x reads it (ReductionAttrs): 0 not such a node (or not taken),
/// else a mask of kReadsPlain (consecutive dims of row-major data) and kReadsNhwc (H, W of an
/// NHWC tensor). With both it keeps its input's layout.
constexpr uint8_t kReadsPlain = 1, kReadsNhwc = 2;
uint8_t reduction_reads(const Graph& g, const Node& node) {
  ReductionAttrs a;
  if (!reduction_of_4d(g, node, &a)) return 0;
  return static_cast<uint8_t>((a.row_major_ok ? kReadsPlain : 0) | (a.nhwc_ok ? kReadsNhwc : 0));
}

/// Nodes whose output keeps the layout of their activation operands: follows_operands(), and a
/// mean or sum that reads either layout. Not a where of an activation condition (tern's select
/// reads and writes plain bytes: makes_plain).
bool follows(const Graph& g, const Node& node) {
  if (is_where_of_activation_condition(g, node)) return false;
  return follows_operands(node.op) || reduction_reads(g, node) == (kReadsPlain | kReadsNhwc);
}

/// Nodes whose 4-D data input (arg 0) must be NHWC (their meaning is over [N, C, H, W]); a
/// mean or sum unless it is a plain one.
bool needs_nhwc(const Graph& g, const Node& node) {
  const std::string& op = node.op;
  if (is_reduction_op(op)) return reduction_reads(g, node) == kReadsNhwc;
  return op == "tern::conv2d" || op == "tern::conv_transpose2d" || op == "tern::max_pool2d" ||
         op == "tern::avg_pool2d" ||
         op == "tern::adaptive_avg_pool2d" || op == "tern::batch_norm" ||
         op == "tern::group_norm" || op == "tern::upsample_nearest2d" ||
         op == "tern::upsample_bilinear2d" || op == "tern::grid_sample2d";
}

/// Nodes whose 4-D activations must be plain (they work over the last dims of row-major
/// data): how many leading args that applies to.
size_t plain_args(const Graph& g, const Node& node) {
  const std::string& op = node.op;
  if (op == "tern::linear" || op == "tern::layer_norm" || op == "tern::rms_norm" ||
      op == "tern::softmax") {
    return 1;
  }
  if (op == "tern::bmm" || op == "tern::matmul") return 2;
  if (op == "tern::scaled_dot_product_attention") return 4;  // q, k, v and a mask
  if (reduction_reads(g, node) == kReadsPlain) return 1;
  return 0;
}

/// Nodes whose 4-D outputs are plain (computed row-major): a mean or sum of a 5-D or 6-D x
/// too (its result is x's row-major bytes reduced; Qwen3-Next's chunked delta rule sums
/// [.., 2, 2] to [1, 32, 1, 2]).
bool makes_plain(const Graph& g, const Node& node) {
  const std::string& op = node.op;
  // Not a sum of channel groups (ResNeSt's, SKNet's): the GroupSum writes NHWC (a reader
  // that wants it plain gets it so, and then the sum is lowered row-major as any other).
  const bool reduces_more_dims = is_reduction_op(op) && !node.args.empty() &&
                                 g.values[static_cast<size_t>(node.args[0])].sizes.size() > 4 &&
                                 !is_group_sum_shape(g, node);
  return op == "tern::bmm" || op == "tern::matmul" ||
         op == "tern::scaled_dot_product_attention" || reduction_reads(g, node) == kReadsPlain ||
         reduces_more_dims || is_where_of_activation_condition(g, node) ||
         op == "tern::tril" || op == "tern::triu";  // select: reads x plain (a copy if NHWC)
}

/// Ops the delegate does not compute from an NHWC or plain form of their own: index maps
/// (copied into whichever layout is wanted) and every op it does not take (their outputs
/// enter a delegate at its edge, converted there).
bool free_layout(const Graph& g, const Node& node) {
  const std::string& op = node.op;
  return is_index_map_op(op) ||
         !(follows(g, node) || needs_nhwc(g, node) || makes_plain(g, node) ||
           is_cpu_view_op(op) || op == "tern::cat" || op == "tern::hardsigmoid" ||
           op == "tern::permute");
}

enum Want : uint8_t { kNone = 0, kNhwc = 1, kPlain = 2 };

/// What the readers of each value ask for, from the last node back: NHWC for the spatial ops,
/// plain for the row-major ones, and through binary ops and activations what their output is
/// asked for. NHWC wins a conflict.
std::vector<uint8_t> wanted_layouts(const Graph& g) {
  std::vector<uint8_t> want(g.values.size(), kNone);
  auto ask = [&](int id, uint8_t w) {
    if (is_4d_tensor(g, id) && !g.values[static_cast<size_t>(id)].is_constant) {
      want[static_cast<size_t>(id)] |= w;
    }
  };
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& node = g.nodes[i];
    if (node.args.empty()) continue;
    if (needs_nhwc(g, node)) ask(node.args[0], kNhwc);
    // grid_sample2d's grid [N, HO, WO, 2]: (x, y) pairs, row-major.
    if (node.op == "tern::grid_sample2d" && node.args.size() > 1) ask(node.args[1], kPlain);
    const size_t p = plain_args(g, node);
    for (size_t a = 0; a < p && a < node.args.size(); ++a) ask(node.args[a], kPlain);
    if (follows(g, node) && p == 0 && node.outputs.size() == 1 &&
        is_4d_tensor(g, node.outputs[0])) {
      const uint8_t w = want[static_cast<size_t>(node.outputs[0])];
      for (int a : node.args) ask(a, w);
    }
    // An index map or a view passes its outputs' wishes to its input (it copies cheapest when
    // both sides agree), a cat to its parts (they must share its layout).
    // The layout permutes (0, 2, 3, 1) / (0, 3, 1, 2) are no-ops between the two layouts: what
    // their output is asked for, their input is asked for the other.
    if (is_index_map_op(node.op) || is_cpu_view_op(node.op)) {
      bool swap = false;
      if (node.op == "tern::permute" && is_4d_tensor(g, node.args[0])) {
        try {
          const std::vector<int64_t> d = permute_dims(g, node);
          swap = d == kToChannelsLast || d == kToChannelsFirst;
        } catch (const Unsupported&) {
          swap = false;
        }
      }
      for (int out : node.outputs) {
        if (!is_4d_tensor(g, out)) continue;
        const uint8_t w = want[static_cast<size_t>(out)];
        ask(node.args[0],
            swap ? static_cast<uint8_t>(((w & kNhwc) ? kPlain : 0) | ((w & kPlain) ? kNhwc : 0))
                 : w);
      }
    }
    if (node.op == "tern::cat" && node.outputs.size() == 1 && is_4d_tensor(g, node.outputs[0]) &&
        node.args[0] >= 0 && static_cast<size_t>(node.args[0]) < g.values.size()) {
      const uint8_t w = want[static_cast<size_t>(node.outputs[0])];
      for (int t : g.values[static_cast<size_t>(node.args[0])].tensors) ask(t, w);
    }
  }
  return want;
}

}  // namespace

std::vector<int64_t> permute_dims(const Graph& g, const Node& node) {
  if (node.args.size() != 2) throw Unsupported("permute: expected 2 arguments");
  const Value& x = f32_tensor(g, node.args[0], "x");
  const Value& d = static_value(g, node.args[1], "dims");
  const int64_t rank = static_cast<int64_t>(x.sizes.size());
  if (d.kind != Value::Kind::IntList || static_cast<int64_t>(d.ints.size()) != rank) {
    throw Unsupported("permute: dims is not an IntList of x's rank");
  }
  std::vector<int64_t> dims;
  for (int64_t v : d.ints) dims.push_back(v < 0 ? v + rank : v);
  return dims;
}

std::vector<bool> plain_4d_values(const Graph& g) {
  std::vector<bool> plain(g.values.size(), false);
  const std::vector<uint8_t> want = wanted_layouts(g);
  // A value free to take either layout: NHWC when a reader needs it, plain when one needs that,
  // else `fallback`.
  auto choose = [&](int out, bool fallback) {
    const uint8_t w = want[static_cast<size_t>(out)];
    if (w & kNhwc) return false;
    if (w & kPlain) return true;
    return fallback;
  };
  for (int in : g.inputs) {  // method inputs: NHWC unless only row-major readers want them
    if (is_4d_tensor(g, in)) plain[static_cast<size_t>(in)] = choose(in, false);
  }
  // Values no node reads (directly or in a tensor list) that are method outputs: a bilinear
  // upsample making one writes the caller's NCHW planes directly (op 34).
  std::vector<bool> read(g.values.size(), false);
  for (const Node& node : g.nodes) {
    for (int a : node.args) {
      if (a < 0 || static_cast<size_t>(a) >= g.values.size()) continue;
      read[static_cast<size_t>(a)] = true;
      for (int t : g.values[static_cast<size_t>(a)].tensors) {
        if (t >= 0 && static_cast<size_t>(t) < g.values.size()) read[static_cast<size_t>(t)] = true;
      }
    }
  }
  std::vector<bool> method_output(g.values.size(), false);
  for (int out : g.outputs) {
    if (out >= 0 && static_cast<size_t>(out) < g.values.size()) {
      method_output[static_cast<size_t>(out)] = true;
    }
  }
  std::vector<int> maker(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (int o : g.nodes[i].outputs) {
      if (o >= 0 && static_cast<size_t>(o) < g.values.size()) {
        maker[static_cast<size_t>(o)] = static_cast<int>(i);
      }
    }
  }
  const std::function<int(int)> made_by = [&maker](int vid) {
    return vid >= 0 && static_cast<size_t>(vid) < maker.size() ? maker[static_cast<size_t>(vid)]
                                                                : -1;
  };
  for (const Node& node : g.nodes) {
    if (node.outputs.empty()) continue;
    const int x = node.args.empty() ? -1 : node.args[0];
    const bool x_tensor = x >= 0 && static_cast<size_t>(x) < g.values.size() &&
                          g.values[static_cast<size_t>(x)].is_tensor();
    const bool x_plain = is_4d_tensor(g, x) && plain[static_cast<size_t>(x)];
    for (int out : node.outputs) {
      if (!is_4d_tensor(g, out)) continue;
      bool p = false;
      if (node.op == "tern::upsample_bilinear2d") {
        p = method_output[static_cast<size_t>(out)] && !read[static_cast<size_t>(out)] &&
            static_cast<uint64_t>(g.values[static_cast<size_t>(out)].sizes[1]) <=
                cpu::kMaxResizePlanesChannels;
      } else if (int mixed = -1; ends_channel_mix(g, node, made_by, &mixed)) {
        // A linear along an inner dim (CaiT's talking heads): the ChannelMix writes its input's
        // layout, row-major (the permute to channels first is otherwise a no-op to NHWC).
        p = !is_4d_tensor(g, mixed) || plain[static_cast<size_t>(mixed)];
      } else if (node.op == "tern::permute" && x_tensor && is_4d_tensor(g, x) &&
          ((!x_plain && permute_dims(g, node) == kToChannelsLast) ||
           (x_plain && permute_dims(g, node) == kToChannelsFirst))) {
        p = !x_plain;  // the layout changes that are no-ops inside the delegate
      } else if (is_cpu_view_op(node.op) && x_tensor) {
        // A view keeps a 4-D input's layout; from another rank, it is free.
        p = is_4d_tensor(g, x) ? x_plain : choose(out, true);
      } else if (node.op == "tern::cat" && x >= 0) {
        const Value& list = g.values[static_cast<size_t>(x)];
        for (int t : list.tensors) {
          if (is_4d_tensor(g, t) && plain[static_cast<size_t>(t)]) p = true;
        }
      } else if (makes_plain(g, node)) {
        p = true;
      } else if (node.op == "tern::softmax" && is_4d_tensor(g, x)) {
        p = true;  // over the last dim of row-major data: an NHWC x is read through a copy
      } else if (follows(g, node)) {
        for (int a : node.args) {
          if (is_4d_tensor(g, a) && !g.values[static_cast<size_t>(a)].is_constant &&
              plain[static_cast<size_t>(a)]) {
            p = true;
          }
        }
      } else if (free_layout(g, node)) {
        // An index map of a 4-D tensor keeps its layout when nothing asks otherwise, one of
        // another rank is plain; an op the delegate does not take gives NHWC, as before.
        const bool fallback = !is_index_map_op(node.op) ? false
                              : is_4d_tensor(g, x)      ? x_plain
                                                        : true;
        p = choose(out, fallback);
      }
      plain[static_cast<size_t>(out)] = p;
    }
  }
  return plain;
}

void check_layout(const Graph& g, const Node& node, const std::vector<bool>& plain) {
  const std::string& op = node.op;
  auto is_plain = [&](int id) {
    return is_4d_tensor(g, id) && plain[static_cast<size_t>(id)];
  };
  // A softmax of an NHWC x (EfficientFormer V2's talking heads: a 1x1 conv over the heads of
  // the scores) reads a plain copy of it (region_lowering's activation_as).
  const size_t p = op == "tern::softmax" ? 0 : plain_args(g, node);
  for (size_t a = 0; a < p && a < node.args.size(); ++a) {
    // A constant is laid out as its reader needs (a bmm's constant b: row-major).
    if (is_4d_tensor(g, node.args[a]) && !is_plain(node.args[a]) &&
        !g.values[static_cast<size_t>(node.args[a])].is_constant) {
      throw Unsupported(op + ": over the last dims of an NHWC 4-D tensor");
    }
  }
  if (const uint8_t reads = reduction_reads(g, node); reads != 0) {
    if (is_plain(node.args[0]) && !(reads & kReadsPlain)) {
      throw Unsupported(op + ": of a channels-last (plain) 4-D tensor");
    }
    if (!is_plain(node.args[0]) && !(reads & kReadsNhwc)) {
      throw Unsupported(op + ": over the last dims of an NHWC 4-D tensor");
    }
  } else if (needs_nhwc(g, node)) {
    // A conv2d, a grid sample and the pools read a plain input through a copy in NHWC order
    // (region_lowering's activation_as: ResNeSt's average pool after its split attention, a
    // sum over the radix of 5-D values); the other spatial ops need NHWC.
    if (!node.args.empty() && is_plain(node.args[0]) && op != "tern::conv2d" &&
        op != "tern::grid_sample2d" && op != "tern::max_pool2d" && op != "tern::avg_pool2d" &&
        op != "tern::adaptive_avg_pool2d") {
      throw Unsupported(op + ": of a channels-last (plain) 4-D tensor");
    }
  } else if (op == "tern::cat") {
    const int out = node.outputs.at(0);
    for (int part : concat_inputs(g, node)) {  // constants are laid out as the output
      if (is_4d_tensor(g, part) && !g.values[static_cast<size_t>(part)].is_constant &&
          is_plain(part) != is_plain(out)) {
        throw Unsupported("cat: of NHWC and channels-last (plain) 4-D tensors");
      }
    }
  }
  // Permutes, views and the other index maps take any layouts, and so do the binary ops: where
  // the bytes differ, the delegate copies (StridedCopy, op 27; a binary op's operand of the
  // other layout than its output's is copied into the output's order).
}

}  // namespace tern::compiler::cpu_compile
