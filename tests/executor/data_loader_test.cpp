#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/loader/buffer_data_loader.h"
#include "runtime/loader/file_data_loader.h"
#include "runtime/loader/mmap_data_loader.h"

namespace tern {
namespace {

/// A temporary file holding `bytes`, removed on destruction.
class TempFile {
 public:
  explicit TempFile(const std::vector<uint8_t>& bytes) {
    std::string templ = ::testing::TempDir() + "tern_loader_XXXXXX";
    std::vector<char> name(templ.begin(), templ.end());
    name.push_back('\0');
    const int fd = mkstemp(name.data());
    EXPECT_GE(fd, 0);
    path_ = name.data();
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    close(fd);
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const char* path() const { return path_.c_str(); }

 private:
  std::string path_;
};

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * 31 + 7) & 0xff);
  return v;
}

enum class Kind { Buffer, File, Mmap };

class DataLoaderTest : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    bytes_ = pattern(10000);
    file_ = std::make_unique<TempFile>(bytes_);
    switch (GetParam()) {
      case Kind::Buffer:
        loader_ = std::make_unique<BufferDataLoader>(bytes_.data(), bytes_.size());
        break;
      case Kind::File: {
        auto r = FileDataLoader::from(file_->path());
        ASSERT_TRUE(r.ok()) << last_error_message();
        loader_ = std::make_unique<FileDataLoader>(std::move(r.get()));
        break;
      }
      case Kind::Mmap: {
        auto r = MmapDataLoader::from(file_->path());
        ASSERT_TRUE(r.ok()) << last_error_message();
        loader_ = std::make_unique<MmapDataLoader>(std::move(r.get()));
        break;
      }
    }
  }
  std::vector<uint8_t> bytes_;
  std::unique_ptr<TempFile> file_;
  std::unique_ptr<DataLoader> loader_;
};

TEST_P(DataLoaderTest, ReportsSize) {
  auto size = loader_->size();
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, 10000u);
}

TEST_P(DataLoaderTest, LoadsRanges) {
  const std::pair<size_t, size_t> ranges[] = {{0, 64},   {64, 1000}, {4096, 5904},
                                              {9999, 1}, {0, 10000}, {7, 13}};
  for (const auto& [offset, size] : ranges) {
    auto buffer = loader_->load(offset, size);
    ASSERT_TRUE(buffer.ok()) << offset << " " << size << ": " << last_error_message();
    ASSERT_EQ(buffer->size(), size);
    EXPECT_EQ(0, std::memcmp(buffer->data(), bytes_.data() + offset, size))
        << "range " << offset << "+" << size;
  }
}

TEST_P(DataLoaderTest, OutOfRangeLoadsAreInvalidArgument) {
  const std::pair<size_t, size_t> bad[] = {{0, 10001}, {10000, 1},    {9990, 11},
                                           {20000, 0}, {SIZE_MAX, 2}, {1, SIZE_MAX}};
  for (const auto& [offset, size] : bad) {
    auto buffer = loader_->load(offset, size);
    ASSERT_FALSE(buffer.ok()) << offset << " " << size;
    EXPECT_EQ(buffer.error(), Error::InvalidArgument);
    EXPECT_NE(std::string(last_error_message()).find("10000-byte"), std::string::npos)
        << last_error_message();
  }
}

TEST_P(DataLoaderTest, EmptyLoadAtTheEndIsFine) {
  auto buffer = loader_->load(10000, 0);
  ASSERT_TRUE(buffer.ok());
  EXPECT_EQ(buffer->size(), 0u);
}

TEST_P(DataLoaderTest, AlignedOffsetsGiveAlignedBuffers) {
  if (GetParam() == Kind::Buffer) {
    GTEST_SKIP() << "a buffer loader has its caller's alignment";
  }
  for (size_t offset : {0, 64, 128, 4096}) {
    auto buffer = loader_->load(offset, 100);
    ASSERT_TRUE(buffer.ok());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer->data()) % 64, 0u) << offset;
  }
  // A page-aligned offset stays page-aligned (segments aligned to 4096 for mmap).
  auto page = loader_->load(4096, 100);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(page->data()) % 4096, 0u);
}

