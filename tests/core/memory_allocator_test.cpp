#include "runtime/core/memory_allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace tern {
namespace {

TEST(MemoryAllocatorTest, AllocatesAlignedFrontToBack) {
  alignas(64) uint8_t buf[256];
  MemoryAllocator a(buf, sizeof(buf));
  void* p1 = a.allocate(10, 1);
  ASSERT_EQ(p1, buf);
  void* p2 = a.allocate(8, 16);
  ASSERT_NE(p2, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p2) % 16, 0u);
  EXPECT_EQ(static_cast<uint8_t*>(p2), buf + 16);  // 10 rounded up to 16
  EXPECT_EQ(a.used(), 24u);
}

TEST(MemoryAllocatorTest, ExhaustionReturnsNullAndKeepsState) {
  alignas(64) uint8_t buf[64];
  MemoryAllocator a(buf, sizeof(buf));
  ASSERT_NE(a.allocate(60, 1), nullptr);
  EXPECT_EQ(a.allocate(5, 1), nullptr);
  EXPECT_EQ(a.used(), 60u);               // a failed allocation changes nothing
  EXPECT_NE(a.allocate(4, 1), nullptr);   // exactly fills the buffer
  EXPECT_EQ(a.allocate(1, 1), nullptr);
  EXPECT_NE(a.allocate(0, 1), nullptr);   // zero bytes always fit
}

TEST(MemoryAllocatorTest, AlignmentPaddingCountsAgainstCapacity) {
  alignas(64) uint8_t buf[72];
  MemoryAllocator a(buf, sizeof(buf));
  ASSERT_NE(a.allocate(1, 1), nullptr);
  EXPECT_EQ(a.allocate(16, 64), nullptr);  // would start at 64 and end at 80 > 72
  EXPECT_NE(a.allocate(8, 64), nullptr);   // starts at 64, ends at 72
}

TEST(MemoryAllocatorTest, OverflowingSizesFailCleanly) {
  alignas(64) uint8_t buf[64];
  MemoryAllocator a(buf, sizeof(buf));
  EXPECT_EQ(a.allocate(std::numeric_limits<size_t>::max(), 1), nullptr);
  EXPECT_EQ(a.allocate(std::numeric_limits<size_t>::max() - 8, 64), nullptr);
  EXPECT_EQ(a.allocate_array<uint64_t>(std::numeric_limits<size_t>::max() / 4), nullptr);
  EXPECT_EQ(a.used(), 0u);
}

TEST(MemoryAllocatorTest, RejectsNonPowerOfTwoAlignment) {
  alignas(64) uint8_t buf[64];
  MemoryAllocator a(buf, sizeof(buf));
  EXPECT_EQ(a.allocate(4, 3), nullptr);
  EXPECT_EQ(a.allocate(4, 0), nullptr);
}

TEST(MemoryAllocatorTest, NullBufferAndResetAndInstances) {
  MemoryAllocator empty;
  EXPECT_EQ(empty.allocate(1), nullptr);
  alignas(64) uint8_t buf[128];
  MemoryAllocator a(buf, sizeof(buf));
  struct Pod { int x = 7; double y = 2.5; };
  Pod* p = a.allocate_instance<Pod>();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->x, 7);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % alignof(Pod), 0u);
  a.reset();
  EXPECT_EQ(a.used(), 0u);
  EXPECT_EQ(a.allocate(128, 1), buf);
}

}  // namespace
}  // namespace tern
