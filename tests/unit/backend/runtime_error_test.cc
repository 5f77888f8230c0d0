// Error extraction and mapping, on log.json files the real runtimes wrote
// (testdata/: runc 1.1.5 and crun 1.8.1, captured on the build host).
#include "runtime/oci_cli/runtime_error.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>

#include "tests/unit/backend/testdata.h"

namespace hull::runtime::oci_cli {
namespace {

using testing::ReadTestdata;

// The lines of a file, one call's worth each.
std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) out.push_back(line + "\n");
  return out;
}

TEST(LastLoggedErrorTest, RuncLogTakesTheLastError) {
  std::string log = ReadTestdata("runc.log.json");
  EXPECT_EQ(LastLoggedError(log), "container does not exist");
  auto lines = Lines(log);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(LastLoggedError(lines[0]),
            "runc create failed: unable to start container process: exec: "
            "\"/bin/nonexistent-prog\": stat /bin/nonexistent-prog: no such file or directory");
  EXPECT_EQ(LastLoggedError(lines[3]), "container not running");
}

TEST(LastLoggedErrorTest, RuncDebugLogSkipsDebugEntries) {
  EXPECT_EQ(LastLoggedError(ReadTestdata("runc-debug.log.json")),
            "runc create failed: unable to start container process: exec: "
            "\"/bin/nonexistent-prog\": stat /bin/nonexistent-prog: no such file or directory");
}

TEST(LastLoggedErrorTest, CrunLogPutsMsgFirst) {
  auto lines = Lines(ReadTestdata("crun.log.json"));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(
      LastLoggedError(lines[0]),
      "executable file `/bin/nonexistent-prog` not found in $PATH: No such file or directory");
  EXPECT_EQ(LastLoggedError(lines[3]), "kill container: No such process");
}

TEST(LastLoggedErrorTest, IgnoresGarbageAndPartialLines) {
  EXPECT_EQ(LastLoggedError(""), "");
  EXPECT_EQ(LastLoggedError("not json\n{\"level\":\"error\",\"msg\":\"cut"), "");
  EXPECT_EQ(LastLoggedError("{\"level\":\"info\",\"msg\":\"hi\"}\n"), "");
  EXPECT_EQ(LastLoggedError("{\"level\":\"error\",\"msg\":7}\n[1,2]\n"), "");
  EXPECT_EQ(LastLoggedError("{\"level\":\"fatal\",\"msg\":\"boom\\n\"}"), "boom");
}

TEST(FailureMessageTest, LogThenStderrThenExitStatus) {
  EXPECT_EQ(FailureMessage(ReadTestdata("runc.log.json"), "stderr text", 1),
            "container does not exist");
  EXPECT_EQ(FailureMessage("", "line one\nerror opening file `x`: nope\n\n", 253),
            "error opening file `x`: nope");
  EXPECT_EQ(FailureMessage("", "  \n", 139), "exit status 139");
}

TEST(ClassifyFailureTest, RuncMessages) {
  auto lines = Lines(ReadTestdata("runc.log.json"));
  auto classify = [&](int i) {
    return ClassifyFailure(RuncFlavour(), "/run/x/c1", LastLoggedError(lines[i])).code();
  };
  EXPECT_EQ(classify(0), Code::kUnknown);  // a bad config: the runtime's message, no guess
  EXPECT_EQ(classify(1), Code::kNotFound);
  EXPECT_EQ(classify(2), Code::kFailedPrecondition);
  EXPECT_EQ(classify(3), Code::kFailedPrecondition);
  EXPECT_EQ(ClassifyFailure(RuncFlavour(), "",
                            "runc create failed: container with given ID already exists")
                .code(),
            Code::kAlreadyExists);
  EXPECT_EQ(ClassifyFailure(RuncFlavour(), "",
                            "cannot delete container c1 that is not stopped: "
                            "running")
                .code(),
            Code::kFailedPrecondition);
  EXPECT_EQ(ClassifyFailure(RuncFlavour(), "", "No help topic for 'features'").code(),
            Code::kUnimplemented);
  Status s = ClassifyFailure(RuncFlavour(), "", "container not paused");
  EXPECT_EQ(s.message(), "container not paused");
}

