// The fused attention (fused_attention.h): tasks of (head, row block) items, the two products
// on the packed GEMM, the softmax rows by attention_softmax_row.h.
#include "backends/cpu/kernels/fused_attention.h"

#include <limits>

#include "backends/cpu/kernels/attention_softmax_row.h"
#include "backends/cpu/kernels/batch_matmul.h"
#include "backends/cpu/kernels/packed_gemm.h"
#include "backends/cpu/kernels/pool_flags.h"

namespace tern::cpu {
namespace {

/// Target bytes of one block of scores (with the head's packed K and V, it stays in L2).
constexpr int64_t kScoreBlockBytes = 256 << 10;
constexpr int64_t kMaxBlockRows = 256;
/// Causal blocks are shorter: a block computes the scores of its last row's keys for every row.
constexpr int64_t kMaxCausalBlockRows = 32;
/// Products of fewer multiply-adds run on the caller's thread (as batch_matmul).
constexpr double kMinMacsForPool = 1 << 19;

int64_t round_up16(uint64_t n) { return static_cast<int64_t>((n + 15) / 16 * 16); }

struct Slot {
  int64_t packed_k = 0, packed_v = 0, scores = 0, sums = 0, total = 0;
};

Slot slot_floats(const AttentionProblem& p, int64_t block_rows) {
  Slot s;
  s.packed_k = round_up16(packed_weight_floats(p.s, p.e));
  s.packed_v = round_up16(packed_weight_floats(p.ev, p.s));
  s.scores = round_up16(static_cast<uint64_t>(block_rows * p.s));
  s.sums = round_up16(static_cast<uint64_t>(block_rows));
  s.total = s.packed_k + s.packed_v + s.scores + s.sums;
  return s;
}

struct Plan {
  const AttentionProblem* p = nullptr;
  int64_t s = 0;  ///< keys read: p.s, or 1 + the last key the mask lets any row attend
  float* scratch = nullptr;
  Slot slot;
  int64_t block_rows = 1;
  int64_t blocks = 1;  ///< row blocks per head
  int64_t tasks = 1;
  double total_cost = 0;
  AttentionSoftmaxRowFn softmax_row = nullptr;
};

/// Keys the rows [r0, r1) of a head attend at most, of the first s (the causal limit of the
/// block's last row).
int64_t block_keys(const AttentionProblem& p, int64_t s, int64_t r0, int64_t r1) {
  if (p.causal_period == 0) return s;
  const int64_t per = p.causal_period;
  const int64_t last = r0 / per == (r1 - 1) / per ? (r1 - 1) % per + 1 : per;
  return last < s ? last : s;
}

int64_t row_limit(const AttentionProblem& p, int64_t s, int64_t row) {
  if (p.causal_period == 0) return s;
  const int64_t lim = row % p.causal_period + 1;
  return lim < s ? lim : s;
}

double item_cost(const Plan& plan, int64_t item) {
  const AttentionProblem& p = *plan.p;
  const int64_t r0 = item % plan.blocks * plan.block_rows;
  const int64_t r1 = r0 + plan.block_rows < p.l ? r0 + plan.block_rows : p.l;
  return static_cast<double>(r1 - r0) * static_cast<double>(block_keys(p, plan.s, r0, r1));
}

/// The first item of task t: items are cut where the running cost crosses t / tasks of the
/// total.
int64_t task_start(const Plan& plan, int64_t t) {
  if (t == 0) return 0;
  const int64_t items = plan.p->batch * plan.blocks;
  if (t >= plan.tasks) return items;
  const double target = plan.total_cost * static_cast<double>(t) / static_cast<double>(plan.tasks);
  double run = 0;
  for (int64_t i = 0; i < items; ++i) {
    if (run >= target) return i;
    run += item_cost(plan, i);
  }
  return items;
}

const float* mask_of_head(const AttentionProblem& p, int64_t b) {
  if (p.mask == nullptr) return nullptr;
  int64_t offset = 0;
  for (int d = p.mask_batch_rank - 1; d >= 0; --d) {
    offset += b % p.mask_batch_dims[d] * p.mask_batch_strides[d];
    b /= p.mask_batch_dims[d];
  }
  return p.mask + offset;
}

/// 1 + the last key that any query row of any head attends under the mask (a value other than
/// -inf; at least 1), or p.s. The keys after it weigh exactly 0 in every row (for finite
/// scores), so neither product reads them: a decode step over a KV cache filled to its
/// position packs and multiplies K and V up to the position only (the exporter writes a bool
/// mask computed from the inputs as this additive one). Results are bitwise those over every
/// key. Not with a transposed K, whose first keys are no contiguous rows to pack.
int64_t attended_keys(const AttentionProblem& p) {
  if (p.mask == nullptr || p.k_transposed) return p.s;
  const int64_t rows = p.mask_row_stride == 0 ? 1 : p.l;
  int64_t extent = 1;
  const float* previous = nullptr;
  for (int64_t b = 0; b < p.batch && extent < p.s; ++b) {
    const float* m = mask_of_head(p, b);
    if (m == previous) continue;  // a mask broadcast over heads: the same rows again
    previous = m;
    for (int64_t i = 0; i < rows; ++i) {
      const float* row = m + i * p.mask_row_stride;
      const int64_t lim = p.mask_row_stride == 0 ? p.s : row_limit(p, p.s, i);
      for (int64_t j = lim - 1; j >= extent; --j) {
        if (row[j] != -std::numeric_limits<float>::infinity()) {
          extent = j + 1;
          break;
        }
      }
    }
  }
  return extent;
}

void run_block(const Plan& plan, int64_t b, int64_t r0, int64_t r1, const float* packed_k,
               const float* packed_v, float* scores, float* inv) {
  const AttentionProblem& p = *plan.p;
  const int64_t rows = r1 - r0;
  const int64_t keys = block_keys(p, plan.s, r0, r1);
  GemmProblem qk;
  qk.m = rows;
  qk.n = keys;
  qk.k = p.e;
  qk.a = p.q + (b * p.l + r0) * p.e;
  qk.lda = p.e;
  qk.packed = packed_k;
  qk.c = scores;
  qk.ldc = keys;
  packed_gemm(qk, nullptr);
  const float* mask = mask_of_head(p, b);
  for (int64_t i = 0; i < rows; ++i) {
    const float* m = mask == nullptr ? nullptr : mask + (r0 + i) * p.mask_row_stride;
    inv[i] = plan.softmax_row(scores + i * keys, row_limit(p, plan.s, r0 + i), keys, p.scale, m);
  }
  GemmProblem pv;
  pv.m = rows;
  pv.n = p.ev;
  pv.k = keys;
  pv.packed_k = plan.s;
  pv.a = scores;
  pv.lda = keys;
  pv.packed = packed_v;
  pv.c = p.out + (b * p.l + r0) * p.ev;
  pv.ldc = p.ev;
  packed_gemm(pv, nullptr);
  const float empty = p.empty_rows_nan ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
  for (int64_t i = 0; i < rows; ++i) {
    float* o = pv.c + i * p.ev;
    if (inv[i] == 0.0f) {
      for (int64_t c = 0; c < p.ev; ++c) o[c] = empty;
      continue;
    }
    const float f = inv[i];
    for (int64_t c = 0; c < p.ev; ++c) o[c] *= f;
  }
}

void run_task(const Plan& plan, int64_t t) {
  const AttentionProblem& p = *plan.p;
  float* slot = plan.scratch + t * plan.slot.total;
  float* packed_k = slot;
  float* packed_v = packed_k + plan.slot.packed_k;
  float* scores = packed_v + plan.slot.packed_v;
  float* inv = scores + plan.slot.scores;
  const int64_t first = task_start(plan, t);
  const int64_t end = task_start(plan, t + 1);
  int64_t packed_head = -1;
  for (int64_t item = first; item < end; ++item) {
    const int64_t b = item / plan.blocks;
    if (b != packed_head) {
      const float* k = p.k + b * p.s * p.e;
      if (p.k_transposed) {
        pack_kn_weight(k, p.e, p.s, packed_k);  // kᵀ [e, s] as B
      } else {
        pack_fc_weight(k, nullptr, plan.s, p.e, packed_k);  // k [s, e] as an FC weight
      }
      pack_kn_weight(p.v + b * p.s * p.ev, plan.s, p.ev, packed_v);
      packed_head = b;
    }
    const int64_t r0 = item % plan.blocks * plan.block_rows;
    const int64_t r1 = r0 + plan.block_rows < p.l ? r0 + plan.block_rows : p.l;
    run_block(plan, b, r0, r1, packed_k, packed_v, scores, inv);
  }
}

void task_entry(void* context, size_t t) {
  run_task(*static_cast<const Plan*>(context), static_cast<int64_t>(t));
}

}  // namespace

int64_t attention_block_rows(const AttentionProblem& p) {
  const int64_t l = p.l, s = p.s;
  int64_t rows = kScoreBlockBytes / (4 * (s > 0 ? s : 1));
  const int64_t most = p.causal_period != 0 ? kMaxCausalBlockRows : kMaxBlockRows;
  if (rows > most) rows = most;
  if (rows > l) rows = l;
  return rows < 1 ? 1 : rows;
}

uint64_t attention_scratch_floats(const AttentionProblem& p, int64_t threads) {
  const Slot s = slot_floats(p, attention_block_rows(p));
  return static_cast<uint64_t>(s.total) * static_cast<uint64_t>(threads > 1 ? threads : 1);
}

void fused_attention(const AttentionProblem& p, float* scratch, pthreadpool_t pool) {
  Plan plan;
  plan.p = &p;
  plan.s = attended_keys(p);
  plan.scratch = scratch;
  plan.block_rows = attention_block_rows(p);
  plan.slot = slot_floats(p, plan.block_rows);
  plan.blocks = (p.l + plan.block_rows - 1) / plan.block_rows;
  plan.softmax_row = attention_softmax_row();
  const int64_t items = p.batch * plan.blocks;
  for (int64_t i = 0; i < items; ++i) plan.total_cost += item_cost(plan, i);
  const double macs = plan.total_cost * static_cast<double>(p.e + p.ev);
  int64_t threads = pool == nullptr ? 1 : static_cast<int64_t>(pthreadpool_get_threads_count(pool));
  if (macs < kMinMacsForPool) threads = 1;
  plan.tasks = threads < items ? threads : items;
  if (plan.tasks <= 1) {
    plan.tasks = 1;
    run_task(plan, 0);
    return;
  }
  pthreadpool_parallelize_1d(pool, &task_entry, &plan, static_cast<size_t>(plan.tasks), kPoolFlags);
}

}  // namespace tern::cpu
