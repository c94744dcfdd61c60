#include "runtime/core/hierarchical_allocator.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

namespace tern {
namespace {

TEST(HierarchicalAllocatorTest, AddressesInsideArenas) {
  uint8_t a0[100];
  uint8_t a1[50];
  Span<uint8_t> arenas[] = {{a0, sizeof(a0)}, {a1, sizeof(a1)}};
  HierarchicalAllocator h({arenas, 2});
  EXPECT_EQ(h.num_arenas(), 2u);
  auto p = h.get_offset_address(0, 10, 90);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, a0 + 10);
  auto q = h.get_offset_address(1, 50, 0);  // empty range at the very end is fine
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(*q, a1 + 50);
  EXPECT_EQ(h.device(1), DeviceType::Host);
}

TEST(HierarchicalAllocatorTest, OutOfBoundsNamesArenaAndSizes) {
  uint8_t a0[100];
  Span<uint8_t> arenas[] = {{a0, sizeof(a0)}};
  HierarchicalAllocator h({arenas, 1});
  auto r = h.get_offset_address(0, 90, 11);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), Error::MemoryAllocationFailed);
  EXPECT_NE(std::strstr(last_error_message(), "arena 0"), nullptr) << last_error_message();
  EXPECT_NE(std::strstr(last_error_message(), "100 bytes"), nullptr) << last_error_message();

  auto bad_id = h.get_offset_address(3, 0, 1);
  ASSERT_FALSE(bad_id.ok());
  EXPECT_EQ(bad_id.error(), Error::InvalidArgument);
  EXPECT_NE(std::strstr(last_error_message(), "arena 3"), nullptr);

  auto overflow = h.get_offset_address(0, std::numeric_limits<uint64_t>::max(), 2);
  ASSERT_FALSE(overflow.ok());
  EXPECT_EQ(overflow.error(), Error::MemoryAllocationFailed);
}

TEST(HierarchicalAllocatorTest, DeviceTags) {
  uint8_t a0[8], a1[8];
  Span<uint8_t> arenas[] = {{a0, 8}, {a1, 8}};
  const DeviceType devices[] = {DeviceType::Host, DeviceType::Cuda};
  HierarchicalAllocator h({arenas, 2}, {devices, 2});
  EXPECT_EQ(h.device(0), DeviceType::Host);
  EXPECT_EQ(h.device(1), DeviceType::Cuda);
}

}  // namespace
}  // namespace tern
