// Recipes run together over a pthreadpool (internal to backends/cpu/runtime): the first prepare
// of a delegate queues the recipes of its Derived values in batches and runs each batch's parts
// (weights/weight_recipe.h recipe_parts) on all the pool's threads, so packing a large model's
// weights at load takes every core instead of one.
#pragma once

#include <pthreadpool.h>

#include <cstdint>

#include "backends/cpu/weights/weight_recipe.h"

namespace tern::cpu {

/// One recipe to run: what run_recipe takes (checked by recipe_shape), its output buffer, and
/// the index of its first part among the batch's (set by run_recipe_jobs).
struct RecipeJob {
  const BlobRecipe* recipe = nullptr;
  RecipeShape shape;
  RecipeSource sources[kRecipeSources];
  float* out = nullptr;
  uint64_t first_part = 0;
};

/// Runs every part of jobs[0, count) — each recipe's values exactly as run_recipe makes them —
/// on `pool`'s threads and the caller's (null: the caller's alone), returning when all are
/// done. The floats are those of running the jobs one after another: parts write disjoint
/// floats and read only the sources. Denormals are left as they are (no flush on the workers:
/// the transforms' arithmetic gives the same floats on every thread). Never allocates.
void run_recipe_jobs(RecipeJob* jobs, uint32_t count, pthreadpool_t pool);

}  // namespace tern::cpu
