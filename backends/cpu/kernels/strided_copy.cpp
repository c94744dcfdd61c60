// The strided copy (strided_copy.h). Two ways through the output:
// - rows: the output's rows (all dims but the last) cut into bands, each row's input start
//   found by unravelling its index once, then stepped like an odometer; a row is one memcpy (or
//   a short vector loop) when its input stride is 1, else a gather;
// - blocks: when the innermost dim is short (at most kMaxInterleave) and reads with a stride
//   while the dim before it reads contiguous input, every block of those two dims is a small
//   transpose (ShuffleNet's channel shuffle in NHWC: 24 channels x 2 groups a pixel). Reading
//   it row by row would spend an odometer step on every 2 floats; the block path reads each
//   group's contiguous run once and interleaves 4 floats at a time (2 or 4 groups) or scatters
//   with a fixed stride (others).
#include "backends/cpu/kernels/strided_copy.h"

#include "backends/cpu/kernels/interleave.h"
#include "backends/cpu/kernels/pool_flags.h"

namespace tern::cpu {
namespace {

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

struct Band {
  const StridedCopyProblem* p = nullptr;
  bool blocks = false;
  int64_t units = 0;  ///< rows, or blocks
  int64_t units_per_task = 1;
};

void copy_band(void* context, size_t i) {
  const Band& b = *static_cast<const Band*>(context);
  const int64_t begin = static_cast<int64_t>(i) * b.units_per_task;
  const int64_t end = begin + b.units_per_task < b.units ? begin + b.units_per_task : b.units;
  if (b.blocks) {
    copy_blocks(*b.p, begin, end);
  } else {
    copy_rows(*b.p, begin, end);
  }
}

}  // namespace

void strided_copy(const StridedCopyProblem& p, pthreadpool_t pool) {
  Band b;
  b.p = &p;
  b.blocks = blockwise(p);
  const int unit_dims = b.blocks ? p.rank - 2 : p.rank - 1;
  b.units = 1;
  for (int d = 0; d < unit_dims; ++d) b.units *= p.extent[d];
  int64_t unit = 1;  // output floats a unit
  for (int d = unit_dims; d < p.rank; ++d) unit *= p.extent[d];
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
