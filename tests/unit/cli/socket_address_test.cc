// The shim socket address: SHA-256 checked against published vectors and
// against the system's sha256sum, Go's filepath.Join, and grouping.

#include "shim/cli/socket_address.h"

#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "shim/cli/sha256.h"

namespace hull::shim {
namespace {

// sha256sum of `data`, computed by coreutils, not by hull.
std::string SystemSha256(const std::string& data) {
  char path[] = "/tmp/hull-sha-XXXXXX";
  int fd = ::mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  ::close(fd);
  std::string command = std::string("sha256sum ") + path;
  FILE* pipe = ::popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  char out[65] = {};
  EXPECT_EQ(::fread(out, 1, 64, pipe), 64u);
  ::pclose(pipe);
  ::unlink(path);
  return std::string(out, 64);
}

TEST(Sha256Test, PublishedVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, MatchesSha256sumAcrossBlockBoundaries) {
  for (size_t len : {1, 54, 55, 56, 57, 63, 64, 65, 119, 120, 128, 200}) {
    std::string data;
    for (size_t i = 0; i < len; ++i) data.push_back(static_cast<char>('a' + i % 26));
    EXPECT_EQ(Sha256Hex(data), SystemSha256(data)) << "length " << len;
  }
}

TEST(SocketAddressTest, HashOfJoinedAddressNamespaceAndGroup) {
  // Verified by hand: printf %s /run/containerd/containerd.sock/k8s.io/0123456789abcdef | sha256sum
  EXPECT_EQ(SocketAddress("/run/containerd/s", "/run/containerd/containerd.sock", "k8s.io",
                          "0123456789abcdef"),
            "unix:///run/containerd/s/"
            "a1516fb9360830ba76705961d0f826b1118eac1dcf4c026f5d98ab29a95b6f39");
  // Observed: containerd 1.6.20 with -address /tmp/hull-cli-ctd/c.sock, `ctr -n hulltest run
  // --runtime io.containerd.runc.v2 ... hullhash1`: containerd-shim-runc-v2 listened on this
  // path, and `ctr shim --id hullhash1 state` dialled it.
  EXPECT_EQ(SocketAddress("/run/containerd/s", "/tmp/hull-cli-ctd/c.sock", "hulltest", "hullhash1"),
            "unix:///run/containerd/s/"
            "33bc326d0d83bfa2d3451638009c383a0a5d25c3d4a3c6cff93c35f24ef0e640");
  // And independently for another triple.
  EXPECT_EQ(SocketAddress("/tmp/s", "/var/run/c.sock", "default", "pod-1"),
            "unix:///tmp/s/" + SystemSha256("/var/run/c.sock/default/pod-1"));
}

TEST(SocketAddressTest, JoinCleansLikeGo) {
  // filepath.Join cleans the result, so these hash the same text.
  EXPECT_EQ(SocketAddress("/s", "/run/c.sock/", "ns", "id"),
            SocketAddress("/s", "/run/c.sock", "ns", "id"));
  EXPECT_EQ(SocketAddress("/s", "/run//c.sock", "ns", "id"),
            SocketAddress("/s", "/run/c.sock", "ns", "id"));
  // An empty group (annotation present but empty) is dropped by Join.
  EXPECT_EQ(SocketAddress("/s", "/run/c.sock", "ns", ""),
            "unix:///s/" + SystemSha256("/run/c.sock/ns"));
}

TEST(SocketAddressTest, CleanPathAndJoinPath) {
  EXPECT_EQ(CleanPath(""), ".");
  EXPECT_EQ(CleanPath("/"), "/");
  EXPECT_EQ(CleanPath("//a//b/"), "/a/b");
  EXPECT_EQ(CleanPath("/a/./b/../c"), "/a/c");
  EXPECT_EQ(CleanPath("/../a"), "/a");
  EXPECT_EQ(CleanPath("a/../../b"), "../b");
  EXPECT_EQ(CleanPath("./"), ".");
  EXPECT_EQ(JoinPath({"/run/c.sock", "k8s.io", "abc"}), "/run/c.sock/k8s.io/abc");
  EXPECT_EQ(JoinPath({"", "ns", "id"}), "ns/id");
  EXPECT_EQ(JoinPath({"", ""}), "");
  EXPECT_EQ(JoinPath({"a", "../b"}), "b");
}

TEST(GroupingTest, RuncGroupThenSandboxIdThenTaskId) {
  EXPECT_EQ(GroupingId({}, "task"), "task");
  EXPECT_EQ(GroupingId({{"io.kubernetes.cri.sandbox-id", "pod"}}, "task"), "pod");
  EXPECT_EQ(GroupingId(
                {{"io.kubernetes.cri.sandbox-id", "pod"}, {"io.containerd.runc.v2.group", "group"}},
                "task"),
            "group");
  // Present but empty counts, as in the runc shim.
  EXPECT_EQ(GroupingId({{"io.kubernetes.cri.sandbox-id", ""}}, "task"), "");
  EXPECT_EQ(GroupingId({{"io.kubernetes.cri.container-type", "sandbox"}}, "task"), "task");
}

TEST(SocketAddressTest, SocketPath) {
  EXPECT_EQ(*SocketPath("unix:///run/containerd/s/abc"), "/run/containerd/s/abc");
  EXPECT_EQ(SocketPath("/run/containerd/s/abc").error().code(), Code::kInvalidArgument);
  EXPECT_EQ(SocketPath("unix://").error().code(), Code::kInvalidArgument);
  EXPECT_EQ(SocketPath("vsock://3:1024").error().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace hull::shim
