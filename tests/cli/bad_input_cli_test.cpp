// Bad inputs at the CLI (docs/errors.md): `tern run` with a .npy that lies about its size, the
// wrong dtype or shape, a method that does not exist, or a malformed --backend-option exits 1 with one "tern: error:" line
// naming the file, what was expected and what was found.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/sample_programs.h"
#include "tests/support/temp_path.h"
#include "tools/cli/npy.h"
#include "tools/compiler/serializer.h"

namespace tern {
namespace {

namespace fs = std::filesystem;

struct CommandRun {
  int exit_code = -1;
  std::string err;
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class BadInputCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tern::testing_support::unique_temp_path("bad_input_cli");
    fs::create_directories(dir_);
    // forward(x: f32[2, 3]) -> f32[2, 3]
    compiler::write_file((dir_ / "model.pte").string(),
                         fuzz::compile_one(fuzz::elementwise_graph(), "elementwise"));
  }
  void TearDown() override { fs::remove_all(dir_); }

  CommandRun tern(const std::string& args) {
    const fs::path err = dir_ / "stderr";
    const std::string cmd = std::string("'") + TERN_BINARY_DIR + "/tern' " + args +
                            " >/dev/null 2>'" + err.string() + "'";
    const int status = std::system(cmd.c_str());
    CommandRun r;
    r.exit_code = (status != -1 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
    r.err = read_text(err);
    return r;
  }
  std::string model() const { return "'" + (dir_ / "model.pte").string() + "'"; }

  /// A valid f32 .npy of `shape`, then `extra` bytes appended (negative: removed).
  fs::path npy(const std::string& name, std::vector<int64_t> shape, DType dtype, int extra) {
    NpyArray a;
    a.dtype = dtype;
    a.shape = std::move(shape);
    a.data.assign(static_cast<size_t>(a.numel()) * 4, 0);
    std::vector<uint8_t> bytes = encode_npy(a);
    if (extra < 0)
      bytes.resize(bytes.size() - static_cast<size_t>(-extra));
    else
      bytes.insert(bytes.end(), static_cast<size_t>(extra), 0);
    const fs::path path = dir_ / name;
    compiler::write_file(path.string(), bytes);
    return path;
  }
  void expect_error(const CommandRun& r, const std::vector<std::string>& parts) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.err.rfind("tern: error:", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    for (const std::string& p : parts)
      EXPECT_NE(r.err.find(p), std::string::npos) << p << "\n" << r.err;
  }

  fs::path dir_;
};

TEST_F(BadInputCli, NpyShorterThanItsHeaderSays) {
  const fs::path p = npy("short.npy", {2, 3}, DType::F32, -8);
  expect_error(
      tern("run " + model() + " --input '" + p.string() + "'"),
      {"short.npy", "truncated .npy data: shape (2, 3) of '<f4' needs 24 bytes, found 16"});
}

TEST_F(BadInputCli, NpyLongerThanItsHeaderSays) {
  const fs::path p = npy("long.npy", {2, 3}, DType::F32, 4);
  expect_error(tern("run " + model() + " --input '" + p.string() + "'"),
               {"long.npy", "oversized .npy data: shape (2, 3) of '<f4' needs 24 bytes, found 28"});
}

TEST_F(BadInputCli, NpyOfTheWrongDtype) {
  const fs::path p = npy("int.npy", {2, 3}, DType::I32, 0);
  expect_error(tern("run " + model() + " --input '" + p.string() + "'"),
               {"int.npy", "expected f32 [2, 3], found i32 [2, 3]"});
}

TEST_F(BadInputCli, NpyOfTheWrongShape) {
  const fs::path p = npy("wide.npy", {3, 2}, DType::F32, 0);
  expect_error(tern("run " + model() + " --input '" + p.string() + "'"),
               {"wide.npy", "expected f32 [2, 3], found f32 [3, 2]"});
}

TEST_F(BadInputCli, UnknownMethod) {
  expect_error(tern("run " + model() + " --method decode --ones"), {"decode", "forward"});
}

TEST_F(BadInputCli, MalformedBackendOption) {
  for (const char* bad : {"vulkan", "vulkan.device", ".device=1", "vulkan.=1"}) {
    expect_error(tern("run " + model() + " --ones --backend-option '" + bad + "'"),
                 {std::string("--backend-option '") + bad + "'", "expected BACKEND.KEY=VALUE"});
  }
}

// An output that cannot be written is a one-line error naming it and the reason; an existing
// output stays as it was (pte_file_writer.h: written to a temporary, renamed when whole).
TEST_F(BadInputCli, CompileToAnUnwritablePath) {
  const fs::path graph = dir_ / "relu.json";
  std::ofstream(graph) << R"({"version": 1, "methods": [{"name": "forward",
      "values": [{"type": "tensor", "name": "x", "dtype": "f32", "shape": [2]},
                 {"type": "tensor", "name": "y", "dtype": "f32", "shape": [2]}],
      "inputs": [0], "outputs": [1],
      "nodes": [{"op": "tern::relu", "args": [0], "outputs": [1]}]}]})";
  const fs::path missing = dir_ / "missing" / "out.pte";
  expect_error(tern("compile '" + graph.string() + "' -o '" + missing.string() + "'"),
               {"'" + missing.string() + "'", "No such file or directory"});
  EXPECT_FALSE(fs::exists(missing.parent_path()));
  // Into an existing file: replaced whole.
  const fs::path out = dir_ / "out.pte";
  std::ofstream(out) << "old";
  EXPECT_EQ(tern("compile '" + graph.string() + "' -o '" + out.string() + "'").exit_code, 0);
  EXPECT_GT(fs::file_size(out), 64u);
  EXPECT_EQ(tern("verify '" + out.string() + "'").exit_code, 0);
}

}  // namespace
}  // namespace tern
