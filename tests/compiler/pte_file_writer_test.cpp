// Writing .pte files by streaming (pte_file_writer.h): the same bytes as the in-memory
// writers, and a failed write that leaves the destination as it was.
#include "tools/compiler/pte_file_writer.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/temp_path.h"
#include "tools/compiler/compile.h"
#include "tests/compiler/mlp_graph.h"

namespace tern::compiler {
namespace {

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

/// Files beside `path` whose names start with its name (the destination and any temporary).
std::vector<std::string> files_like(const std::string& path) {
  const std::filesystem::path p(path);
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(p.parent_path())) {
    const std::string name = e.path().filename().string();
    if (name.rfind(p.filename().string(), 0) == 0) out.push_back(name);
  }
  return out;
}

using testing::mlp_graph;

// Two methods sharing two of their three weights, segments page aligned (gaps of zeros between
// them): the streamed file is byte for byte compile_program's.
TEST(PteFileWriter, CompiledFileEqualsTheInMemoryBytes) {
  ProgramGraph program;
  program.methods.push_back(mlp_graph("forward", 0.75f));
  program.methods.push_back(mlp_graph("decode", -1.25f));
  for (const uint32_t alignment : {64u, 4096u}) {
    CompileOptions options;
    options.serializer.segment_alignment = alignment;
    const CompileResult in_memory = compile_program(program, options);
    const std::string path = testing_support::unique_temp_path("tern_pte_writer", ".pte");
    const CompileResult streamed = compile_program_to_file(program, path, options);
    EXPECT_TRUE(streamed.bytes.empty());
    EXPECT_EQ(streamed.file_size, in_memory.bytes.size());
    EXPECT_EQ(in_memory.file_size, in_memory.bytes.size());
    EXPECT_EQ(read_all(path), in_memory.bytes) << "alignment " << alignment;
    ASSERT_EQ(streamed.methods.size(), 2u);
    EXPECT_EQ(streamed.methods[1].arena_size, in_memory.methods[1].arena_size);
    std::remove(path.c_str());
  }
}

// A segment area with a gap, a piece cut at the area's end, a zero tail and checksums the
// writer computes from the pieces: write_pte's bytes.
TEST(PteFileWriter, StreamsTheAreaAsWritePteLaysItOut) {
  std::vector<uint8_t> a(16), b(8);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i + 1);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(0xf0 + i);
  pte::File file;
  file.methods.emplace_back();
  file.area_alignment = 128;
  file.area_size = 60;
  file.area_contents = {pte::AreaBytes{0, Span<const uint8_t>(a.data(), a.size())},
                        pte::AreaBytes{20, Span<const uint8_t>(b.data(), b.size())},
                        pte::AreaBytes{50, Span<const uint8_t>(a.data(), a.size())}};
  file.segments = {pte::Segment{0, 16, 64, std::nullopt}, pte::Segment{16, 12, 64, std::nullopt},
                   pte::Segment{50, 10, 64, std::nullopt}};
  const std::string path = testing_support::unique_temp_path("tern_pte_writer", ".pte");
  const std::vector<uint8_t> expected = write_pte(file);
  EXPECT_EQ(write_pte_file(file, path), expected.size());
  EXPECT_EQ(read_all(path), expected);
  std::remove(path.c_str());
}

// Pieces out of order are refused before anything is written (write_pte takes them).
TEST(PteFileWriter, RefusesOverlappingPieces) {
  std::vector<uint8_t> a(16, 1);
  pte::File file;
  file.methods.emplace_back();
  file.area_size = 32;
  file.area_contents = {pte::AreaBytes{8, Span<const uint8_t>(a.data(), a.size())},
                        pte::AreaBytes{4, Span<const uint8_t>(a.data(), a.size())}};
  const std::string path = testing_support::unique_temp_path("tern_pte_writer", ".pte");
  try {
    write_pte_file(file, path);
    ADD_FAILURE() << "wrote overlapping pieces";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("overlap"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(files_like(path).empty());
}

// A destination that is no regular file is written in place: compiling to /dev/null checks a
// program without keeping it, and leaves /dev/null a character device.
TEST(PteFileWriter, WritesDevNullInPlace) {
  ProgramGraph program;
  program.methods.push_back(mlp_graph("forward"));
  const CompileResult r = compile_program_to_file(program, "/dev/null");
  EXPECT_GT(r.file_size, 0u);
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_TRUE(files_like("/dev/null.tern-tmp-").empty()) << "a temporary file was left in /dev";
}

TEST(PteFileWriter, AMissingDirectoryNamesThePath) {
  ProgramGraph program;
  program.methods.push_back(mlp_graph("forward", 1.0f));
  try {
    compile_program_to_file(program, "/nonexistent/dir/out.pte");
    ADD_FAILURE() << "wrote into a missing directory";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("'/nonexistent/dir/out.pte'"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos)
        << e.what();
  }
}

// A write that fails half way (here a file size limit of 4 KiB, as a full disk would) throws
// naming the path and the reason, removes its temporary file and leaves an existing file at
// the destination as it was. Run in a child process: the limit is per process.
TEST(PteFileWriter, AFailedWriteLeavesTheDestinationAsItWas) {
  const std::string path = testing_support::unique_temp_path("tern_pte_writer", ".pte");
  const std::vector<uint8_t> old = {'o', 'l', 'd'};
  write_file(path, old);
  std::vector<uint8_t> weights(64 * 1024, 0x5a);
  pte::File file;
  file.methods.emplace_back();
  file.area_size = weights.size();
  file.area_contents = {pte::AreaBytes{0, Span<const uint8_t>(weights.data(), weights.size())}};
  file.segments = {pte::Segment{0, weights.size(), 64, std::nullopt}};

  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    signal(SIGXFSZ, SIG_IGN);  // the write then fails with EFBIG instead of killing us
    rlimit limit{4096, 4096};
    setrlimit(RLIMIT_FSIZE, &limit);
    try {
      write_pte_file(file, path);
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      const bool named = what.find("'" + path + "'") != std::string::npos &&
                         what.find(std::strerror(EFBIG)) != std::string::npos;
      if (!named) std::fprintf(stderr, "unexpected message: %s\n", e.what());
      _exit(named ? 0 : 2);
    }
    _exit(1);  // no exception
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the write did not fail, 2: its message";
  EXPECT_EQ(read_all(path), old);
  EXPECT_EQ(files_like(path), std::vector<std::string>{std::filesystem::path(path).filename()});
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tern::compiler
