#include "runtime/core/log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tern {
namespace {

std::vector<std::string>* g_lines = nullptr;

void capture(LogLevel, const char*, int, const char* message) { g_lines->push_back(message); }

TEST(LogTest, LevelsFilterAndSinkReceivesFormattedLines) {
  std::vector<std::string> lines;
  g_lines = &lines;
  set_log_sink(capture);
  set_log_level(LogLevel::Warning);
  TERN_LOG(Info, "hidden %d", 1);
  TERN_LOG(Warning, "shown %d", 2);
  TERN_LOG(Error, "also %s", "shown");
  set_log_level(LogLevel::Info);
  set_log_sink(nullptr);
  g_lines = nullptr;
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "shown 2");
  EXPECT_EQ(lines[1], "also shown");
}

TEST(PlatformTest, MonotonicClockAdvances) {
  const uint64_t a = monotonic_ns();
  const uint64_t b = monotonic_ns();
  EXPECT_LE(a, b);
}

}  // namespace
}  // namespace tern
