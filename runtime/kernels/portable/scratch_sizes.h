// Scratch (temp allocator) bytes each portable kernel needs, as pure functions of shapes.
//
// The compiler (tools/compiler/kernel_scratch.cpp) plans MethodMeta::temp_allocator_bytes()
// with these functions, and each kernel asks its temp allocator for exactly what its function
// says, so the two cannot drift apart. A kernel whose scratch does not fit returns
// MemoryAllocationFailed naming the op, the bytes needed and the bytes available.
#pragma once

#include <cstdint>

namespace tern::portable {

/// Alignment of every scratch allocation (and the slack the planner adds per allocation).
constexpr uint64_t kScratchAlignment = 64;

}  // namespace tern::portable
