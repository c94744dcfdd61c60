// Verification of bounded-dynamic shapes (format 1.1): symbols, per-dim symbol tags, and the
// ints that follow a symbol. docs/dynamic-shapes.md and docs/format.md "Verification".
#include <cstring>

#include "runtime/core/dtype.h"
#include "runtime/core/tensor_view.h"
#include "runtime/executor/program_verifier.h"
#include "schema/program_generated.h"

namespace tern {
namespace internal {
namespace {

using ull = unsigned long long;

template <typename V>
uint32_t count_of(const V* vector) {
  return vector == nullptr ? 0 : vector->size();
}

constexpr uint32_t kMaxSymbols = 64;

Error check_symbols(const fb::Method* method, const char* name) {
  const auto* symbols = method->symbols();
  const uint32_t n = count_of(symbols);
  TERN_CHECK_OR_RETURN_ERROR(n <= kMaxSymbols, InvalidProgram,
                             "method '%s': %u dimension symbols exceed the limit of %u", name, n,
                             kMaxSymbols);
  for (uint32_t i = 0; i < n; ++i) {
    const fb::DimSymbol* s = symbols->Get(i);
    TERN_CHECK_OR_RETURN_ERROR(s != nullptr && s->name() != nullptr && s->name()->size() > 0,
                               InvalidProgram, "method '%s' symbol %u: missing or empty name", name,
                               i);
    const char* sname = s->name()->c_str();
    TERN_CHECK_OR_RETURN_ERROR(
        s->min() >= 0 && s->min() <= s->max() && s->max() >= 1, InvalidProgram,
        "method '%s' symbol %u ('%s'): bounds [%lld, %lld] are invalid "
        "(need 0 <= min <= max and max >= 1)",
        name, i, sname, static_cast<long long>(s->min()), static_cast<long long>(s->max()));
    for (uint32_t j = 0; j < i; ++j) {
      TERN_CHECK_OR_RETURN_ERROR(
          std::strcmp(symbols->Get(j)->name()->c_str(), sname) != 0, InvalidProgram,
          "method '%s': symbols %u and %u are both named '%s'", name, j, i, sname);
    }
  }
  return Error::Ok;
}

Error check_tensor_symbols(const fb::Method* method, const char* name, uint32_t index,
                           const fb::Tensor* t, const uint8_t* is_state) {
  const auto* dims = t->dim_symbols();
  const uint32_t rank = count_of(t->sizes());
  if (t->dynamism() != fb::ShapeDynamism::DynamicBound) {
    for (uint32_t d = 0; d < count_of(dims); ++d) {
      TERN_CHECK_OR_RETURN_ERROR(dims->Get(d) == -1, InvalidProgram,
                                 "method '%s' value %u: dim %u names symbol %d but the tensor's "
                                 "dynamism is Static",
                                 name, index, d, dims->Get(d));
    }
    return Error::Ok;
  }
  const auto* symbols = method->symbols();
  const uint32_t num_symbols = count_of(symbols);
  TERN_CHECK_OR_RETURN_ERROR(count_of(dims) == rank, InvalidProgram,
                             "method '%s' value %u: a DynamicBound tensor needs one dim_symbols "
                             "entry per dim: found %u for rank %u",
                             name, index, count_of(dims), rank);
  uint32_t dynamic = 0;
  for (uint32_t d = 0; d < rank; ++d) {
    const int32_t s = dims->Get(d);
    if (s == -1) continue;
    TERN_CHECK_OR_RETURN_ERROR(s >= 0 && static_cast<uint32_t>(s) < num_symbols, InvalidProgram,
                               "method '%s' value %u: dim %u names symbol %d, out of range (%u "
                               "symbols)",
                               name, index, d, s, num_symbols);
    const fb::DimSymbol* sym = symbols->Get(static_cast<uint32_t>(s));
    const int64_t size = t->sizes()->Get(d);
    TERN_CHECK_OR_RETURN_ERROR(size == sym->max(), InvalidProgram,
                               "method '%s' value %u: dim %u is symbol '%s' with bound %lld, but "
                               "its planned size is %lld",
                               name, index, d, sym->name()->c_str(),
                               static_cast<long long>(sym->max()), static_cast<long long>(size));
    ++dynamic;
  }
  TERN_CHECK_OR_RETURN_ERROR(dynamic > 0, InvalidProgram,
                             "method '%s' value %u: DynamicBound tensor has no dynamic dim", name,
                             index);
  TERN_CHECK_OR_RETURN_ERROR(t->storage() != fb::StorageKind::Constant, InvalidProgram,
                             "method '%s' value %u: a constant tensor cannot have dynamic dims",
                             name, index);
  TERN_CHECK_OR_RETURN_ERROR(is_state[index] == 0, InvalidProgram,
                             "method '%s' value %u: a state tensor cannot have dynamic dims", name,
                             index);
  TERN_CHECK_OR_RETURN_ERROR(
      t->quant() == nullptr || t->quant()->scheme() == fb::QuantScheme::None, InvalidProgram,
      "method '%s' value %u: a quantized tensor cannot have dynamic dims", name, index);
  const DType dtype = static_cast<DType>(t->dtype());
  TERN_CHECK_OR_RETURN_ERROR(dtype != DType::NF4, InvalidProgram,
                             "method '%s' value %u: an nf4 tensor cannot have dynamic dims", name,
                             index);
  return Error::Ok;
}

Error check_symbolic_ints(const fb::Method* method, const char* name) {
  const auto* ints = method->symbolic_ints();
  const auto* values = method->values();
  const uint32_t num_values = count_of(values);
  const uint32_t num_symbols = count_of(method->symbols());
  for (uint32_t i = 0; i < count_of(ints); ++i) {
    const fb::SymbolicInt* si = ints->Get(i);
    TERN_CHECK_OR_RETURN_ERROR(si != nullptr, InvalidProgram,
                               "method '%s' symbolic int %u: missing", name, i);
    TERN_CHECK_OR_RETURN_ERROR(si->symbol() < num_symbols, InvalidProgram,
                               "method '%s' symbolic int %u: symbol %u out of range (%u symbols)",
                               name, i, si->symbol(), num_symbols);
    TERN_CHECK_OR_RETURN_ERROR(si->value() < num_values, InvalidProgram,
                               "method '%s' symbolic int %u: value %u out of range (%u values)",
                               name, i, si->value(), num_values);
    const fb::EValue* v = values->Get(si->value());
    if (si->item() == -1) {
      TERN_CHECK_OR_RETURN_ERROR(v->value_type() == fb::Value::Int, InvalidProgram,
                                 "method '%s' symbolic int %u: value %u is not an int", name, i,
                                 si->value());
    } else {
      const fb::IntList* list = v->value_as_IntList();
      TERN_CHECK_OR_RETURN_ERROR(list != nullptr, InvalidProgram,
                                 "method '%s' symbolic int %u: value %u is not an int list", name,
                                 i, si->value());
      TERN_CHECK_OR_RETURN_ERROR(
          si->item() >= 0 && static_cast<uint32_t>(si->item()) < count_of(list->items()),
          InvalidProgram,
          "method '%s' symbolic int %u: item %d out of range (value %u has "
          "%u items)",
          name, i, si->item(), si->value(), count_of(list->items()));
    }
  }
  return Error::Ok;
}

}  // namespace

Error verify_dynamic_shapes(const fb::Method* method, const char* name, const uint8_t* is_state) {
  TERN_RETURN_IF_ERROR(check_symbols(method, name));
  const auto* values = method->values();
  const uint32_t num_values = count_of(values);
  for (uint32_t v = 0; v < num_values; ++v) {
    const fb::Tensor* t = values->Get(v)->value_as_Tensor();
    if (t != nullptr) TERN_RETURN_IF_ERROR(check_tensor_symbols(method, name, v, t, is_state));
  }
  // Every symbol must be bound by an input's dim, or execute could not know its size.
  const auto* symbols = method->symbols();
  const auto* inputs = method->inputs();
  for (uint32_t s = 0; s < count_of(symbols); ++s) {
    bool bound = false;
    for (uint32_t i = 0; !bound && i < count_of(inputs); ++i) {
      const fb::Tensor* t = values->Get(inputs->Get(i))->value_as_Tensor();
      if (t == nullptr || t->dynamism() != fb::ShapeDynamism::DynamicBound) continue;
      const auto* dims = t->dim_symbols();
      for (uint32_t d = 0; d < count_of(dims); ++d) bound = bound || dims->Get(d) == int32_t(s);
    }
    TERN_CHECK_OR_RETURN_ERROR(bound, InvalidProgram,
                               "method '%s' symbol %u ('%s'): no method input has a dim with this "
                               "symbol, so its size could never be known",
                               name, s, symbols->Get(s)->name()->c_str());
  }
  return check_symbolic_ints(method, name);
}

}  // namespace internal
}  // namespace tern
