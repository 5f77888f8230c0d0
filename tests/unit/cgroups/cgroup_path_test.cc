// linux.cgroupsPath: plain paths and the systemd driver's slice:prefix:name.
#include <gtest/gtest.h>

#include "cgroups/cgroups.h"

namespace hull::cgroups {
namespace {

TEST(ExpandSliceTest, NestsDashSeparatedSlices) {
  EXPECT_EQ(ExpandSlice("system.slice").value(), "/system.slice");
  EXPECT_EQ(ExpandSlice("a-b.slice").value(), "/a.slice/a-b.slice");
  EXPECT_EQ(ExpandSlice("kubepods-burstable-pod12.slice").value(),
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12.slice");
  EXPECT_EQ(ExpandSlice("-.slice").value(), "/");
}

TEST(ExpandSliceTest, RefusesWhatIsNotASlice) {
  for (std::string_view bad : {"", ".slice", "system", "system.scope", "a/b.slice", "a--b.slice",
                               "-a.slice", "a-.slice"}) {
    auto r = ExpandSlice(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().code(), Code::kInvalidArgument) << bad;
  }
}

TEST(CgroupPathFromOciTest, Systemd) {
  EXPECT_EQ(CgroupPathFromOci("system.slice:docker:abc", true).value(),
            "/system.slice/docker-abc.scope");
  EXPECT_EQ(CgroupPathFromOci("kubepods-besteffort-pod1.slice:cri-containerd:c1", true).value(),
            "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/"
            "cri-containerd-c1.scope");
  EXPECT_EQ(CgroupPathFromOci(":hull:c1", true).value(), "/system.slice/hull-c1.scope");
  EXPECT_EQ(CgroupPathFromOci("-.slice:hull:c1", true).value(), "/hull-c1.scope");
  EXPECT_EQ(CgroupPathFromOci("a.slice::c1", true).value(), "/a.slice/c1.scope");
  // A slice as the name is the unit itself, joined to the parent.
  EXPECT_EQ(CgroupPathFromOci("a.slice:ignored:a-b.slice", true).value(), "/a.slice/a-b.slice");
}

TEST(CgroupPathFromOciTest, SystemdRefusesMalformed) {
  for (std::string_view bad : {"", "/a/b", "a.slice:b", "a.slice:b:c:d", "a:p:c",
                               "a.slice:p:", "a.slice:p:x/y", "a.slice:p:..", "a.slice:p/q:c"}) {
    auto r = CgroupPathFromOci(bad, true);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().code(), Code::kInvalidArgument) << bad;
  }
}

TEST(CgroupPathFromOciTest, Plain) {
  EXPECT_EQ(CgroupPathFromOci("/kubepods/pod1/c1", false).value(), "/kubepods/pod1/c1");
  EXPECT_EQ(CgroupPathFromOci("default/c1", false).value(), "/default/c1");
  EXPECT_EQ(CgroupPathFromOci("/a/b/", false).value(), "/a/b");
  EXPECT_EQ(CgroupPathFromOci("/", false).value(), "/");
  EXPECT_EQ(CgroupPathFromOci("/a/../b", false).error().code(), Code::kInvalidArgument);
  EXPECT_EQ(CgroupPathFromOci("./a", false).error().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace hull::cgroups
