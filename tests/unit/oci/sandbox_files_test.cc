// The sandbox files written into a temporary directory, and the /dev/shm
// mount options (the mount itself needs root and is not done here).

#include "oci/sandbox_files.h"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "base/file_util.h"
#include "cri/runtime/v1/api.pb.h"
#include "tests/support/temp_dir.h"

namespace hull::oci {
namespace {

class SandboxFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    ASSERT_TRUE(WriteFileAtomic(dir_ / "host-hosts", "127.0.0.1 localhost\n").ok());
    ASSERT_TRUE(WriteFileAtomic(dir_ / "host-resolv", "nameserver 10.0.0.1\n").ok());
    ASSERT_EQ(::mkdir((dir_ / "sandbox").c_str(), 0755), 0);
    host_.hosts = dir_ / "host-hosts";
    host_.resolv_conf = dir_ / "host-resolv";
    host_.node_hostname = "node-1";
  }

  std::string Read(const std::string& name) {
    return ReadFile(dir_ / ("sandbox/" + name)).value_or("<missing>");
  }

  hull::testing::TempDir dir_;
  HostFiles host_;
};

TEST(SandboxPathsTest, Layout) {
  SandboxPaths paths = SandboxPathsFor(kDefaultCriRootDir, kDefaultCriStateDir, "abc");
  EXPECT_EQ(paths.root_dir, "/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes/abc");
  EXPECT_EQ(paths.state_dir, "/run/containerd/io.containerd.grpc.v1.cri/sandboxes/abc");
  EXPECT_EQ(paths.hostname, paths.root_dir + "/hostname");
  EXPECT_EQ(paths.hosts, paths.root_dir + "/hosts");
  EXPECT_EQ(paths.resolv_conf, paths.root_dir + "/resolv.conf");
  EXPECT_EQ(paths.shm, paths.state_dir + "/shm");
  EXPECT_EQ(paths.pinned_user_namespace, paths.state_dir + "/pinned-namespaces/user");
}

TEST(SandboxFilesContentTest, ResolvConf) {
  ::runtime::v1::DNSConfig dns;
  EXPECT_EQ(ResolvConfContent(dns), "");
  dns.add_servers("10.96.0.10");
  dns.add_servers("10.96.0.11");
  dns.add_searches("default.svc.cluster.local");
  dns.add_searches("svc.cluster.local");
  dns.add_options("ndots:5");
  dns.add_options("edns0");
  EXPECT_EQ(ResolvConfContent(dns),
            "search default.svc.cluster.local svc.cluster.local\n"
            "nameserver 10.96.0.10\n"
            "nameserver 10.96.0.11\n"
            "options ndots:5 edns0\n");
  ::runtime::v1::DNSConfig servers_only;
  servers_only.add_servers("1.1.1.1");
  EXPECT_EQ(ResolvConfContent(servers_only), "nameserver 1.1.1.1\n");
}

TEST(SandboxFilesContentTest, Hostname) {
  EXPECT_EQ(HostnameFileContent("web-0", "node"), "web-0\n");
  EXPECT_EQ(HostnameFileContent("", "node"), "node\n");
}

TEST_F(SandboxFilesTest, WritesAllThree) {
  ::runtime::v1::PodSandboxConfig config;
  config.set_hostname("web-0");
  config.mutable_dns_config()->add_servers("10.96.0.10");
  config.mutable_dns_config()->add_searches("default.svc.cluster.local");
  config.mutable_dns_config()->add_options("ndots:5");
  ASSERT_TRUE(WriteSandboxFiles(dir_ / "sandbox", config, CriFlavor::kContainerd2, host_).ok());
  EXPECT_EQ(Read("hostname"), "web-0\n");
  EXPECT_EQ(Read("hosts"), "127.0.0.1 localhost\n");
  EXPECT_EQ(Read("resolv.conf"),
            "search default.svc.cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n");
  struct stat st;
  ASSERT_EQ(::stat((dir_ / "sandbox/resolv.conf").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777 & ~0644u, 0u);  // at most rw-r--r--
}

TEST_F(SandboxFilesTest, HostNetworkPodGetsTheNodeNameAndHostResolvConf) {
  ::runtime::v1::PodSandboxConfig config;
  ASSERT_TRUE(WriteSandboxFiles(dir_ / "sandbox", config, CriFlavor::kContainerd2, host_).ok());
  EXPECT_EQ(Read("hostname"), "node-1\n");
  EXPECT_EQ(Read("resolv.conf"), "nameserver 10.0.0.1\n");
}

TEST_F(SandboxFilesTest, NodeHostnameFromTheKernel) {
  ::runtime::v1::PodSandboxConfig config;
  host_.node_hostname.clear();
  ASSERT_TRUE(WriteSandboxFiles(dir_ / "sandbox", config, CriFlavor::kContainerd2, host_).ok());
  std::string hostname = Read("hostname");
  EXPECT_GT(hostname.size(), 1u);
  EXPECT_EQ(hostname.back(), '\n');
}

// A dns_config with no entries: 2.x writes an empty file, 1.6 copies the
// host's.
TEST_F(SandboxFilesTest, EmptyDnsConfigDependsOnTheFlavor) {
  ::runtime::v1::PodSandboxConfig config;
  config.mutable_dns_config();
  ASSERT_TRUE(WriteSandboxFiles(dir_ / "sandbox", config, CriFlavor::kContainerd2, host_).ok());
  EXPECT_EQ(Read("resolv.conf"), "");
  ASSERT_TRUE(WriteSandboxFiles(dir_ / "sandbox", config, CriFlavor::kContainerd16, host_).ok());
  EXPECT_EQ(Read("resolv.conf"), "nameserver 10.0.0.1\n");
}

TEST_F(SandboxFilesTest, MissingHostFileIsAnError) {
  ::runtime::v1::PodSandboxConfig config;
  host_.hosts = dir_ / "nope";
  Status status = WriteSandboxFiles(dir_ / "sandbox", config, CriFlavor::kContainerd2, host_);
  EXPECT_EQ(status.code(), Code::kNotFound);
  host_.hosts = dir_ / "host-hosts";
  status = WriteSandboxFiles(dir_ / "missing-dir", config, CriFlavor::kContainerd2, host_);
  EXPECT_EQ(status.code(), Code::kNotFound);
}

TEST(ShmTest, MountOptions) {
  ShmMountOptions shm = SandboxShmMountOptions();
  EXPECT_EQ(shm.source, "shm");
  EXPECT_EQ(shm.fstype, "tmpfs");
  EXPECT_EQ(shm.flags, static_cast<unsigned long>(MS_NOSUID | MS_NODEV | MS_NOEXEC));
  EXPECT_EQ(shm.data, "mode=1777,size=67108864");
}

}  // namespace
}  // namespace hull::oci
