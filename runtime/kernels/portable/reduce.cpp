// tern::sum, tern::mean, tern::prod, tern::amax, tern::amin over a set of dims (x, dims,
// keepdim, out).
//
// The input is regrouped into merged kept and reduced dims (reduction_util.h). When the
// innermost dim is reduced, each output element folds contiguous runs; when it is kept, a
// chunk of adjacent output elements accumulates whole input rows at once (stack accumulators),
// so both layouts stream the input. f32 sums accumulate in double.
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "runtime/kernels/portable/kernel_args.h"
#include "runtime/kernels/portable/portable_kernels.h"
#include "runtime/kernels/portable/reduction_util.h"

namespace tern {
namespace portable {
namespace {

using reduction::OffsetWalker;
using reduction::ReducePlan;

constexpr int64_t kChunk = 256;

// Folds x over the plan into out with reducer r: init(), step(acc, v), run(acc, p, n),
// finish(acc).
template <typename In, typename Out, typename R>
void run_reduce(const ReducePlan& p, const In* x, Out* out, const R& r) {
  using Acc = typename R::Acc;
  if (p.inner_kept) {
    const uint32_t outer_rank = p.kept_rank - 1;
    const int64_t inner = p.kept_sizes[outer_rank];
    const uint64_t outer_n = p.out_numel / static_cast<uint64_t>(inner);
    OffsetWalker outer(outer_rank, p.kept_sizes, p.kept_strides);
    Out* dst = out;
    for (uint64_t o = 0; o < outer_n; ++o) {
      for (int64_t c0 = 0; c0 < inner; c0 += kChunk) {
        const int64_t n = inner - c0 < kChunk ? inner - c0 : kChunk;
        Acc acc[kChunk];
        for (int64_t i = 0; i < n; ++i) acc[i] = r.init();
        OffsetWalker red(p.red_rank, p.red_sizes, p.red_strides);
        for (uint64_t k = 0; k < p.reduce_numel; ++k) {
          const In* src = x + outer.offset + red.offset + c0;
          for (int64_t i = 0; i < n; ++i) acc[i] = r.step(acc[i], src[i]);
          red.next();
        }
        for (int64_t i = 0; i < n; ++i) dst[c0 + i] = r.finish(acc[i]);
      }
      dst += inner;
      outer.next();
    }
    return;
  }
  int64_t run = 1;
  uint32_t red_outer_rank = 0;
  if (p.red_rank > 0) {
    red_outer_rank = p.red_rank - 1;
    run = p.red_sizes[red_outer_rank];
  }
  const uint64_t runs = p.reduce_numel / static_cast<uint64_t>(run);
  OffsetWalker kept(p.kept_rank, p.kept_sizes, p.kept_strides);
  for (uint64_t o = 0; o < p.out_numel; ++o) {
    Acc acc = r.init();
    OffsetWalker red(red_outer_rank, p.red_sizes, p.red_strides);
    for (uint64_t k = 0; k < runs; ++k) {
      acc = r.run(acc, x + kept.offset + red.offset, run);
      red.next();
    }
    out[o] = r.finish(acc);
    kept.next();
  }
}

struct SumF32 {
  using Acc = double;
  double count = 1;  // mean divides by it
  bool divide = false;
  Acc init() const { return 0.0; }
  Acc step(Acc a, float v) const { return a + v; }
  Acc run(Acc a, const float* p, int64_t n) const { return a + reduction::sum_f64(p, n); }
  float finish(Acc a) const { return static_cast<float>(divide ? a / count : a); }
};

template <typename In, typename Out>
struct SumInt {
  using Acc = uint64_t;  // wraps like two's complement, without signed overflow
  Acc init() const { return 0; }
  Acc step(Acc a, In v) const { return a + static_cast<uint64_t>(static_cast<int64_t>(v)); }
  Acc run(Acc a, const In* p, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) a = step(a, p[i]);
    return a;
  }
  Out finish(Acc a) const { return static_cast<Out>(static_cast<int64_t>(a)); }
};

struct ProdF32 {
  using Acc = double;  // each product exact in double until it passes 2^53 of significance
  Acc init() const { return 1.0; }
  Acc step(Acc a, float v) const { return a * v; }
  Acc run(Acc a, const float* p, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) a *= p[i];
    return a;
  }
  float finish(Acc a) const { return static_cast<float>(a); }
};

template <typename In, typename Out>
struct ProdInt {
  using Acc = uint64_t;  // wraps like two's complement, without signed overflow
  Acc init() const { return 1; }
  Acc step(Acc a, In v) const { return a * static_cast<uint64_t>(static_cast<int64_t>(v)); }
  Acc run(Acc a, const In* p, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) a = step(a, p[i]);
    return a;
  }
  Out finish(Acc a) const { return static_cast<Out>(static_cast<int64_t>(a)); }
};

// amax (kMax) or amin; NaN propagates.
template <typename T, bool kMax>
struct Extreme {
  using Acc = T;
  Acc init() const {
    if constexpr (std::is_floating_point<T>::value) {
      return kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    } else {
      return kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    }
  }
  Acc step(Acc a, T v) const {
    const bool better = kMax ? v > a : v < a;
    return (better || v != v) ? v : a;
  }
  Acc run(Acc a, const T* p, int64_t n) const {
    for (int64_t i = 0; i < n; ++i) a = step(a, p[i]);
    return a;
  }
  T finish(Acc a) const { return a; }
};

// Reads (x, dims, keepdim, out), builds the plan and checks out's shape.
struct ReduceArgs {
  TensorView* x = nullptr;
  TensorView* out = nullptr;
  ReducePlan plan;
};

