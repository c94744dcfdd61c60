// A temporary path unique to this process and test, so that ctest -j runs never collide.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace tern::testing_support {

/// TempDir()/<stem>_<pid>_<test name><suffix>, one path component: a '/' in a parameterized
/// test's name becomes '_'. The caller removes what it creates.
inline std::string unique_temp_path(const std::string& stem, const std::string& suffix = "") {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string dir = ::testing::TempDir();
  if (!dir.empty() && dir.back() != '/') dir += '/';
  std::string name = stem + "_" + std::to_string(::getpid()) + "_" +
                     (info ? std::string(info->name()) : std::string("global")) + suffix;
  for (char& ch : name) {
    if (ch == '/') ch = '_';
  }
  return dir + name;
}

}  // namespace tern::testing_support