TEST_P(DataLoaderTest, BuffersOutliveEachOtherIndependently) {
  auto a = loader_->load(0, 100);
  auto b = loader_->load(50, 100);
  ASSERT_TRUE(a.ok() && b.ok());
  a->free();
  EXPECT_EQ(a->data(), nullptr);
  EXPECT_EQ(0, std::memcmp(b->data(), bytes_.data() + 50, 100));
}

INSTANTIATE_TEST_SUITE_P(AllLoaders, DataLoaderTest,
                         ::testing::Values(Kind::Buffer, Kind::File, Kind::Mmap),
                         [](const ::testing::TestParamInfo<Kind>& info) {
                           switch (info.param) {
                             case Kind::Buffer:
                               return std::string("Buffer");
                             case Kind::File:
                               return std::string("File");
                             case Kind::Mmap:
                               return std::string("Mmap");
                           }
                           return std::string("Unknown");
                         });

TEST(FileDataLoader, MissingFileIsAccessFailedNamingThePath) {
  auto r = FileDataLoader::from("/nonexistent/dir/model.pte");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), Error::AccessFailed);
  EXPECT_NE(std::string(last_error_message()).find("/nonexistent/dir/model.pte"),
            std::string::npos);
}

TEST(MmapDataLoader, MissingFileIsAccessFailedNamingThePath) {
  auto r = MmapDataLoader::from("/nonexistent/dir/model.pte");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), Error::AccessFailed);
  EXPECT_NE(std::string(last_error_message()).find("/nonexistent/dir/model.pte"),
            std::string::npos);
}

TEST(FileDataLoader, DirectoryIsAccessFailed) {
  auto r = FileDataLoader::from(::testing::TempDir().c_str());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), Error::AccessFailed);
}

TEST(FileDataLoader, MovedLoaderKeepsWorking) {
  const auto bytes = pattern(300);
  TempFile file(bytes);
  auto r = FileDataLoader::from(file.path());
  ASSERT_TRUE(r.ok());
  FileDataLoader moved(std::move(r.get()));
  auto buffer = moved.load(100, 200);
  ASSERT_TRUE(buffer.ok());
  EXPECT_EQ(0, std::memcmp(buffer->data(), bytes.data() + 100, 200));
  // The moved-from loader refuses cleanly.
  EXPECT_FALSE(r->load(0, 1).ok());
}

TEST(MmapDataLoader, EmptyFileHasSizeZero) {
  TempFile file({});
  auto r = MmapDataLoader::from(file.path());
  ASSERT_TRUE(r.ok()) << last_error_message();
  EXPECT_EQ(*r->size(), 0u);
  EXPECT_FALSE(r->load(0, 1).ok());
}

/// Resident KiB of the mapping containing `addr`, from /proc/self/smaps (-1 when not found).
long resident_kib(const void* addr) {
  FILE* f = std::fopen("/proc/self/smaps", "r");
  if (f == nullptr) return -1;
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  char line[512];
  bool inside = false;
  long kib = -1;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    unsigned long lo = 0, hi = 0;
    // A mapping's header line: "lo-hi perms offset dev inode path" (its first word has no
    // ':', unlike the "Key: value" lines; the device field "fe:00" comes later).
    const char* space = std::strchr(line, ' ');
    const char* colon = std::strchr(line, ':');
    if (std::sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && space != nullptr &&
        (colon == nullptr || colon > space)) {
      inside = a >= lo && a < hi;
      continue;
    }
    if (inside && std::sscanf(line, "Rss: %ld kB", &kib) == 1) break;
  }
  std::fclose(f);
  return kib;
}