Error parse_reduce(const char* op, Span<EValue*> args, ReduceArgs* r) {
  TERN_RETURN_IF_ERROR(check_num_args(op, args, 4, 4));
  TERN_ASSIGN_OR_RETURN(r->x, tensor_arg(op, args, 0, "x"));
  TERN_ASSIGN_OR_RETURN(r->out, tensor_arg(op, args, 3, "out"));
  Span<const int64_t> dims;
  if (!reduction::is_none_arg(args, 1)) {
    TERN_ASSIGN_OR_RETURN(dims, reduction::int_list_arg(op, args, 1, "dims"));
  }
  TERN_ASSIGN_OR_RETURN(const bool keepdim, reduction::bool_arg(op, args, 2, "keepdim"));
  TERN_RETURN_IF_ERROR(reduction::make_reduce_plan(op, *r->x, dims, keepdim, &r->plan));
  return check_shape(op, "out", *r->out, r->plan.out_shape.span());
}

// sum and prod: f32 through FloatR (out f32); i32 / i64 through IntR<In, Out>, into i64 as
// ATen's or into x's own dtype when out has it.
template <template <typename, typename> class IntR, typename FloatR>
Error accumulate(const char* op, Span<EValue*> args) {
  ReduceArgs a;
  TERN_RETURN_IF_ERROR(parse_reduce(op, args, &a));
  static const DType kAllowed[] = {DType::F32, DType::I32, DType::I64};
  TERN_RETURN_IF_ERROR(check_dtype_in(op, "x", *a.x, Span<const DType>(kAllowed)));
  if (a.x->dtype == DType::F32) {
    TERN_RETURN_IF_ERROR(check_dtype(op, "out", *a.out, DType::F32));
  } else if (a.out->dtype != a.x->dtype) {
    TERN_RETURN_IF_ERROR(check_dtype(op, "out", *a.out, DType::I64));
  }
  if (a.plan.out_numel == 0) return Error::Ok;
  switch (a.x->dtype) {
    case DType::F32:
      run_reduce(a.plan, a.x->data_as<const float>(), a.out->data_as<float>(), FloatR{});
      break;
    case DType::I32:
      if (a.out->dtype == DType::I64) {
        run_reduce(a.plan, a.x->data_as<const int32_t>(), a.out->data_as<int64_t>(),
                   IntR<int32_t, int64_t>{});
      } else {
        run_reduce(a.plan, a.x->data_as<const int32_t>(), a.out->data_as<int32_t>(),
                   IntR<int32_t, int32_t>{});
      }
      break;
    case DType::I64:
      run_reduce(a.plan, a.x->data_as<const int64_t>(), a.out->data_as<int64_t>(),
                 IntR<int64_t, int64_t>{});
      break;
    default:
      TERN_RETURN_ERROR(Internal, "%s: unhandled dtype %s", op, to_string(a.x->dtype));
  }
  return Error::Ok;
}

}  // namespace

Error sum(KernelContext& /*context*/, Span<EValue*> args) {
  return accumulate<SumInt, SumF32>("tern::sum", args);
}

Error prod(KernelContext& /*context*/, Span<EValue*> args) {
  return accumulate<ProdInt, ProdF32>("tern::prod", args);
}

Error mean(KernelContext& /*context*/, Span<EValue*> args) {
  const char* op = "tern::mean";
  ReduceArgs a;
  TERN_RETURN_IF_ERROR(parse_reduce(op, args, &a));
  TERN_RETURN_IF_ERROR(check_dtype(op, "x", *a.x, DType::F32));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *a.out, DType::F32));
  if (a.plan.out_numel == 0) return Error::Ok;
  SumF32 r;
  r.divide = true;
  r.count = static_cast<double>(a.plan.reduce_numel);  // 0 gives NaN, as in ATen
  run_reduce(a.plan, a.x->data_as<const float>(), a.out->data_as<float>(), r);
  return Error::Ok;
}

namespace {

template <bool kMax>
Error extreme(const char* op, Span<EValue*> args) {
  ReduceArgs a;
  TERN_RETURN_IF_ERROR(parse_reduce(op, args, &a));
  static const DType kAllowed[] = {DType::F32, DType::I32, DType::I64};
  TERN_RETURN_IF_ERROR(check_dtype_in(op, "x", *a.x, Span<const DType>(kAllowed)));
  TERN_RETURN_IF_ERROR(check_dtype(op, "out", *a.out, a.x->dtype));
  TERN_CHECK_OR_RETURN_ERROR(!a.plan.empty_reduced_dim, InvalidArgument,
                             "%s: x: expected every reduced dim to have a non-zero size (there "
                             "is no identity), found a reduced dim of size 0",
                             op);
  if (a.plan.out_numel == 0) return Error::Ok;
  switch (a.x->dtype) {
    case DType::F32:
      run_reduce(a.plan, a.x->data_as<const float>(), a.out->data_as<float>(),
                 Extreme<float, kMax>{});
      break;
    case DType::I32:
      run_reduce(a.plan, a.x->data_as<const int32_t>(), a.out->data_as<int32_t>(),
                 Extreme<int32_t, kMax>{});
      break;
    case DType::I64:
      run_reduce(a.plan, a.x->data_as<const int64_t>(), a.out->data_as<int64_t>(),
                 Extreme<int64_t, kMax>{});
      break;
    default:
      TERN_RETURN_ERROR(Internal, "%s: unhandled dtype %s", op, to_string(a.x->dtype));
  }
  return Error::Ok;
}

}  // namespace

Error amax(KernelContext& /*context*/, Span<EValue*> args) {
  return extreme<true>("tern::amax", args);
}

Error amin(KernelContext& /*context*/, Span<EValue*> args) {
  return extreme<false>("tern::amin", args);
}

}  // namespace portable
}  // namespace tern
