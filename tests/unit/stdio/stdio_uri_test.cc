// Tests for the stdio URI rules: modes, paths, logger arguments, and every
// malformed or unsupported string as InvalidArgument.
#include <gtest/gtest.h>

#include "shim/stdio/stdio_uri_internal.h"

namespace hull::shim::stdio {
namespace {

using Args = std::vector<std::string>;

StdioConfig Config(std::string in, std::string out, std::string err, bool terminal = false) {
  return StdioConfig{.stdin_path = std::move(in),
                     .stdout_path = std::move(out),
                     .stderr_path = std::move(err),
                     .terminal = terminal};
}

TEST(StdioUriTest, AllEmptyIsNull) {
  auto plan = PlanStdio(Config("", "", ""));
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  EXPECT_EQ(plan->mode, OutputMode::kNone);
  EXPECT_TRUE(plan->stdin_path.empty());
}

TEST(StdioUriTest, PlainPathsAreFifosUsedVerbatim) {
  // '%' and '?' in a plain path are not URI syntax.
  auto plan = PlanStdio(Config("/run/f/a-stdin", "/run/f/a%20-stdout?x", "/run/f/a-stderr"));
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  EXPECT_EQ(plan->mode, OutputMode::kFifo);
  EXPECT_EQ(plan->stdin_path, "/run/f/a-stdin");
  EXPECT_EQ(plan->stdout_path, "/run/f/a%20-stdout?x");
  EXPECT_EQ(plan->stderr_path, "/run/f/a-stderr");
}

TEST(StdioUriTest, FifoSchemeAndStderrOnly) {
  auto plan = PlanStdio(Config("", "fifo:///run/f/out%20x", "fifo:///run/f/err"));
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  EXPECT_EQ(plan->mode, OutputMode::kFifo);
  EXPECT_EQ(plan->stdout_path, "/run/f/out x");
  EXPECT_EQ(plan->stderr_path, "/run/f/err");

  plan = PlanStdio(Config("", "", "/run/f/err"));
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->mode, OutputMode::kFifo);
  EXPECT_TRUE(plan->stdout_path.empty());
  EXPECT_EQ(plan->stderr_path, "/run/f/err");
}

TEST(StdioUriTest, StdinOnlyHasNoOutputs) {
  auto plan = PlanStdio(Config("/run/f/in", "", ""));
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->mode, OutputMode::kNone);
  EXPECT_EQ(plan->stdin_path, "/run/f/in");
}

TEST(StdioUriTest, FileMode) {
  auto plan = PlanStdio(Config("", "file:///var/log/c%201.log", "file:///var/log/c%201.log"));
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  EXPECT_EQ(plan->mode, OutputMode::kFile);
  EXPECT_EQ(plan->stdout_path, "/var/log/c 1.log");
  EXPECT_EQ(plan->stderr_path, "/var/log/c 1.log");

  plan = PlanStdio(Config("", "FILE:/var/log/c.log", ""));  // no stderr asked for
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  EXPECT_EQ(plan->mode, OutputMode::kFile);
  EXPECT_EQ(plan->stdout_path, "/var/log/c.log");
  EXPECT_TRUE(plan->stderr_path.empty());
}

TEST(StdioUriTest, BinaryModeArguments) {
  std::string uri = "binary:///usr/bin/logger?id=a%2Fb&mode=x+y&flag&id=second&&empty=";
  auto plan = PlanStdio(Config("", uri, uri));
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  EXPECT_EQ(plan->mode, OutputMode::kBinary);
  EXPECT_EQ(plan->logger.path, "/usr/bin/logger");
  EXPECT_FALSE(plan->logger.v2);
  // First value of each key, in order; a bare key gets "".
  EXPECT_EQ(plan->logger.args, (Args{"id", "a/b", "mode", "x y", "flag", "", "empty", ""}));

  plan = PlanStdio(Config("", "binary-v2:///opt/l", ""));
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  EXPECT_TRUE(plan->logger.v2);
  EXPECT_TRUE(plan->logger.args.empty());
}

TEST(StdioUriTest, TerminalIgnoresStderr) {
  auto plan = PlanStdio(Config("/in", "/out", "http://ignored", true));
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  EXPECT_TRUE(plan->terminal);
  EXPECT_EQ(plan->stdout_path, "/out");
  EXPECT_TRUE(plan->stderr_path.empty());
}

TEST(StdioUriTest, BadStringsAreInvalidArgument) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"http://example.com/x", ""},                // unknown scheme
      {"syslog:///dev/log", ""},                   // unknown scheme
      {"foo:bar", ""},                             // relative path with a colon reads as a scheme
      {"1abc:/x", ""},                             // not a scheme
      {":/x", ""},                                 // empty scheme
      {"file://host/var/log/x", ""},               // a host
      {"file://", ""},                             // no path
      {"file:relative.log", ""},                   // relative
      {"file:///var/log/%zz", ""},                 // bad escape
      {"file:///var/log/x%", ""},                  // truncated escape
      {"file:///var/log/x%00y", ""},               // NUL
      {"binary://", ""},                           // no binary
      {"binary:///bin/l?a=1;b=2", ""},             // ';' separator
      {"binary:///bin/l#frag", ""},                // fragment
      {"binary:///bin/l", "binary:///bin/other"},  // stderr differs
      {"file:///a.log", "/run/f/err"},             // stderr differs
      {"/run/f/out", "file:///a.log"},             // stderr scheme differs from a FIFO stdout
      {"fifo://host/x", ""},                       // a host
      {"fifo://", ""},                             // no path
  };
  for (const auto& [out, err] : bad) {
    auto plan = PlanStdio(Config("", out, err));
    ASSERT_FALSE(plan.has_value()) << out << " / " << err;
    EXPECT_EQ(plan.error().code(), Code::kInvalidArgument)
        << out << ": " << plan.error().ToString();
  }
}

TEST(StdioUriTest, ParseUriKeepsHostAndQueryOrder) {
  auto uri = ParseUri("Binary-V2://h/p%2Fq?b=2&a=1");
  ASSERT_TRUE(uri.has_value());
  EXPECT_EQ(uri->scheme, "binary-v2");
  EXPECT_EQ(uri->host, "h");
  EXPECT_EQ(uri->path, "/p/q");
  ASSERT_EQ(uri->query.size(), 2u);
  EXPECT_EQ(uri->query[0].first, "b");
  EXPECT_EQ(uri->query[1].second, "1");
}

}  // namespace
}  // namespace hull::shim::stdio
