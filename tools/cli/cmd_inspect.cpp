// `tern inspect`: describe a program without running it.
#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "schema/program_generated.h"
#include "tools/cli/commands.h"

namespace tern::cli {
namespace {

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

// "f32 [1, 4]"; a bounded-dynamic dim of method `m` shows as its symbol and bound, e.g.
// "f32 [1, seq<=128, 512]" (docs/dynamic-shapes.md).
std::string tensor_string(const fb::Tensor* t, const fb::Method* m = nullptr) {
  if (t == nullptr) return "?";
  const auto raw = static_cast<uint8_t>(t->dtype());
  std::string s = is_valid_dtype(raw) ? to_string(static_cast<DType>(raw)) : "invalid";
  std::vector<int64_t> sizes;
  if (t->sizes()) sizes.assign(t->sizes()->begin(), t->sizes()->end());
  const auto* dims = t->dim_symbols();
  const auto* symbols = m ? m->symbols() : nullptr;
  if (t->dynamism() != fb::ShapeDynamism::DynamicBound || dims == nullptr || symbols == nullptr ||
      dims->size() != sizes.size()) {
    return s + " " + shape_string(Span<const int64_t>(sizes.data(), sizes.size()));
  }
  s += " [";
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (d > 0) s += ", ";
    const int32_t sym = dims->Get(static_cast<flatbuffers::uoffset_t>(d));
    if (sym >= 0 && static_cast<uint32_t>(sym) < symbols->size()) {
      s += str(symbols->Get(static_cast<flatbuffers::uoffset_t>(sym))->name()) + "<=";
    }
    s += std::to_string(sizes[d]);
  }
  return s + "]";
}

// Bytes a tensor's elements occupy; 0 if the shape is unusable.
uint64_t tensor_nbytes(const fb::Tensor* t) {
  const auto raw = static_cast<uint8_t>(t->dtype());
  if (!is_valid_dtype(raw)) return 0;
  uint64_t numel = 1;
  if (t->sizes()) {
    for (int64_t s : *t->sizes()) {
      if (s < 0 || !checked_mul(numel, static_cast<uint64_t>(s), &numel)) return 0;
    }
  }
  uint64_t nbytes = 0;
  return dtype_nbytes(static_cast<DType>(raw), numel, &nbytes) ? nbytes : 0;
}

const fb::Tensor* value_tensor(const fb::Method* m, uint32_t index) {
  if (m->values() == nullptr || index >= m->values()->size()) return nullptr;
  const fb::EValue* v = m->values()->Get(index);
  return v ? v->value_as_Tensor() : nullptr;
}

std::string value_kind(const fb::Method* m, uint32_t index) {
  if (m->values() == nullptr || index >= m->values()->size()) return "?";
  const fb::EValue* v = m->values()->Get(index);
  if (v == nullptr) return "?";
  if (const fb::Tensor* t = v->value_as_Tensor()) return tensor_string(t, m);
  return fb::EnumNameValue(v->value_type());
}

std::string op_name(const fb::Method* m, uint32_t op) {
  if (m->operators() == nullptr || op >= m->operators()->size()) return "<op " + std::to_string(op) + ">";
  return str(m->operators()->Get(op));
}

void print_values(const char* title, const fb::Method* m,
                  const flatbuffers::Vector<uint32_t>* indices) {
  const size_t n = indices ? indices->size() : 0;
  std::printf("  %s: %zu\n", title, n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t index = indices->Get(static_cast<flatbuffers::uoffset_t>(i));
    const fb::Tensor* t = value_tensor(m, index);
    std::string name = t ? str(t->name()) : "";
    std::printf("    %zu%s%s: %s\n", i, name.empty() ? "" : " ", name.c_str(), value_kind(m, index).c_str());
  }
}

uint64_t tensor_numel(const fb::Tensor* t) {
  uint64_t numel = 1;
  if (t->sizes()) {
    for (int64_t s : *t->sizes()) {
      if (s < 0 || !checked_mul(numel, static_cast<uint64_t>(s), &numel)) return 0;
    }
  }
  return numel;
}

// Bytes of the constant tensor at value `ref` (a quantization parameter), 0 when absent.
uint64_t param_bytes(const fb::Method* m, int32_t ref) {
  if (ref < 0) return 0;
  const fb::Tensor* t = value_tensor(m, static_cast<uint32_t>(ref));
  return t ? tensor_nbytes(t) : 0;
}

// "nf4, block 64", "nf4 double-quant, block 64 (dq block 256)", "fp8 per channel (24 scales)".
std::string quant_description(const fb::Method* m, const fb::Tensor* t) {
  const fb::QuantParams* q = t->quant();
  switch (q->scheme()) {
    case fb::QuantScheme::NF4:
      return "nf4, block " + std::to_string(q->block_size());
    case fb::QuantScheme::NF4DoubleQuant:
      return "nf4 double-quant, block " + std::to_string(q->block_size()) + " (absmax as u8 codes, " +
             "dq block " + std::to_string(q->dq_block_size()) + ", 256-entry table)";
    case fb::QuantScheme::FP8: {
      const uint64_t scales = param_bytes(m, q->scale()) / 4;
      std::string g;
      switch (q->granularity()) {
        case fb::ScaleGranularity::PerTensor:
          g = "per tensor";
          break;
        case fb::ScaleGranularity::PerChannel:
          g = "per channel";
          break;
        case fb::ScaleGranularity::Block2D:
          g = "blocks " + std::to_string(q->block_rows()) + "x" + std::to_string(q->block_cols());
          break;
        default:
          g = "granularity " + std::to_string(static_cast<unsigned>(q->granularity()));
      }
      return "fp8 " + g + " (" + std::to_string(scales) + " f32 scales)";
    }
    default:
      return "scheme " + std::to_string(static_cast<unsigned>(q->scheme()));
  }
}

/// Weight bytes as stored and as they were before quantization (f32), summed over methods.
struct WeightTotals {
  uint64_t stored = 0;
  uint64_t as_f32 = 0;
  size_t quantized = 0;
};

// The quantized tensors of a method: scheme, block size, bytes per parameter; adds the
// method's constant bytes (a segment range counted once) to `totals`.
void print_quantized(const fb::Method* m, std::set<std::pair<uint32_t, uint64_t>>& seen,
                     WeightTotals& totals) {
  if (m->values() == nullptr) return;
  std::set<int32_t> params;
  std::vector<uint32_t> quantized;
  for (uint32_t i = 0; i < m->values()->size(); ++i) {
    const fb::Tensor* t = value_tensor(m, i);
    if (t == nullptr || t->quant() == nullptr || t->quant()->scheme() == fb::QuantScheme::None) {
      continue;
    }
    quantized.push_back(i);
    const fb::QuantParams* q = t->quant();
    for (int32_t ref : {q->absmax(), q->dq_codes(), q->dq_absmax2(), q->dq_table(), q->scale()}) {
      if (ref >= 0) params.insert(ref);
    }
  }
  if (!quantized.empty()) std::printf("  quantized weights: %zu\n", quantized.size());
  for (uint32_t i : quantized) {
    const fb::Tensor* t = value_tensor(m, i);
    const fb::QuantParams* q = t->quant();
    // Own bytes: the packed data and its parameters (a double-quant table shared by several
    // weights is counted in the totals, not here).
    const uint64_t own = tensor_nbytes(t) + param_bytes(m, q->absmax()) +
                         param_bytes(m, q->dq_codes()) + param_bytes(m, q->dq_absmax2()) +
                         param_bytes(m, q->scale());
    const uint64_t numel = tensor_numel(t);
    std::printf(
        "    %s %s: %s, %.4f bytes/param (%" PRIu64 " bytes; f32: %" PRIu64 ")\n",
        str(t->name()).c_str(), tensor_string(t, m).c_str(), quant_description(m, t).c_str(),
        numel ? static_cast<double>(own) / static_cast<double>(numel) : 0.0, own, numel * 4);
  }
  totals.quantized += quantized.size();
  for (uint32_t i = 0; i < m->values()->size(); ++i) {
    const fb::Tensor* t = value_tensor(m, i);
    if (t == nullptr || t->storage() != fb::StorageKind::Constant) continue;
    if (!seen.insert({t->location(), t->offset()}).second) continue;
    const uint64_t bytes = tensor_nbytes(t);
    totals.stored += bytes;
    if (params.count(static_cast<int32_t>(i))) continue;  // did not exist before quantization
    const bool q = t->quant() != nullptr && t->quant()->scheme() != fb::QuantScheme::None;
    totals.as_f32 += q ? tensor_numel(t) * 4 : bytes;
  }
}

void print_method(const fb::Program* p, const fb::Method* m, std::set<std::pair<uint32_t, uint64_t>>& seen_constants,
                  std::map<std::string, uint64_t>& weight_bytes, WeightTotals& totals) {
  std::printf("method '%s'\n", str(m->name()).c_str());
  if (const auto* symbols = m->symbols()) {
    std::printf("  dynamic dims: %u\n", symbols->size());
    for (const fb::DimSymbol* sym : *symbols) {
      std::printf("    %s: %lld..%lld\n", str(sym->name()).c_str(),
                  static_cast<long long>(sym->min()), static_cast<long long>(sym->max()));
    }
  }
  print_values("inputs", m, m->inputs());
  print_values("outputs", m, m->outputs());

  const size_t num_instructions = m->instructions() ? m->instructions()->size() : 0;
  const size_t num_fallback = m->fallback_instructions() ? m->fallback_instructions()->size() : 0;
  std::printf("  instructions: %zu (fallback instructions: %zu)\n", num_instructions, num_fallback);
  std::map<std::string, size_t> histogram;
  if (m->instructions()) {
    for (const fb::Instruction* ins : *m->instructions()) {
      if (ins == nullptr) continue;
      if (const fb::KernelCall* k = ins->kind_as_KernelCall()) {
        ++histogram[op_name(m, k->op())];
      } else if (const fb::DelegateCall* d = ins->kind_as_DelegateCall()) {
        std::string backend = "?";
        if (m->delegates() && d->delegate() < m->delegates()->size()) {
          backend = str(m->delegates()->Get(d->delegate())->backend());
        }
        ++histogram["delegate:" + backend];
      }
    }
  }
  if (m->fallback_instructions()) {
    for (const fb::Instruction* ins : *m->fallback_instructions()) {
      if (ins == nullptr) continue;
      if (const fb::KernelCall* k = ins->kind_as_KernelCall()) {
        ++histogram[op_name(m, k->op()) + " (fallback)"];
      }
    }
  }
  std::printf("  op histogram:\n");
  for (const auto& [op, count] : histogram) std::printf("    %-36s %zu\n", op.c_str(), count);

  const size_t num_delegates = m->delegates() ? m->delegates()->size() : 0;
  std::printf("  delegates: %zu\n", num_delegates);
  for (size_t i = 0; i < num_delegates; ++i) {
    const fb::Delegate* d = m->delegates()->Get(static_cast<flatbuffers::uoffset_t>(i));
    if (d == nullptr) continue;
    std::string keys;
    if (d->compile_specs()) {
      for (const fb::CompileSpec* spec : *d->compile_specs()) {
        if (!keys.empty()) keys += ", ";
        keys += spec ? str(spec->key()) : "?";
      }
    }
    // Fallback size and ops: the fallback ranges of this delegate's calls.
    size_t fallback = 0;
    std::map<std::string, size_t> fallback_ops;
    const size_t num_fallback_total =
        m->fallback_instructions() ? m->fallback_instructions()->size() : 0;
    if (m->instructions()) {
      for (const fb::Instruction* ins : *m->instructions()) {
        const fb::DelegateCall* call = ins ? ins->kind_as_DelegateCall() : nullptr;
        if (call && call->delegate() == i && call->fallback_end() >= call->fallback_begin()) {
          fallback += call->fallback_end() - call->fallback_begin();
          for (uint32_t f = call->fallback_begin();
               f < call->fallback_end() && f < num_fallback_total; ++f) {
            const fb::Instruction* fi = m->fallback_instructions()->Get(f);
            const fb::KernelCall* k = fi ? fi->kind_as_KernelCall() : nullptr;
            if (k) ++fallback_ops[op_name(m, k->op())];
          }
        }
      }
    }
    std::string blob = "segment " + std::to_string(d->segment()) + " out of range";
    if (p->segments() && d->segment() < p->segments()->size() && p->segments()->Get(d->segment())) {
      blob = std::to_string(p->segments()->Get(d->segment())->size()) + " bytes";
    }
    std::printf("    %zu %s: blob %s, compile specs [%s], fallback %zu instructions\n", i,
                str(d->backend()).c_str(), blob.c_str(), keys.c_str(), fallback);
    std::string ops;
    for (const auto& [op, count] : fallback_ops) {
      ops += (ops.empty() ? "" : ", ") + op + " x" + std::to_string(count);
    }
    std::printf("      fallback ops: %s\n", ops.empty() ? "none" : ops.c_str());
  }

  const size_t num_arenas = m->arenas() ? m->arenas()->size() : 0;
  std::printf("  arenas: %zu\n", num_arenas);
  for (size_t i = 0; i < num_arenas; ++i) {
    const fb::Arena* a = m->arenas()->Get(static_cast<flatbuffers::uoffset_t>(i));
    if (a == nullptr) continue;
    const double ratio = a->lower_bound() ? static_cast<double>(a->size()) / a->lower_bound() : 1.0;
    std::printf("    %zu: %" PRIu64 " bytes, lower bound %" PRIu64 " (%.3fx), alignment %u\n", i,
                a->size(), a->lower_bound(), ratio, a->alignment());
  }

  // Scratch the kernels need (MethodMeta::temp_allocator_bytes()).
  std::printf("  temp (scratch): %" PRIu64 " bytes\n", m->temp_size());

  const size_t num_state = m->state() ? m->state()->size() : 0;
  std::printf("  state tensors: %zu\n", num_state);
  for (size_t i = 0; i < num_state; ++i) {
    const fb::StateTensor* s = m->state()->Get(static_cast<flatbuffers::uoffset_t>(i));
    if (s == nullptr) continue;
    const fb::Tensor* t = value_tensor(m, s->value());
    std::string init = s->init_segment() < 0 ? "zero-initialized"
                                             : "initial value in segment " + std::to_string(s->init_segment());
    if (t != nullptr && t->storage() == fb::StorageKind::SharedState) {
      init = "shared state " + std::to_string(t->location()) + " (the program's)";
    }
    std::printf("    %s: %s, %" PRIu64 " bytes, %s\n", t ? str(t->name()).c_str() : "?",
                tensor_string(t).c_str(), t ? tensor_nbytes(t) : 0, init.c_str());
  }

  std::set<std::pair<uint32_t, uint64_t>> seen_quant(seen_constants);
  print_quantized(m, seen_quant, totals);

  if (m->values()) {
    for (const fb::EValue* v : *m->values()) {
      const fb::Tensor* t = v ? v->value_as_Tensor() : nullptr;
      if (t == nullptr || t->storage() != fb::StorageKind::Constant) continue;
      // Aliases (several values over one segment range) count once.
      if (!seen_constants.insert({t->location(), t->offset()}).second) continue;
      const auto raw = static_cast<uint8_t>(t->dtype());
      weight_bytes[is_valid_dtype(raw) ? to_string(static_cast<DType>(raw)) : "invalid"] += tensor_nbytes(t);
    }
  }
}

}  // namespace

