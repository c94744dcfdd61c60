#include "backends/vulkan/runtime/delegate_args.h"

#include <cmath>
#include <cstring>

#include "backends/vulkan/runtime/blob_reader.h"
#include "runtime/core/tensor_view.h"
#include "runtime/kernels/util/float16_bits.h"

namespace tern::vulkan {
namespace {

/// A bool argument's `n` bytes as the device's 0 / 1 floats (f32, or f16 when `f16`).
void bool_to_floats(const uint8_t* src, uint64_t n, bool f16, uint8_t* dst) {
  if (f16) {
    uint16_t* h = reinterpret_cast<uint16_t*>(dst);
    for (uint64_t k = 0; k < n; ++k) h[k] = src[k] != 0 ? 0x3C00 : 0;  // binary16 1.0, 0.0
    return;
  }
  float* f = reinterpret_cast<float*>(dst);
  for (uint64_t k = 0; k < n; ++k) f[k] = src[k] != 0 ? 1.0f : 0.0f;
}

/// The device's `n` floats of a bool output as bytes: a nonzero float (NaN too) is true, as
/// ATen's conversion to bool.
void floats_to_bool(const uint8_t* src, uint64_t n, bool f16, uint8_t* dst) {
  if (f16) {
    const uint16_t* h = reinterpret_cast<const uint16_t*>(src);
    for (uint64_t k = 0; k < n; ++k) dst[k] = (h[k] & 0x7FFF) != 0 ? 1 : 0;  // not +-0
    return;
  }
  const float* f = reinterpret_cast<const float*>(src);
  for (uint64_t k = 0; k < n; ++k) dst[k] = f[k] != 0.0f || std::isnan(f[k]) ? 1 : 0;
}

/// An I64AsFloat input's integers as the device's floats; one beyond the storage's exact
/// integers is InvalidArgument naming it. An I64CastToFloat input's are rounded (the f32 of
/// ATen's cast, then f16 in an f16-storage blob, as every f32 value entering it).
Error ints_to_floats(const External& x, const int64_t* src, uint8_t* dst) {
  const uint64_t n = x.bytes / 8;
  for (uint64_t k = 0; k < n; ++k) {
    TERN_CHECK_OR_RETURN_ERROR(x.rounded || (src[k] >= -x.exact && src[k] <= x.exact),
                               InvalidArgument,
                               "vulkan: argument %u: element %llu is %lld; this delegate holds "
                               "the integers as %s floats, exact within +-%lld",
                               x.arg, static_cast<unsigned long long>(k),
                               static_cast<long long>(src[k]), x.f16 ? "f16" : "f32",
                               static_cast<long long>(x.exact));
    const float f = static_cast<float>(src[k]);
    if (x.f16) {
      reinterpret_cast<uint16_t*>(dst)[k] = portable::float_to_half(f);
    } else {
      reinterpret_cast<float*>(dst)[k] = f;
    }
  }
  return Error::Ok;
}

/// The device's `n` integer-valued floats of an I64AsFloat output as int64.
void floats_to_ints(const uint8_t* src, uint64_t n, bool f16, int64_t* dst) {
  for (uint64_t k = 0; k < n; ++k) {
    const float f = f16 ? portable::half_to_float(reinterpret_cast<const uint16_t*>(src)[k])
                        : reinterpret_cast<const float*>(src)[k];
    dst[k] = std::isfinite(f) ? static_cast<int64_t>(f) : 0;  // finite by construction
  }
}

}  // namespace

void describe_external(const BlobValue& v, uint32_t index, uint32_t storage,
                       uint64_t staging_offset, External* x) {
  x->value = index;
  x->arg = v.arg;
  x->input = v.kind == static_cast<uint32_t>(ValueKind::ExternalInput);
  x->rounded = v.type == static_cast<uint32_t>(ValueType::I64CastToFloat);
  x->int_as_float = v.type == static_cast<uint32_t>(ValueType::I64AsFloat) || x->rounded;
  x->exact = exact_int_limit(storage);
  x->dtype = v.type == static_cast<uint32_t>(ValueType::I64) || x->int_as_float ? DType::I64
             : v.type == static_cast<uint32_t>(ValueType::I32)                 ? DType::I32
             : v.type == static_cast<uint32_t>(ValueType::Bool)                ? DType::Bool
                                                                               : DType::F32;
  x->f16 = (x->dtype == DType::F32 || x->dtype == DType::Bool || x->int_as_float) &&
           storage == kStorageF16;
  // The argument's bytes (a bool: one per element; an integer held as floats: 8).
  x->bytes = x->dtype == DType::Bool ? value_numel(v)
             : x->int_as_float       ? 8 * value_numel(v)
                                     : value_bytes(v, kStorageF32);
  x->staging_bytes = value_bytes(v, storage);
  x->staging_offset = staging_offset;
  x->rank = v.rank;
  for (uint32_t r = 0; r < v.rank; ++r) x->sizes[r] = static_cast<int64_t>(v.dims[r]);
}

Error check_arg(const External& x, Span<EValue*> args) {
  TERN_CHECK_OR_RETURN_ERROR(x.arg < args.size() && args[x.arg] != nullptr &&
                                 args[x.arg]->is_tensor(),
                             InvalidArgument, "vulkan: argument %u: expected a tensor (of %zu)",
                             x.arg, args.size());
  const TensorView& t = args[x.arg]->to_tensor();
  const DType want = x.dtype;
  TERN_CHECK_OR_RETURN_ERROR(t.dtype == want, InvalidArgument,
                             "vulkan: argument %u: dtype %s, expected %s", x.arg,
                             to_string(t.dtype), to_string(want));
  // An argument of rank above kMaxDims was recorded with its leading dims merged into the
  // first (the compiler's rule): compared the same way.
  const uint32_t merged = t.rank > kMaxDims && x.rank == kMaxDims ? t.rank - kMaxDims : 0;
  bool same = (t.rank == x.rank || merged > 0) && t.is_contiguous() &&
              (t.rank == 0 || t.sizes != nullptr);
  if (same && t.rank > 0) {
    int64_t first = t.sizes[0];
    for (uint32_t r = 1; same && r <= merged; ++r) {
      same = first >= 0 && t.sizes[r] >= 0 && (t.sizes[r] == 0 || first <= INT64_MAX / t.sizes[r]);
      first = same ? first * t.sizes[r] : 0;
    }
    same = same && first == x.sizes[0];
    for (uint32_t r = 1; same && r < x.rank; ++r) same = t.sizes[r + merged] == x.sizes[r];
  }
  TERN_CHECK_OR_RETURN_ERROR(same && t.nbytes >= x.bytes && t.data != nullptr, InvalidArgument,
                             "vulkan: argument %u: a contiguous tensor of %u dims and %llu "
                             "bytes expected (rank %u, %llu bytes)", x.arg, x.rank,
                             static_cast<unsigned long long>(x.bytes), t.rank,
                             static_cast<unsigned long long>(t.nbytes));
  return Error::Ok;
}

Error copy_in(const External& x, const void* src, uint8_t* staging) {
  uint8_t* dst = staging + x.staging_offset;
  if (x.dtype == DType::Bool) {
    bool_to_floats(static_cast<const uint8_t*>(src), x.bytes, x.f16, dst);
  } else if (x.int_as_float) {
    return ints_to_floats(x, static_cast<const int64_t*>(src), dst);
  } else if (x.f16) {
    const float* f = static_cast<const float*>(src);
    uint16_t* h = reinterpret_cast<uint16_t*>(dst);
    for (uint64_t k = 0; k < x.bytes / 4; ++k) h[k] = portable::float_to_half(f[k]);
  } else {
    std::memcpy(dst, src, x.bytes);
  }
  return Error::Ok;
}

void copy_out(const External& x, const uint8_t* staging, void* dst) {
  const uint8_t* src = staging + x.staging_offset;
  if (x.dtype == DType::Bool) {
    floats_to_bool(src, x.bytes, x.f16, static_cast<uint8_t*>(dst));
  } else if (x.int_as_float) {
    floats_to_ints(src, x.bytes / 8, x.f16, static_cast<int64_t*>(dst));
  } else if (x.f16) {
    const uint16_t* h = reinterpret_cast<const uint16_t*>(src);
    float* f = static_cast<float*>(dst);
    for (uint64_t k = 0; k < x.bytes / 4; ++k) f[k] = portable::half_to_float(h[k]);
  } else {
    std::memcpy(dst, src, x.bytes);
  }
}

}  // namespace tern::vulkan
