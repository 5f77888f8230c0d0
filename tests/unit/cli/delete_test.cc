// The delete action in process, with a fake force-delete and a fixed clock.

#include "shim/cli/delete.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "containerd/task/v2/shim.pb.h"
#include "shim/config/config.h"
#include "shim/pod/pod_cgroup.h"
#include "tests/support/temp_dir.h"

namespace hull::shim {
namespace {

namespace fs = std::filesystem;

struct ForceDeleteCall {
  int calls = 0;
  RuntimeOptions options;
  std::string ns, bundle, id;
};

class DeleteTest : public ::testing::Test {
 protected:
  hull::testing::TempDir tmp_{"hull-delete"};  // root_ lives in it
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    root_ = tmp_.path();
    bundle_ = root_ / "bundle";
    fs::create_directories(bundle_ / "rootfs");
  }

  DeleteRequest Request(Status force_result = Status::Ok()) {
    DeleteRequest req;
    req.cmd.ns = "default";
    req.cmd.id = "c1";
    req.env.config_path = (root_ / "missing.toml").string();
    req.bundle = bundle_.string();
    req.force_delete = [this, force_result](const RuntimeOptions& o, const std::string& ns,
                                            const std::string& bundle, const std::string& id) {
      ++call_.calls;
      call_.options = o;
      call_.ns = ns;
      call_.bundle = bundle;
      call_.id = id;
      return force_result;
    };
    req.now = [] { return timespec{1700000000, 123456789}; };
    return req;
  }

  containerd::task::v2::DeleteResponse Decode(const std::string& bytes) {
    containerd::task::v2::DeleteResponse response;
    EXPECT_TRUE(response.ParseFromString(bytes));
    return response;
  }

