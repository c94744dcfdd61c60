// index_select by an index computed at run time (an int64 tensor made outside the delegate), as
// the cpu delegate runs it (internal to backends/cpu/compile): tern's IndexRows node (op 45,
// since blob version 22) copies x's slices along one dim in the index's order. CLIP's pooling
// (the hidden state at each sequence's end-of-text token, found by an argmax over the ids).
#pragma once

#include <cstdint>

#include "tools/compiler/graph.h"

namespace tern::compiler::cpu_compile {

struct IndexRowsAttrs {
  int x = -1;        ///< the tensor indexed: an f32 activation or constant
  int index = -1;    ///< the 1-D int64 index: a tensor no node of the delegate makes
  int64_t dim = 0;   ///< x's dim indexed
};

/// Whether `node` is an index_select by an int64 index that is no constant (the constant ones
/// are affine walks or gather maps: affine_index.h, gather_map_plan.h). f32 embeddings stay
/// portable: taken, their ids (often made by portable int ops from the inputs, LayoutLM's
/// boxes) split the models they start into two regions (the whole probe: 5 models).
bool is_runtime_index_rows(const Graph& g, const Node& node);

/// The attributes of such a node; throws Unsupported for another form: x not f32, a 4-D x
/// (NHWC layouts are not followed through it), an index that is not 1-D, an empty index.
IndexRowsAttrs index_rows_attrs(const Graph& g, const Node& node);

/// Whether `node` is an embedding of an f32 table (a quantized one is op 24's: quant_lowering.h).
bool is_f32_embedding(const Graph& g, const Node& node);

/// The IndexRows of such an embedding (x the table [V, D], dim 0, index the ids): the node's
/// output [ids..., D] is a reshape of the [numel(ids), D] rows IndexRows makes. Taken only
/// when the ids are a method input (made by no node, static, rank 1..3, not empty): ids that
/// portable int ops make from the inputs (LayoutLM's boxes) would split the models they start
/// into two regions. Throws Unsupported (naming why) otherwise.
IndexRowsAttrs f32_embedding_attrs(const Graph& g, const Node& node);

}  // namespace tern::compiler::cpu_compile
