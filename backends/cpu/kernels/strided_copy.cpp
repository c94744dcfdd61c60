// The strided copy (strided_copy.h). Three ways through the output:
// - rows: the output's rows (all dims but the last) cut into bands, each row's input start
//   found by unravelling its index once, then stepped like an odometer; a row is one memcpy (or
//   a short vector loop) when its input stride is 1, else a gather;
// - blocks: when the innermost dim is short (at most kMaxInterleave) and reads with a stride
//   while the dim before it reads contiguous input, every block of those two dims is a small
//   transpose (ShuffleNet's channel shuffle in NHWC: 24 channels x 2 groups a pixel). Reading
//   it row by row would spend an odometer step on every 2 floats; the block path reads each
//   group's contiguous run once and interleaves 4 floats at a time (2 or 4 groups) or scatters
//   with a fixed stride (others);
// - tiles: when an output dim before the last reads the input contiguously and the last reads
//   it with a stride (a transpose of those two: NHWC flattened to [C, H·W]), 16 x 16 tiles, so
//   each input cache line is read once rather than once per float.
#include "backends/cpu/kernels/strided_copy.h"

#include "backends/cpu/kernels/interleave.h"
#include "backends/cpu/kernels/pool_flags.h"

namespace tern::cpu {
namespace {

using detail::load4;

/// Output floats per pool task, so that a split pays for its dispatch.
constexpr int64_t kFloatsPerTask = 16384;
/// Copies of fewer floats run on the caller's thread: a pool dispatch waits for every worker,
/// and on a loaded machine a descheduled one costs more than copying 2 MiB.
constexpr int64_t kMinFloatsForPool = int64_t{1} << 19;
/// The longest innermost dim the block path takes.
constexpr int64_t kMaxInterleave = 16;

/// One block: dst[a * g + j] = src[a + j * gstride] for a < n, j < g.
void interleave_block(float* dst, const float* src, int64_t n, int64_t g, int64_t gstride) {
  const float* runs[kMaxInterleave];
  for (int64_t j = 0; j < g; ++j) runs[j] = src + j * gstride;
  detail::interleave(dst, runs, g, n);
}

/// The tile path's tile side: a 16 x 16 tile reads 16 input runs of 16 floats (one cache line
/// each) and writes 16 output runs of 16 floats.
constexpr int64_t kTile = 16;
/// Output columns (innermost dim) per tile-path unit.
constexpr int64_t kTileColumns = 256;

/// The tile path's transposed pair: output dim `c` (before the last) reads the input
/// contiguously (stride 1) while the last dim reads it with a stride, both at least a tile
/// long: an NHWC tensor flattened to [C, H·W], YOLO's box distributions put bins-last. Row by row
/// every float of such a copy is a gather from another cache line; by tiles each line is read
/// once. -1 when p has no such dim.
int tiled_dim(const StridedCopyProblem& p) {
  if (p.rank < 2) return -1;
  const int last = p.rank - 1;
  if (p.stride[last] == 1 || p.stride[last] == 0 || p.extent[last] < kTile) return -1;
  for (int d = last - 1; d >= 0; --d) {
    if (p.stride[d] == 1) return p.extent[d] >= kTile ? d : -1;
  }
  return -1;
}

/// Whether the block path takes p: a short innermost dim read with a stride other than 1
/// after a dim read contiguously (and long enough that the blocks are worth it).
bool blockwise(const StridedCopyProblem& p) {
  if (p.rank < 2) return false;
  const int last = p.rank - 1;
  return p.extent[last] >= 2 && p.extent[last] <= kMaxInterleave && p.stride[last] != 1 &&
         p.stride[last - 1] == 1 && p.extent[last - 1] >= 4;
}

/// Index of output unit `begin` over dims 0..dims-1 (row-major over the extents) and the input
/// offset it reads from.
int64_t unravel(const StridedCopyProblem& p, int dims, int64_t begin, int64_t* idx) {
  int64_t at = p.offset;
  int64_t rest = begin;
  for (int d = dims - 1; d >= 0; --d) {
    idx[d] = rest % p.extent[d];
    rest /= p.extent[d];
    at += idx[d] * p.stride[d];
  }
  return at;
}

/// The odometer step over dims 0..dims-1.
inline void step(const StridedCopyProblem& p, int dims, int64_t* idx, int64_t* at) {
  for (int d = dims - 1; d >= 0; --d) {
    *at += p.stride[d];
    if (++idx[d] < p.extent[d]) return;
    *at -= idx[d] * p.stride[d];
    idx[d] = 0;
  }
}

/// Output rows [begin, end) (rows: every dim but the last).
void copy_rows(const StridedCopyProblem& p, int64_t begin, int64_t end) {
  const int last = p.rank - 1;
  const int64_t width = p.extent[last];
  const int64_t inner = p.stride[last];
  int64_t idx[kStridedCopyMaxDims] = {};
  int64_t at = unravel(p, last, begin, idx);
  float* dst = p.y + begin * width;
  for (int64_t r = begin; r < end; ++r, dst += width) {
    const float* src = p.x + at;
    if (inner == 1) {
      detail::copy_floats(dst, src, width);
    } else {
      for (int64_t i = 0; i < width; ++i) dst[i] = src[i * inner];
    }
    step(p, last, idx, &at);
  }
}

/// Output blocks [begin, end) (blocks: every dim but the last two; blockwise(p) holds).
void copy_blocks(const StridedCopyProblem& p, int64_t begin, int64_t end) {
  const int outer = p.rank - 2;
  const int64_t n = p.extent[outer];
  const int64_t g = p.extent[outer + 1];
  const int64_t gstride = p.stride[outer + 1];
  int64_t idx[kStridedCopyMaxDims] = {};
  int64_t at = unravel(p, outer, begin, idx);
  float* dst = p.y + begin * n * g;
  for (int64_t b = begin; b < end; ++b, dst += n * g) {
    interleave_block(dst, p.x + at, n, g, gstride);
    step(p, outer, idx, &at);
  }
}

/// Tile-path units [begin, end): unit u is columns [u % chunks · kTileColumns, +kTileColumns)
/// of the output's innermost dim for every index of dim c, at the u / chunks-th index of the
/// other dims (row-major). The input run of a tile's column is contiguous along dim c.
void copy_tiles(const StridedCopyProblem& p, int c, int64_t begin, int64_t end) {
  const int last = p.rank - 1;
  const int64_t m = p.extent[last], n = p.extent[c], s = p.stride[last];
  int64_t ostride[kStridedCopyMaxDims];  // the output's row-major strides
  ostride[last] = 1;
  for (int d = last - 1; d >= 0; --d) ostride[d] = ostride[d + 1] * p.extent[d + 1];
  const int64_t chunks = (m + kTileColumns - 1) / kTileColumns;
  for (int64_t u = begin; u < end; ++u) {
    int64_t rest = u / chunks, in_at = p.offset, out_at = 0;
    for (int d = last - 1; d >= 0; --d) {  // the other dims, innermost first
      if (d == c) continue;
      const int64_t i = rest % p.extent[d];
      rest /= p.extent[d];
      in_at += i * p.stride[d];
      out_at += i * ostride[d];
    }
    const int64_t j0 = (u % chunks) * kTileColumns;
    const int64_t j1 = j0 + kTileColumns < m ? j0 + kTileColumns : m;
    const int64_t oc = ostride[c];
    for (int64_t a0 = 0; a0 < n; a0 += kTile) {
      const int64_t a1 = a0 + kTile < n ? a0 + kTile : n;
      for (int64_t b0 = j0; b0 < j1; b0 += kTile) {
        const int64_t b1 = b0 + kTile < j1 ? b0 + kTile : j1;
        int64_t a = a0;
        for (; a + 4 <= a1; a += 4) {  // 4 x 4 transposes through vector shuffles
          float* dst = p.y + out_at + a * oc;
          const float* src = p.x + in_at + a;
          int64_t b = b0;
          for (; b + 4 <= b1; b += 4) {
            detail::transpose4(load4(src + b * s), load4(src + (b + 1) * s),
                               load4(src + (b + 2) * s), load4(src + (b + 3) * s), dst + b,
                               dst + oc + b, dst + 2 * oc + b, dst + 3 * oc + b);
          }
          for (; b < b1; ++b) {
            for (int64_t i = 0; i < 4; ++i) dst[i * oc + b] = src[i + b * s];
          }
        }
        for (; a < a1; ++a) {
          float* dst = p.y + out_at + a * oc;
          const float* src = p.x + in_at + a;
          for (int64_t b = b0; b < b1; ++b) dst[b] = src[b * s];
        }
      }
    }
  }
}

struct Band {
  const StridedCopyProblem* p = nullptr;
  int tiled = -1;  ///< the tile path's dim c (tiled_dim), or -1
  bool blocks = false;
  int64_t units = 0;  ///< rows, or blocks
  int64_t units_per_task = 1;
};

void copy_band(void* context, size_t i) {
  const Band& b = *static_cast<const Band*>(context);
  const int64_t begin = static_cast<int64_t>(i) * b.units_per_task;
  const int64_t end = begin + b.units_per_task < b.units ? begin + b.units_per_task : b.units;
  if (b.tiled >= 0) {
    copy_tiles(*b.p, b.tiled, begin, end);
  } else if (b.blocks) {
    copy_blocks(*b.p, begin, end);
  } else {
    copy_rows(*b.p, begin, end);
  }
}

}  // namespace

void strided_copy(const StridedCopyProblem& p, pthreadpool_t pool) {
  Band b;
  b.p = &p;
  b.tiled = tiled_dim(p);  // before the blocks: 16 groups scatter there, float by float
  b.blocks = b.tiled < 0 && blockwise(p);
  const int unit_dims = b.blocks ? p.rank - 2 : p.rank - 1;
  b.units = 1;
  for (int d = 0; d < unit_dims; ++d) b.units *= p.extent[d];
  int64_t unit = 1;  // output floats a unit
  for (int d = unit_dims; d < p.rank; ++d) unit *= p.extent[d];
  if (b.tiled >= 0) {  // units of kTileColumns columns by the whole of dim c
    const int64_t m = p.extent[p.rank - 1];
    const int64_t chunks = (m + kTileColumns - 1) / kTileColumns;
    b.units = chunks;
    for (int d = 0; d < p.rank - 1; ++d) b.units *= d == b.tiled ? 1 : p.extent[d];
    unit = p.extent[b.tiled] * (m < kTileColumns ? m : kTileColumns);
  }
  b.units_per_task = unit >= kFloatsPerTask ? 1 : kFloatsPerTask / unit;
  const size_t tasks = static_cast<size_t>((b.units + b.units_per_task - 1) / b.units_per_task);
  if (pool == nullptr || tasks <= 1 || b.units * unit < kMinFloatsForPool ||
      pthreadpool_get_threads_count(pool) <= 1) {
    b.units_per_task = b.units;  // one task over every unit
    copy_band(&b, 0);
    return;
  }
  pthreadpool_parallelize_1d(pool, &copy_band, &b, tasks, kPoolFlags);
}

}  // namespace tern::cpu
