#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

#include "runtime/core/error.h"
#include "runtime/core/result.h"

namespace tern {
namespace {

Error check_positive(int v) {
  TERN_CHECK_OR_RETURN_ERROR(v > 0, InvalidArgument, "value %d: expected > 0", v);
  return Error::Ok;
}

Result<int> half(int v) {
  TERN_CHECK_OR_RETURN_ERROR(v % 2 == 0, InvalidArgument, "%d is odd", v);
  return v / 2;
}

Result<int> quarter(int v) {
  TERN_ASSIGN_OR_RETURN(int h, half(v));
  TERN_ASSIGN_OR_RETURN(int q, half(h));
  return q;
}

Error chain(int v) {
  TERN_RETURN_IF_ERROR(check_positive(v));
  return Error::Ok;
}

TEST(ErrorTest, MessagesCarryContext) {
  clear_error_message();
  EXPECT_STREQ(last_error_message(), "");
  EXPECT_EQ(check_positive(-3), Error::InvalidArgument);
  EXPECT_STREQ(last_error_message(), "value -3: expected > 0");
  EXPECT_EQ(chain(-4), Error::InvalidArgument);
  EXPECT_EQ(chain(4), Error::Ok);
}

TEST(ErrorTest, LongMessagesAreTruncatedNotOverflowed) {
  std::string big(5000, 'x');
  EXPECT_EQ(set_error_message(Error::Internal, "%s", big.c_str()), Error::Internal);
  EXPECT_EQ(std::strlen(last_error_message()), 1023u);
}

// set_method_error_message writes what set_error_message writes with "method '%s'" in front of
// the format, truncated the same way.
TEST(ErrorTest, MethodMessagesEqualThePrefixedFormat) {
  EXPECT_EQ(set_method_error_message(Error::InvalidProgram, "forward", " value %u: %s", 3u, "x"),
            Error::InvalidProgram);
  const std::string method_message = last_error_message();
  set_error_message(Error::InvalidProgram, "method '%s' value %u: %s", "forward", 3u, "x");
  EXPECT_EQ(method_message, last_error_message());
  EXPECT_EQ(method_message, "method 'forward' value 3: x");
  const std::string long_name(900, 'n');
  const std::string rest(400, 'r');
  set_method_error_message(Error::Internal, long_name.c_str(), ": %s", rest.c_str());
  const std::string truncated = last_error_message();
  set_error_message(Error::Internal, "method '%s': %s", long_name.c_str(), rest.c_str());
  EXPECT_EQ(truncated, last_error_message());
  EXPECT_EQ(truncated.size(), 1023u);
  const std::string huge_name(3000, 'h');  // the prefix alone fills the buffer
  set_method_error_message(Error::Internal, huge_name.c_str(), ": %d", 1);
  EXPECT_EQ(std::string(last_error_message()), ("method '" + huge_name).substr(0, 1023));
}

TEST(ErrorTest, ChainedMessagesQuoteTheirCause) {
  set_error_message(Error::AccessFailed, "cannot open '%s'", "m.pte");
  const Error e = chain_error_message(Error::InvalidProgram, "loading %s", "forward");
  EXPECT_EQ(e, Error::InvalidProgram);
  EXPECT_STREQ(last_error_message(), "loading forward: cannot open 'm.pte'");
  // Chains nest, innermost last.
  chain_error_message(Error::InvalidProgram, "outer");
  EXPECT_STREQ(last_error_message(), "outer: loading forward: cannot open 'm.pte'");
}

TEST(ErrorTest, ChainWithoutACauseSaysSo) {
  clear_error_message();
  chain_error_message(Error::Internal, "step %d", 3);
  EXPECT_STREQ(last_error_message(), "step 3: (no message)");
}

TEST(ErrorTest, LongChainsAreTruncatedNotOverflowed) {
  const std::string cause(2000, 'c');
  set_error_message(Error::Internal, "%s", cause.c_str());
  const std::string outer(700, 'o');
  chain_error_message(Error::Internal, "%s", outer.c_str());
  const std::string msg = last_error_message();
  EXPECT_EQ(msg.size(), 1023u);
  EXPECT_EQ(msg.substr(0, 702), outer + ": ");
  EXPECT_EQ(msg.back(), 'c');
  const std::string huge(3000, 'h');  // the new part alone fills the buffer
  chain_error_message(Error::Internal, "%s", huge.c_str());
  EXPECT_EQ(std::string(last_error_message()), huge.substr(0, 1023));
}

TEST(ErrorTest, EveryCodeHasAName) {
  const Error all[] = {Error::Ok, Error::Internal, Error::NotSupported, Error::InvalidArgument,
                       Error::InvalidState, Error::NotFound, Error::MemoryAllocationFailed,
                       Error::AccessFailed, Error::InvalidProgram, Error::ChecksumMismatch,
                       Error::VersionMismatch, Error::NotATernProgram,
                       Error::DelegateInvalidCompatibility,
                       Error::DelegateMemoryAllocationFailed, Error::DelegateInvalidHandle,
                       Error::DelegateExecutionFailed, Error::BackendUnavailable};
  for (Error e : all) {
    EXPECT_STRNE(to_string(e), "UnknownError");
  }
  EXPECT_STREQ(to_string(Error::InvalidProgram), "InvalidProgram");
  EXPECT_STREQ(to_string(static_cast<Error>(0xFFFF)), "UnknownError");
}

TEST(ResultTest, ValueAndErrorPaths) {
  Result<int> q = quarter(12);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(*q, 3);
  Result<int> bad = quarter(6);  // 6 -> 3 -> odd
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), Error::InvalidArgument);
  EXPECT_STREQ(last_error_message(), "3 is odd");
}

TEST(ResultTest, OkErrorWithoutValueBecomesInternal) {
  Result<int> r(Error::Ok);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error(), Error::Internal);
}

TEST(ResultTest, MoveOnlyValues) {
  Result<std::unique_ptr<int>> r(std::make_unique<int>(5));
  ASSERT_TRUE(r.ok());
  Result<std::unique_ptr<int>> moved(std::move(r));
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(**moved, 5);
  Result<std::unique_ptr<int>> assigned(Error::NotFound);
  assigned = std::move(moved);
  ASSERT_TRUE(assigned.ok());
  EXPECT_EQ(**assigned, 5);
}

}  // namespace
}  // namespace tern
