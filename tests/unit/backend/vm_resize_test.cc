// A VM pod's in-place resize: within what the VM booted with it goes to the
// guest; beyond it, FailedPrecondition naming both sizes. The guest side
// (the agent updating the container's cgroup) is in tests/integration.
#include "shim/backend/vm/vm_resize.h"

#include <gtest/gtest.h>

#include "oci/sizing.h"

namespace hull::shim::vm {
namespace {

// The pod of docs/sizing.md's example: 256 MiB and 1.5 CPU make a VM of 2
// vCPUs and 376 MiB (256 + 112 + 8) with the default policy.
VmCapacity Pod256() {
  oci::CpuMemory w{.cpu_period = 100000, .cpu_quota = 150000, .memory_limit_bytes = 256 << 20};
  oci::PodSize size =
      oci::ComputePodSize(oci::SizeSource::kContainerdAnnotations, w, nullptr, oci::SizingPolicy{});
  return VmCapacity{.vcpus = size.vcpus,
                    .memory_mib = size.memory_mib,
                    .container_memory_mib = size.container_memory_mib};
}

std::string Memory(int64_t bytes) {
  return R"({"memory":{"limit":)" + std::to_string(bytes) + "}}";
}

TEST(VmResizeTest, TheDefaultPolicysPodCanGrowToWhatItsVmHolds) {
  const VmCapacity vm = Pod256();
  EXPECT_EQ(vm.vcpus, 2u);
  EXPECT_EQ(vm.memory_mib, 376u);
  // 257 + 112 + ceil(257 * 3%) = 377 > 376: the VM holds 256 MiB of workload.
  EXPECT_EQ(vm.container_memory_mib, 256u);
  EXPECT_EQ(oci::ContainerMemoryMib(2222, oci::SizingPolicy{}), 2048u);
  EXPECT_EQ(oci::ContainerMemoryMib(100, oci::SizingPolicy{}), 0u);
}

TEST(VmResizeTest, WithinTheVmIsLetThrough) {
  const VmCapacity vm = Pod256();
  EXPECT_TRUE(CheckResizeFits("app", Memory(256 << 20), vm).ok());
  EXPECT_TRUE(CheckResizeFits("app", Memory(128 << 20), vm).ok());
  EXPECT_TRUE(CheckResizeFits("app", R"({"cpu":{"quota":200000,"period":100000}})", vm).ok());
  EXPECT_TRUE(CheckResizeFits("app", R"({"cpu":{"quota":-1,"period":100000}})", vm).ok());
  EXPECT_TRUE(CheckResizeFits("app", R"({"cpu":{"shares":4096}})", vm).ok());
  EXPECT_TRUE(CheckResizeFits("app", "{}", vm).ok());
}

TEST(VmResizeTest, BeyondTheVmIsRefusedNamingBothSizes) {
  const VmCapacity vm = Pod256();
  Status s = CheckResizeFits("app", Memory(512 << 20), vm);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "update app: a memory limit of 512 MiB does not fit the pod's VM, booted with 376 MiB "
            "of RAM of which 256 MiB are for the pod's containers (the VM's size is fixed at "
            "boot: hull hot-plugs no memory or CPUs; docs/vm.md, \"Resize\")");
  s = CheckResizeFits("app", R"({"cpu":{"quota":250000,"period":100000}})", vm);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("a CPU limit of 2500m does not fit the pod's VM of 2 vCPUs"),
            std::string::npos)
      << s.ToString();
  EXPECT_EQ(CheckResizeFits("app", "[]", vm).code(), Code::kInvalidArgument);
  // A size stored by an older hull: the VM's RAM is the bound.
  EXPECT_TRUE(CheckResizeFits("app", Memory(300 << 20), {.vcpus = 2, .memory_mib = 376}).ok());
  EXPECT_FALSE(CheckResizeFits("app", Memory(400 << 20), {.vcpus = 2, .memory_mib = 376}).ok());
}

// [vm] memory_headroom_mib = 256 on the same pod: a 632 MiB VM whose
// containers can grow to 512 MiB together.
VmCapacity Pod256WithHeadroom() {
  VmCapacity vm = Pod256();
  vm.headroom_mib = 256;
  vm.memory_mib += vm.headroom_mib;
  return vm;
}

TEST(VmResizeTest, HeadroomIsWhatAResizeCanGrowInto) {
  const VmCapacity vm = Pod256WithHeadroom();
  EXPECT_EQ(ContainersCapMib(vm), 512u);
  EXPECT_EQ(ContainersCapMib(Pod256()), 256u);
  EXPECT_TRUE(CheckResizeFits("app", Memory(448 << 20), vm).ok());
  EXPECT_TRUE(CheckResizeFits("app", Memory(512 << 20), vm).ok());
  Status s = CheckResizeFits("app", Memory(1024 << 20), vm);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("a memory limit of 1024 MiB does not fit the pod's VM, booted with "
                             "632 MiB of RAM of which 512 MiB are for the pod's containers (256 "
                             "MiB of them [vm] memory_headroom_mib)"),
            std::string::npos)
      << s.message();
}

TEST(VmResizeTest, ThePodsContainersAreHeldToTheirLimitsTogether) {
  const VmCapacity vm = Pod256WithHeadroom();
  constexpr int64_t kMiB = 1 << 20;
  // Never below the pod's size: no limits, or limits that add up to less.
  EXPECT_EQ(PodMemoryMax("a", {}, vm).value(), 256u * kMiB);
  EXPECT_EQ(PodMemoryMax("a", {{"a", 0}, {"b", 0}}, vm).value(), 256u * kMiB);
  EXPECT_EQ(PodMemoryMax("a", {{"a", 128 * kMiB}}, vm).value(), 256u * kMiB);
  // A raise past it: the sum.
  EXPECT_EQ(PodMemoryMax("a", {{"a", 448 * kMiB}}, vm).value(), 448u * kMiB);
  EXPECT_EQ(PodMemoryMax("a", {{"a", 300 * kMiB}, {"b", 100 * kMiB}, {"c", 0}}, vm).value(),
            400u * kMiB);
  EXPECT_EQ(PodMemoryMax("a", {{"a", 512 * kMiB}}, vm).value(), 512u * kMiB);
  // Each fits, the sum does not: refused, naming both sizes.
  Result<uint64_t> over = PodMemoryMax("a", {{"a", 400 * kMiB}, {"b", 200 * kMiB}}, vm);
  ASSERT_FALSE(over.has_value());
  EXPECT_EQ(over.error().code(), Code::kFailedPrecondition);
  EXPECT_NE(over.error().message().find("would add up to 600 MiB, more than the 512 MiB"),
            std::string::npos)
      << over.error().message();
  // A limit far beyond (an overflow would wrap the sum) is refused too.
  EXPECT_FALSE(
      PodMemoryMax("a", {{"a", INT64_MAX}, {"b", INT64_MAX}, {"c", INT64_MAX}}, vm).has_value());
}

TEST(VmResizeTest, TheMemoryLimitOfAnUpdate) {
  EXPECT_EQ(MemoryLimitOf(Memory(256 << 20)), std::optional<int64_t>(256 << 20));
  EXPECT_EQ(MemoryLimitOf(Memory(-1)), std::nullopt);
  EXPECT_EQ(MemoryLimitOf(R"({"cpu":{"quota":1000}})"), std::nullopt);
  EXPECT_EQ(MemoryLimitOf("not json"), std::nullopt);
}

}  // namespace
}  // namespace hull::shim::vm
