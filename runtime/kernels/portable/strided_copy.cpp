#include "runtime/kernels/portable/strided_copy.h"

#include <cstring>

namespace tern::portable::dm {
namespace {

constexpr int64_t kTile = 32;

// One element of E bytes; memcpy of a constant size compiles to a plain move.
template <size_t E>
struct Elem {
  static void copy(uint8_t* d, const uint8_t* s, size_t) { std::memcpy(d, s, E); }
};
struct AnyElem {
  static void copy(uint8_t* d, const uint8_t* s, size_t n) { std::memcpy(d, s, n); }
};

// The coalesced problem: dims without size-1 dims, adjacent source-contiguous dims merged.
struct Layout {
  uint32_t rank = 0;
  int64_t sizes[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};  // source, in elements
};

Layout coalesce(Span<const int64_t> shape, const int64_t* src_strides) {
  Layout l;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (l.rank > 0 && l.strides[l.rank - 1] == src_strides[d] * shape[d]) {
      l.sizes[l.rank - 1] *= shape[d];
      l.strides[l.rank - 1] = src_strides[d];
    } else {
      l.sizes[l.rank] = shape[d];
      l.strides[l.rank] = src_strides[d];
      ++l.rank;
    }
  }
  return l;
}

// Walks every index of dims [0, rank) except `skip0` and `skip1` (may be out of range),
// calling f(src_offset, dst_offset) in elements. dst_strides are contiguous output strides.
template <typename F>
void walk_outer(const Layout& l, const int64_t* dst_strides, uint32_t skip0, uint32_t skip1,
                F f) {
  int64_t index[kMaxRank] = {};
  int64_t src = 0;
  int64_t dst = 0;
  for (;;) {
    f(src, dst);
    int32_t d = static_cast<int32_t>(l.rank) - 1;
    for (; d >= 0; --d) {
      const uint32_t u = static_cast<uint32_t>(d);
      if (u == skip0 || u == skip1) continue;
      ++index[u];
      src += l.strides[u];
      dst += dst_strides[u];
      if (index[u] < l.sizes[u]) break;
      src -= l.strides[u] * index[u];
      dst -= dst_strides[u] * index[u];
      index[u] = 0;
    }
    if (d < 0) return;
  }
}

template <typename E>
void copy_layout(uint8_t* dst, const uint8_t* src, size_t es, const Layout& l) {
  if (l.rank == 0) {
    if (dst != src) E::copy(dst, src, es);
    return;
  }
  int64_t dst_strides[kMaxRank];
  contiguous_strides(Span<const int64_t>(l.sizes, l.rank), dst_strides);
  const uint32_t last = l.rank - 1;
  const int64_t inner = l.sizes[last];
  const int64_t istride = l.strides[last];
  if (istride == 1) {  // contiguous runs
    const size_t run = static_cast<size_t>(inner) * es;
    walk_outer(l, dst_strides, last, last, [&](int64_t s, int64_t d) {
      std::memcpy(dst + d * static_cast<int64_t>(es), src + s * static_cast<int64_t>(es), run);
    });
    return;
  }
  // A transpose: the source's unit-stride dim k is an outer dim of the output. Copy 2-D tiles
  // of (dim k, innermost dim) so that both sides stay in cache.
  uint32_t k = last;
  for (uint32_t d = 0; d < last; ++d) {
    if (l.strides[d] == 1) k = d;
  }
  if (k != last && istride > 0) {
    const int64_t rows = l.sizes[k];
    const int64_t dk = dst_strides[k];
    walk_outer(l, dst_strides, k, last, [&](int64_t s, int64_t d) {
      for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
        const int64_t r1 = r0 + kTile < rows ? r0 + kTile : rows;
        for (int64_t c0 = 0; c0 < inner; c0 += kTile) {
          const int64_t c1 = c0 + kTile < inner ? c0 + kTile : inner;
          for (int64_t r = r0; r < r1; ++r) {
            uint8_t* drow = dst + (d + r * dk) * static_cast<int64_t>(es);
            const uint8_t* srow = src + (s + r) * static_cast<int64_t>(es);
            for (int64_t c = c0; c < c1; ++c) {
              E::copy(drow + c * static_cast<int64_t>(es),
                      srow + c * istride * static_cast<int64_t>(es), es);
            }
          }
        }
      }
    });
    return;
  }
  // General: element by element along the innermost dim (stride 0 repeats one element).
  walk_outer(l, dst_strides, last, last, [&](int64_t s, int64_t d) {
    uint8_t* drow = dst + d * static_cast<int64_t>(es);
    const uint8_t* srow = src + s * static_cast<int64_t>(es);
    for (int64_t c = 0; c < inner; ++c) {
      E::copy(drow + c * static_cast<int64_t>(es), srow + c * istride * static_cast<int64_t>(es),
              es);
    }
  });
}

}  // namespace

void contiguous_strides(Span<const int64_t> shape, int64_t* strides) {
  int64_t s = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = s;
    s *= shape[d];
  }
}

void strided_copy(void* dst, const void* src, size_t elem_size, Span<const int64_t> shape,
                  const int64_t* src_strides) {
  for (int64_t s : shape) {
    if (s == 0) return;
  }
  const Layout l = coalesce(shape, src_strides);
  uint8_t* d = static_cast<uint8_t*>(dst);
  const uint8_t* s = static_cast<const uint8_t*>(src);
  switch (elem_size) {
    case 1: copy_layout<Elem<1>>(d, s, 1, l); break;
    case 2: copy_layout<Elem<2>>(d, s, 2, l); break;
    case 4: copy_layout<Elem<4>>(d, s, 4, l); break;
    case 8: copy_layout<Elem<8>>(d, s, 8, l); break;
    default: copy_layout<AnyElem>(d, s, elem_size, l); break;
  }
}

void copy_piece(const TensorView& x, uint32_t dim, int64_t start, int64_t len, int64_t step,
                const TensorView& out) {
  const size_t es = bits_per_element(x.dtype) / 8;
  int64_t outer = 1;
  for (uint32_t d = 0; d < dim; ++d) outer *= x.sizes[d];
  int64_t inner = 1;
  for (uint32_t d = dim + 1; d < x.rank; ++d) inner *= x.sizes[d];
  if (outer == 0 || len == 0 || inner == 0) return;
  const uint8_t* first = static_cast<const uint8_t*>(x.data) +
                         static_cast<size_t>(start) * static_cast<size_t>(inner) * es;
  if ((outer == 1 || len == x.sizes[dim]) && (step == 1 || len == 1)) {  // one run
    if (out.data != first) {
      std::memmove(out.data, first,
                   static_cast<size_t>(outer * len) * static_cast<size_t>(inner) * es);
    }
    return;
  }
  const int64_t shape[3] = {outer, len, inner};
  const int64_t strides[3] = {x.sizes[dim] * inner, step * inner, 1};
  strided_copy(out.data, first, es, Span<const int64_t>(shape, 3), strides);
}

void fill_elements(void* dst, const void* value, size_t elem_size, uint64_t count) {
  uint8_t* d = static_cast<uint8_t*>(dst);
  const uint8_t* v = static_cast<const uint8_t*>(value);
  bool zero = true;
  for (size_t i = 0; i < elem_size; ++i) zero = zero && v[i] == 0;
  if (zero || elem_size == 1) {
    std::memset(d, zero ? 0 : v[0], static_cast<size_t>(count) * elem_size);
    return;
  }
  for (uint64_t i = 0; i < count; ++i) std::memcpy(d + i * elem_size, v, elem_size);
}

}  // namespace tern::portable::dm
