#include "backends/cpu/runtime/recipe_jobs.h"

namespace tern::cpu {
namespace {

struct JobsContext {
  const RecipeJob* jobs = nullptr;
  uint32_t count = 0;
};

/// Pool task `part` of the batch: the job whose parts hold it (the jobs are few: a linear
/// search from the end), then that part.
void run_part(void* context, size_t part) {
  const JobsContext* c = static_cast<const JobsContext*>(context);
  uint32_t j = c->count - 1;
  while (j > 0 && c->jobs[j].first_part > part) --j;
  const RecipeJob& job = c->jobs[j];
  run_recipe_part(*job.recipe, job.shape, job.sources, job.out, part - job.first_part);
}

}  // namespace

void run_recipe_jobs(RecipeJob* jobs, uint32_t count, pthreadpool_t pool) {
  if (count == 0) return;
  uint64_t parts = 0;
  for (uint32_t j = 0; j < count; ++j) {
    jobs[j].first_part = parts;
    parts += recipe_parts(*jobs[j].recipe);
  }
  JobsContext context{jobs, count};
  if (pool == nullptr || parts == 1) {
    for (uint64_t p = 0; p < parts; ++p) run_part(&context, static_cast<size_t>(p));
    return;
  }
  pthreadpool_parallelize_1d(pool, &run_part, &context, static_cast<size_t>(parts), 0);
}

}  // namespace tern::cpu