int cmd_inspect(const std::string& model) {
  LoadedProgram loaded = load_program(model, Program::Verification::Structure);
  const Program& program = *loaded.program;
  const fb::Program* p = program.flatbuffer();
  const FileHeader& h = program.header();
  std::printf("program %s\n", model.c_str());
  std::printf("  format version: %u.%u (program version %u)\n", h.version_major, h.version_minor,
              p->version());
  std::printf("  producer: %s\n", str(p->producer()).c_str());
  std::printf("  source model: %s\n", str(p->source_model()).c_str());
  if (p->metadata()) {
    for (const fb::KeyValue* kv : *p->metadata()) {
      if (kv) std::printf("  metadata: %s = %s\n", str(kv->key()).c_str(), str(kv->value()).c_str());
    }
  }
  uint64_t segment_bytes = 0;
  if (p->segments()) {
    for (const fb::Segment* s : *p->segments()) {
      if (s) segment_bytes += s->size();
    }
  }
  std::printf("  segments: %zu (%" PRIu64 " bytes)\n", program.num_segments(), segment_bytes);
  // Format 1.2: state the methods share, in the caller's shared state buffer.
  const size_t num_shared = p->shared_state() ? p->shared_state()->size() : 0;
  if (num_shared > 0) {
    std::printf("  shared state: %zu tensors, a %zu-byte buffer (Program::shared_state_bytes())\n",
                num_shared, program.shared_state_bytes());
    for (size_t i = 0; i < num_shared; ++i) {
      const fb::SharedState* s = p->shared_state()->Get(static_cast<flatbuffers::uoffset_t>(i));
      std::vector<int64_t> sizes;
      if (s->sizes()) sizes.assign(s->sizes()->begin(), s->sizes()->end());
      const auto raw = static_cast<uint8_t>(s->dtype());
      std::printf("    %zu %s: %s %s, %s\n", i, str(s->name()).c_str(),
                  is_valid_dtype(raw) ? to_string(static_cast<DType>(raw)) : "invalid",
                  shape_string(Span<const int64_t>(sizes.data(), sizes.size())).c_str(),
                  s->init_segment() < 0
                      ? "zero-initialized"
                      : ("initial value in segment " + std::to_string(s->init_segment())).c_str());
    }
  }
  std::printf("  methods: %zu\n", program.num_methods());

  std::set<std::pair<uint32_t, uint64_t>> seen_constants;
  std::map<std::string, uint64_t> weight_bytes;
  WeightTotals totals;
  if (p->methods()) {
    for (const fb::Method* m : *p->methods()) {
      if (m) print_method(p, m, seen_constants, weight_bytes, totals);
    }
  }
  uint64_t total = 0;
  std::printf("weights by dtype:\n");
  for (const auto& [dtype, bytes] : weight_bytes) {
    std::printf("  %-10s %" PRIu64 " bytes\n", dtype.c_str(), bytes);
    total += bytes;
  }
  std::printf("  total      %" PRIu64 " bytes\n", total);
  if (totals.quantized > 0) {
    std::printf("weight bytes: %" PRIu64 " before quantization (as f32), %" PRIu64
                " after (%.2fx smaller; %zu quantized tensor%s)\n",
                totals.as_f32, totals.stored,
                totals.stored ? static_cast<double>(totals.as_f32) / totals.stored : 1.0,
                totals.quantized, totals.quantized == 1 ? "" : "s");
  }
  return 0;
}

}  // namespace tern::cli
