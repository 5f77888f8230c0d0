// hull under containerd 2.x (issue 13): `start` answers with the JSON
// bootstrap result, version 3, so containerd drives the server over
// containerd.task.v3.Task. Runs in the "Containerd2/" instantiation of
// HullCtrTest (shim_ctr_fixture.h); on 1.6.20 it checks that hull kept to
// the plain address that 1.6 needs.
#include "tests/integration/shim_ctr_fixture.h"

namespace hull::itest {
namespace {

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  return nlohmann::json::parse(text, nullptr, false);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

TEST_P(HullCtrTest, StartAnswersWithBootstrapVersion3) {
  // Ids of this test's own: runc's state directory is shared by the host.
  const std::string id = "i13-boot-" + GetParam();
  const std::string rm_id = "i13-bootrm-" + GetParam();

  CommandResult r = Run({"--rm"}, rm_id, {"sh", "-c", "echo hello"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(r.out, "hello\n");

  r = Run({"-d"}, id, {"sleep", "1000"});
  ASSERT_TRUE(r.ok()) << r.Describe();
  const std::string address = ReadAll(Bundle(id) + "/address");
  EXPECT_TRUE(address.starts_with("unix://")) << address;
  if (containerd_->v2()) {
    nlohmann::json bootstrap = ReadJson(Bundle(id) + "/bootstrap.json");
    ASSERT_TRUE(bootstrap.is_object()) << ReadAll(Bundle(id) + "/bootstrap.json");
    EXPECT_EQ(bootstrap.value("version", 0), 3) << bootstrap.dump();
    EXPECT_EQ(bootstrap.value("protocol", ""), "ttrpc") << bootstrap.dump();
    EXPECT_EQ(bootstrap.value("address", ""), address) << bootstrap.dump();
  } else {
    // 1.6 takes start's output as the address and writes no bootstrap.json.
    EXPECT_FALSE(fs::exists(Bundle(id) + "/bootstrap.json"));
  }
  auto [pid, status] = Task(id);
  EXPECT_GT(pid, 0);
  EXPECT_EQ(status, "RUNNING");

  r = Ctr({"task", "exec", "--exec-id", "e1", id, "sh", "-c", "echo exec-out; exit 3"});
  EXPECT_EQ(r.exit_code, 3) << r.Describe();
  EXPECT_EQ(r.out, "exec-out\n");

  r = Ctr({"task", "ps", id});
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_NE(r.out.find("PID"), std::string::npos) << r.out;

  r = Ctr({"task", "metrics", "--format", "json", id});
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_TRUE(nlohmann::json::parse(r.out, nullptr, false).is_object()) << r.out;

  ASSERT_TRUE(Ctr({"task", "pause", id}).ok());
  EXPECT_EQ(Task(id).second, "PAUSED");
  ASSERT_TRUE(Ctr({"task", "resume", id}).ok());
  EXPECT_EQ(Task(id).second, "RUNNING");

  r = Ctr({"task", "kill", "-s", "SIGKILL", id});
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_TRUE(WaitForStatus(id, "STOPPED"));
  Ctr({"task", "rm", id});
  EXPECT_TRUE(Ctr({"container", "rm", id}).ok());
  EXPECT_TRUE(WaitUntil([&] { return Shims().empty(); }, 10s)) << DescribeShims();
  EXPECT_FALSE(fs::exists(Bundle(id)));
}

}  // namespace
}  // namespace hull::itest