TEST(MmapDataLoader, ReleaseResidentDropsWholePagesAndKeepsTheBytes) {
  const size_t size = 8u << 20;
  const auto bytes = pattern(size);
  TempFile file(bytes);
  auto r = MmapDataLoader::from(file.path());
  ASSERT_TRUE(r.ok()) << last_error_message();
  auto buffer = r->load(0, size);
  ASSERT_TRUE(buffer.ok());
  const uint8_t* data = static_cast<const uint8_t*>(buffer->data());
  unsigned sum = 0;
  for (size_t i = 0; i < size; i += 4096) sum += data[i];  // touch every page
  EXPECT_NE(sum, 0u);
  const long before = resident_kib(data);
  if (before < 0) GTEST_SKIP() << "no /proc/self/smaps";
  EXPECT_GE(before, 7L << 10);
  // A range not starting on a page: only the whole pages inside it go.
  r->release_resident(data + 100, size - 200);
  EXPECT_LE(resident_kib(data), 8 + 2 * static_cast<long>(sysconf(_SC_PAGESIZE)) / 1024);
  // The bytes are still there (read back from the file).
  EXPECT_EQ(std::memcmp(data, bytes.data(), size), 0);
  // Ranges outside the mapping are ignored.
  r->release_resident(bytes.data(), 4096);
  r->release_resident(data + size - 10, 4096);
  EXPECT_EQ(std::memcmp(data, bytes.data(), size), 0);
}

TEST(BufferDataLoader, PointsIntoTheCallersBuffer) {
  const auto bytes = pattern(100);
  BufferDataLoader loader(bytes.data(), bytes.size());
  auto buffer = loader.load(10, 20);
  ASSERT_TRUE(buffer.ok());
  EXPECT_EQ(buffer->data(), bytes.data() + 10);
}

// The alignment promise of DataLoader::load() (runtime/core/data_loader.h) holds for a caller's
// unaligned buffer too: ranges at 64-byte multiples come back as aligned copies.
TEST(BufferDataLoader, UnalignedCallerBufferGivesAlignedCopiesAtAlignedOffsets) {
  const auto bytes = pattern(300);
  std::vector<uint8_t> store(bytes.size() + 64);
  uint8_t* base = store.data();
  while (reinterpret_cast<uintptr_t>(base) % 64 != 1) ++base;  // 1 past a 64-byte boundary
  std::memcpy(base, bytes.data(), bytes.size());
  BufferDataLoader loader(base, bytes.size());
  for (size_t offset : {size_t{0}, size_t{64}, size_t{128}}) {
    auto buffer = loader.load(offset, 100);
    ASSERT_TRUE(buffer.ok()) << last_error_message();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer->data()) % kLoaderAlignment, 0u) << offset;
    EXPECT_NE(buffer->data(), base + offset);
    EXPECT_EQ(0, std::memcmp(buffer->data(), bytes.data() + offset, 100)) << offset;
  }
  // An odd offset promises byte alignment only: used in place.
  auto odd = loader.load(3, 10);
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(odd->data(), base + 3);
}

TEST(BufferDataLoader, AlignedCallerBufferIsZeroCopy) {
  const auto bytes = pattern(300);
  std::vector<uint8_t> store(bytes.size() + 64);
  uint8_t* base = store.data();
  while (reinterpret_cast<uintptr_t>(base) % 64 != 0) ++base;
  std::memcpy(base, bytes.data(), bytes.size());
  BufferDataLoader loader(base, bytes.size());
  auto buffer = loader.load(64, 100);
  ASSERT_TRUE(buffer.ok());
  EXPECT_EQ(buffer->data(), base + 64);
}

// Both file loaders open through open_regular_file(): the same refusal of a directory.
TEST(MmapDataLoader, DirectoryIsAccessFailedNamingIt) {
  const std::string dir = ::testing::TempDir();
  auto r = MmapDataLoader::from(dir.c_str());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), Error::AccessFailed);
  EXPECT_NE(std::string(last_error_message()).find("not a regular file"), std::string::npos)
      << last_error_message();
}

}  // namespace
}  // namespace tern
