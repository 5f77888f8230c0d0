#include "base/status.h"

#include <gtest/gtest.h>

namespace hull {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError("odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  HULL_ASSIGN_OR_RETURN(int h, Half(x));
  HULL_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckQuarter(int x) {
  HULL_RETURN_IF_ERROR_CTX(Quarter(x), "quarter");
  return Status::Ok();
}

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), Code::kOk);
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, ContextKeepsCode) {
  Status s = NotFoundError("no such container").WithContext("delete abc");
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.message(), "delete abc: no such container");
}

TEST(StatusTest, ErrnoErrorNamesOperationAndObject) {
  Status s = ErrnoError(ENOENT, "open", "/run/x/config.json");
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.message(), "open /run/x/config.json: No such file or directory");
  EXPECT_EQ(ErrnoError(EEXIST, "mkdir", "/a").code(), Code::kAlreadyExists);
  EXPECT_EQ(ErrnoError(EACCES, "open", "/a").code(), Code::kPermissionDenied);
  EXPECT_EQ(ErrnoError(EINVAL, "mount", "/a").code(), Code::kInvalidArgument);
}

TEST(ResultTest, PropagatesValuesAndErrors) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
  Status s = CheckQuarter(6);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "quarter: odd");
  EXPECT_TRUE(CheckQuarter(4).ok());
}

}  // namespace
}  // namespace hull
