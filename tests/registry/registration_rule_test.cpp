// The registration rule shared by the kernel registry, the backend registry and the backend
// compiler registry: registering a name again replaces the earlier entry in place (the last
// registration wins); null entries are refused with a message.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/backend/backend.h"
#include "runtime/kernel/kernel_registry.h"
#include "tools/compiler/backend_compiler.h"

namespace tern {
namespace {

Error kernel_a(KernelContext&, Span<EValue*>) { return Error::Ok; }
Error kernel_b(KernelContext&, Span<EValue*>) { return Error::NotSupported; }

TEST(RegistrationRule, KernelRegisteredAgainIsReplacedInPlace) {
  ASSERT_EQ(register_kernel("rule::first", kernel_a), Error::Ok);
  ASSERT_EQ(register_kernel("rule::second", kernel_a), Error::Ok);
  const size_t count = num_registered_kernels();
  ASSERT_EQ(register_kernel("rule::first", kernel_b), Error::Ok);
  EXPECT_EQ(num_registered_kernels(), count);
  EXPECT_EQ(find_kernel("rule::first"), &kernel_b);
  EXPECT_EQ(find_kernel("rule::second"), &kernel_a);
  // Same function again: still one entry.
  ASSERT_EQ(register_kernel("rule::first", kernel_b), Error::Ok);
  EXPECT_EQ(num_registered_kernels(), count);
}

TEST(RegistrationRule, KernelNullsAreRefused) {
  EXPECT_EQ(register_kernel(nullptr, kernel_a), Error::InvalidArgument);
  EXPECT_EQ(register_kernel("rule::null", nullptr), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("rule::null"), std::string::npos);
  EXPECT_EQ(find_kernel("rule::null"), nullptr);
}

class NamedBackend final : public BackendInterface {
 public:
  bool is_available() const override { return true; }
  Result<DelegateHandle*> init(BackendInitContext&, FreeableBuffer,
                               Span<const CompileSpecView>) const override {
    return Error::NotSupported;
  }
  Error execute(BackendExecuteContext&, DelegateHandle*, Span<EValue*>) const override {
    return Error::NotSupported;
  }
  void destroy(DelegateHandle*) const override {}
};

TEST(RegistrationRule, BackendRegisteredAgainIsReplacedInPlace) {
  clear_backend_registry_for_testing();
  static const NamedBackend first, second, other;
  Backend a;
  a.name = "rule_a";
  a.backend = &first;
  Backend b;
  b.name = "rule_b";
  b.backend = &other;
  ASSERT_EQ(register_backend(a), Error::Ok);
  ASSERT_EQ(register_backend(b), Error::Ok);
  a.backend = &second;
  ASSERT_EQ(register_backend(a), Error::Ok) << last_error_message();
  ASSERT_EQ(num_registered_backends(), 2u);
  EXPECT_EQ(std::string(registered_backend(0).name), "rule_a");  // kept its place
  EXPECT_EQ(find_backend("rule_a")->backend, &second);
  EXPECT_EQ(find_backend("rule_b")->backend, &other);
  clear_backend_registry_for_testing();
}

TEST(RegistrationRule, BackendNullsAndWrongVersionsAreRefused) {
  clear_backend_registry_for_testing();
  static const NamedBackend backend;
  Backend entry;
  entry.name = "rule_null";
  EXPECT_EQ(register_backend(entry), Error::InvalidArgument);
  entry.backend = &backend;
  entry.interface_version = kBackendInterfaceVersion + 1;
  EXPECT_EQ(register_backend(entry), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("interface version"), std::string::npos);
  EXPECT_EQ(num_registered_backends(), 0u);
}

class NamedCompiler final : public compiler::BackendCompiler {
 public:
  NamedCompiler(std::string name, int tag) : name_(std::move(name)), tag_(tag) {}
  std::string name() const override { return name_; }
  bool supports(const compiler::Graph&, const compiler::Node&) const override { return false; }
  compiler::LoweredRegion lower(const compiler::Graph&,
                                const compiler::DelegateRegion&) const override {
    return {};
  }
  int tag() const { return tag_; }

 private:
  std::string name_;
  int tag_;
};

TEST(RegistrationRule, BackendCompilerRegisteredAgainIsReplacedInPlace) {
  compiler::register_backend_compiler(std::make_unique<NamedCompiler>("rule_c1", 1));
  compiler::register_backend_compiler(std::make_unique<NamedCompiler>("rule_c2", 2));
  const std::vector<std::string> before = compiler::registered_backend_compilers();
  compiler::register_backend_compiler(std::make_unique<NamedCompiler>("rule_c1", 3));
  EXPECT_EQ(compiler::registered_backend_compilers(), before);  // same names, same order
  const auto* c1 = dynamic_cast<const NamedCompiler*>(compiler::find_backend_compiler("rule_c1"));
  ASSERT_NE(c1, nullptr);
  EXPECT_EQ(c1->tag(), 3);
  EXPECT_THROW(compiler::register_backend_compiler(nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace tern