  fs::path root_;
  fs::path bundle_;
  ForceDeleteCall call_;
};

TEST_F(DeleteTest, ReportsInitPidKilledNow) {
  std::ofstream(bundle_ / "init.pid") << "4321";
  auto out = RunDelete(Request(), Logger::Null());
  ASSERT_TRUE(out.has_value()) << out.error().ToString();
  auto response = Decode(*out);
  EXPECT_EQ(response.pid(), 4321u);
  EXPECT_EQ(response.exit_status(), 137u);
  EXPECT_EQ(response.exited_at().seconds(), 1700000000);
  EXPECT_EQ(response.exited_at().nanos(), 123456789);
  EXPECT_EQ(call_.calls, 1);
  EXPECT_EQ(call_.ns, "default");
  EXPECT_EQ(call_.id, "c1");
  EXPECT_EQ(call_.bundle, bundle_.string());
}

TEST_F(DeleteTest, UsesTheConfigStoredInTheBundle) {
  ShimConfig stored;
  stored.runtime.binary_name = "crun";
  stored.runtime.root = "/run/hull-crun";
  ASSERT_TRUE(WriteBundleConfig(bundle_.string(), stored).ok());
  ASSERT_TRUE(RunDelete(Request(), Logger::Null()).has_value());
  EXPECT_EQ(call_.options.binary_name, "crun");
  EXPECT_EQ(call_.options.root, "/run/hull-crun");
}

TEST_F(DeleteTest, FallsBackToTheConfigFileThenDefaults) {
  std::ofstream(root_ / "hull.toml") << "runtime = \"crun\"\n";
  DeleteRequest req = Request();
  req.env.config_path = (root_ / "hull.toml").string();
  ASSERT_TRUE(RunDelete(req, Logger::Null()).has_value());
  EXPECT_EQ(call_.options.binary_name, "crun");

  std::ofstream(root_ / "hull.toml") << "runtime = \n";  // broken: built-in defaults
  ASSERT_TRUE(RunDelete(req, Logger::Null()).has_value());
  EXPECT_EQ(call_.options.binary_name, "runc");
}

TEST_F(DeleteTest, ForceDeleteFailureIsOnlyLogged) {
  auto out = RunDelete(Request(UnavailableError("runc: boom")), Logger::Null());
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(Decode(*out).exit_status(), 137u);
}

TEST_F(DeleteTest, NoPidFileMeansPidZero) {
  std::ofstream(bundle_ / "init.pid") << "garbage";
  auto out = RunDelete(Request(), Logger::Null());
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(Decode(*out).pid(), 0u);
}

// The bundle is writable to a confined server: an `address` naming a file
// that is not a shim socket leaves it, and a rootfs that is a symlink is
// not followed to unmount what it names.
TEST_F(DeleteTest, AForgedBundleRemovesAndUnmountsNothingElse) {
  const fs::path victim = root_ / "victim";
  fs::create_directories(victim / "m");
  std::ofstream(victim / "file") << "keep";
  std::ofstream(bundle_ / "address") << "unix://" << (victim / "file").string();
  fs::remove(bundle_ / "rootfs");
  fs::create_directory_symlink(victim, bundle_ / "rootfs");
  const bool mounted = ::mount("tmpfs", (victim / "m").c_str(), "tmpfs", 0, nullptr) == 0;

  auto out = RunDelete(Request(), Logger::Null());
  ASSERT_TRUE(out.has_value()) << out.error().ToString();
  EXPECT_TRUE(fs::exists(victim / "file"));
  if (mounted) {
    std::ifstream mountinfo("/proc/self/mountinfo");
    std::string all((std::istreambuf_iterator<char>(mountinfo)), {});
    EXPECT_NE(all.find(" " + (victim / "m").string() + " "), std::string::npos)
        << "the tmpfs below the symlink's target was unmounted";
    ::umount2((victim / "m").c_str(), MNT_DETACH);
  }

  // A dead shim socket named as `start` names them is removed.
  const fs::path sock = root_ / std::string(64, 'a');
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ::close(fd);  // never listened: nothing answers
  std::ofstream(bundle_ / "address", std::ios::trunc) << "unix://" << sock.string();
  ASSERT_TRUE(RunDelete(Request(), Logger::Null()).has_value());
  EXPECT_FALSE(fs::exists(sock));
}

TEST_F(DeleteTest, BundleAlreadyGoneStillSucceeds) {
  fs::remove_all(bundle_);
  auto out = RunDelete(Request(), Logger::Null());
  ASSERT_TRUE(out.has_value()) << out.error().ToString();
  EXPECT_EQ(Decode(*out).pid(), 0u);
  EXPECT_EQ(call_.options.binary_name, "runc");
  // And again: idempotent.
  EXPECT_TRUE(RunDelete(Request(), Logger::Null()).has_value());
}

// A pause container's bundle after its server was SIGKILLed: the empty
// hull-shim leaf and the pod cgroup hull created are removed.
TEST_F(DeleteTest, RemovesTheKilledServersPodCgroups) {
  const fs::path cgroupfs = root_ / "cgroup";
  fs::create_directories(cgroupfs / "pod1/hull-shim");
  ASSERT_TRUE(WritePodCgroupFile(bundle_.string(), {.pod = "/pod1",
                                                    .created_pod = true,
                                                    .shim_leaf = "/pod1/hull-shim",
                                                    .origin = "/system.slice"})
                  .ok());
  DeleteRequest req = Request();
  req.cgroupfs = cgroupfs.string();
  auto out = RunDelete(req, Logger::Null());
  ASSERT_TRUE(out.has_value()) << out.error().ToString();
  EXPECT_EQ(Decode(*out).exit_status(), 137u);
  EXPECT_FALSE(fs::exists(cgroupfs / "pod1"));
  EXPECT_TRUE(fs::is_directory(cgroupfs));
  // Again (containerd runs delete after every task deletion): still fine.
  EXPECT_TRUE(RunDelete(req, Logger::Null()).has_value());
}

// A live server in the leaf, or a pod cgroup hull did not create: left
// alone, and delete still succeeds.
TEST_F(DeleteTest, LeavesALiveServersLeafAndAPodCgroupNotOurs) {
  const fs::path cgroupfs = root_ / "cgroup";
  fs::create_directories(cgroupfs / "pod1/hull-shim");
  std::ofstream(cgroupfs / "pod1/hull-shim/cgroup.procs") << "4242\n";
  ASSERT_TRUE(
      WritePodCgroupFile(
          bundle_.string(),
          {.pod = "/pod1", .created_pod = true, .shim_leaf = "/pod1/hull-shim", .origin = "/"})
          .ok());
  DeleteRequest req = Request();
  req.cgroupfs = cgroupfs.string();
  ASSERT_TRUE(RunDelete(req, Logger::Null()).has_value());
  EXPECT_TRUE(fs::exists(cgroupfs / "pod1/hull-shim/cgroup.procs"));

  fs::remove(cgroupfs / "pod1/hull-shim/cgroup.procs");  // the server exited
  ASSERT_TRUE(
      WritePodCgroupFile(
          bundle_.string(),
          {.pod = "/pod1", .created_pod = false, .shim_leaf = "/pod1/hull-shim", .origin = "/"})
          .ok());
  ASSERT_TRUE(RunDelete(req, Logger::Null()).has_value());
  EXPECT_FALSE(fs::exists(cgroupfs / "pod1/hull-shim"));
  EXPECT_TRUE(fs::is_directory(cgroupfs / "pod1"));  // kubelet's, say
}

// A record hull did not write (a leaf that is not hull's name) removes
// nothing; delete still answers.
TEST_F(DeleteTest, ForeignPodCgroupRecordRemovesNothing) {
  const fs::path cgroupfs = root_ / "cgroup";
  fs::create_directories(cgroupfs / "pod1/other");
  std::ofstream(bundle_ / "hull-pod-cgroup.json")
      << R"({"pod":"/pod1","created_pod":true,"shim_leaf":"/pod1/other","origin":"/"})";
  DeleteRequest req = Request();
  req.cgroupfs = cgroupfs.string();
  ASSERT_TRUE(RunDelete(req, Logger::Null()).has_value());
  EXPECT_TRUE(fs::is_directory(cgroupfs / "pod1/other"));
}

TEST_F(DeleteTest, NeedsNamespaceAndId) {
  DeleteRequest req = Request();
  req.cmd.ns.clear();
  EXPECT_EQ(RunDelete(req, Logger::Null()).error().code(), Code::kInvalidArgument);
  req = Request();
  req.cmd.id.clear();
  EXPECT_EQ(RunDelete(req, Logger::Null()).error().code(), Code::kInvalidArgument);
  EXPECT_EQ(call_.calls, 0);
}

}  // namespace
}  // namespace hull::shim