TEST(ClassifyFailureTest, CrunMessagesNameTheStateDirectory) {
  auto lines = Lines(ReadTestdata("crun.log.json"));
  auto classify = [&](int i, const std::string& state) {
    return ClassifyFailure(CrunFlavour(), state, LastLoggedError(lines[i])).code();
  };
  // The samples were written with --root /tmp/bexp/r6.
  EXPECT_EQ(classify(0, "/tmp/bexp/r6/x1"), Code::kUnknown);  // missing executable
  EXPECT_EQ(classify(1, "/tmp/bexp/r6/nope"), Code::kNotFound);
  EXPECT_EQ(classify(2, "/tmp/bexp/r6/x2"), Code::kFailedPrecondition);  // started twice
  EXPECT_EQ(classify(4, "/tmp/bexp/r6/x2"), Code::kNotFound);            // deleted twice
  // Another container's missing file is not this one missing.
  EXPECT_EQ(classify(1, "/tmp/bexp/r6/other"), Code::kUnknown);
  EXPECT_EQ(ClassifyFailure(CrunFlavour(), "", "the container `s1` is not running").code(),
            Code::kFailedPrecondition);
  EXPECT_EQ(ClassifyFailure(CrunFlavour(), "", "unknown command checkpoint").code(),
            Code::kUnimplemented);
  EXPECT_EQ(ClassifyFailure(CrunFlavour(), "",
                            "cgroups in hybrid mode not supported, drop all controllers from "
                            "cgroupv2")
                .code(),
            Code::kFailedPrecondition);
}

TEST(IsProcessGoneTest, BothFlavours) {
  auto runc = Lines(ReadTestdata("runc.log.json"));
  auto crun = Lines(ReadTestdata("crun.log.json"));
  EXPECT_TRUE(IsProcessGone(RuncFlavour(), LastLoggedError(runc[3])));
  EXPECT_FALSE(IsProcessGone(RuncFlavour(), LastLoggedError(runc[1])));
  EXPECT_TRUE(IsProcessGone(CrunFlavour(), LastLoggedError(crun[3])));
  EXPECT_FALSE(IsProcessGone(CrunFlavour(), LastLoggedError(crun[1])));
}

class LogCursorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hull-logcursor-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/log.json";
  }
  void TearDown() override {
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  void Append(const std::string& text) { std::ofstream(path_, std::ios::app) << text; }
  std::string dir_, path_;
};

TEST_F(LogCursorTest, ReadsOnlyWhatTheCallAppended) {
  LogCursor before_file = LogCursor::At(path_);  // no file yet
  Append("{\"level\":\"error\",\"msg\":\"old\"}\n");
  LogCursor cursor = LogCursor::At(path_);
  EXPECT_EQ(cursor.ReadNew(), "");
  Append("{\"level\":\"error\",\"msg\":\"new\"}\n");
  EXPECT_EQ(LastLoggedError(cursor.ReadNew()), "new");
  EXPECT_EQ(LastLoggedError(before_file.ReadNew()), "new");
  EXPECT_EQ(LogCursor::At("").ReadNew(), "");
}

TEST_F(LogCursorTest, ReplacedLogIsReadFromTheStart) {
  Append(std::string(100, 'x') + "\n");
  LogCursor cursor = LogCursor::At(path_);
  ::unlink(path_.c_str());
  Append("{\"level\":\"error\",\"msg\":\"fresh\"}\n");
  EXPECT_EQ(LastLoggedError(cursor.ReadNew()), "fresh");
}

}  // namespace
}  // namespace hull::runtime::oci_cli
