#include "backends/cpu/kernels/unary_math.h"

#include <cmath>

#include "backends/cpu/kernels/pool_flags.h"
#include "runtime/kernels/util/softplus_value.h"

namespace tern::cpu {
namespace {

/// Elements per pool task: enough libm calls to pay for the dispatch.
constexpr int64_t kChunk = 8192;

void run_range(const UnaryMathProblem& p, int64_t begin, int64_t end) {
  switch (p.fn) {
    case UnaryMathFn::Exp:
      for (int64_t i = begin; i < end; ++i) p.y[i] = std::exp(p.x[i]);
      return;
    case UnaryMathFn::Softplus:
      for (int64_t i = begin; i < end; ++i) {
        p.y[i] = portable::softplus_value(p.x[i], p.beta, p.threshold);
      }
      return;
    case UnaryMathFn::Sin:
      for (int64_t i = begin; i < end; ++i) p.y[i] = std::sin(p.x[i]);
      return;
    case UnaryMathFn::Cos:
      for (int64_t i = begin; i < end; ++i) p.y[i] = std::cos(p.x[i]);
      return;
    case UnaryMathFn::Log:
      for (int64_t i = begin; i < end; ++i) p.y[i] = std::log(p.x[i]);
      return;
    case UnaryMathFn::Expm1:
      for (int64_t i = begin; i < end; ++i) p.y[i] = std::expm1(p.x[i]);
      return;
    case UnaryMathFn::Log1p:
      for (int64_t i = begin; i < end; ++i) p.y[i] = std::log1p(p.x[i]);
      return;
    case UnaryMathFn::Acos:
      for (int64_t i = begin; i < end; ++i) p.y[i] = std::acos(p.x[i]);
      return;
    case UnaryMathFn::Asin:
      for (int64_t i = begin; i < end; ++i) p.y[i] = std::asin(p.x[i]);
      return;
    case UnaryMathFn::Atan:
      for (int64_t i = begin; i < end; ++i) p.y[i] = std::atan(p.x[i]);
      return;
    case UnaryMathFn::Pow: {  // the portable pow's float std::pow (binary_arith.cpp)
      const float e = p.beta;
      for (int64_t i = begin; i < end; ++i) p.y[i] = std::pow(p.x[i], e);
      return;
    }
  }
}

void run_chunk(void* context, size_t i) {
  const UnaryMathProblem& p = *static_cast<const UnaryMathProblem*>(context);
  const int64_t begin = static_cast<int64_t>(i) * kChunk;
  run_range(p, begin, p.n - begin < kChunk ? p.n : begin + kChunk);
}

}  // namespace

void unary_math(const UnaryMathProblem& p, pthreadpool_t pool) {
  const size_t chunks = static_cast<size_t>((p.n + kChunk - 1) / kChunk);
  if (pool == nullptr || chunks <= 1 || pthreadpool_get_threads_count(pool) <= 1) {
    run_range(p, 0, p.n);
    return;
  }
  pthreadpool_parallelize_1d(pool, &run_chunk, const_cast<UnaryMathProblem*>(&p), chunks,
                             kPoolFlags);
}

}  // namespace tern::cpu
