// The pod size record: which containers get one, and its JSON keys.
#include "shim/pod/pod_size.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/temp_dir.h"

namespace hull::shim {
namespace {

namespace fs = std::filesystem;

std::map<std::string, std::string> Sandbox() {
  return {{"io.kubernetes.cri.container-type", "sandbox"},
          {"io.kubernetes.cri.sandbox-cpu-period", "100000"},
          {"io.kubernetes.cri.sandbox-cpu-quota", "150000"},
          {"io.kubernetes.cri.sandbox-cpu-shares", "1536"},
          {"io.kubernetes.cri.sandbox-memory", "268435456"}};
}

class PodSizeTest : public ::testing::Test {
 protected:
  hull::testing::TempDir tmp_{"hull-pod"};  // bundle_ lives in it
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok());
    bundle_ = tmp_.path();
  }
  nlohmann::json ReadRecord() {
    std::ifstream in(bundle_ / "hull-pod-size.json");
    return nlohmann::json::parse(in, nullptr, false);
  }
  fs::path bundle_;
};

TEST_F(PodSizeTest, OnlyThePauseContainerIsASandbox) {
  EXPECT_TRUE(IsSandboxContainer(Sandbox()));
  EXPECT_FALSE(IsSandboxContainer({{"io.kubernetes.cri.container-type", "container"}}));
  EXPECT_FALSE(IsSandboxContainer({{"io.kubernetes.cri.container-type", "Sandbox"}}));
  EXPECT_FALSE(IsSandboxContainer({}));
}

TEST_F(PodSizeTest, RecordHasEveryKey) {
  auto size = RecordPodSize(bundle_.string(), Sandbox(), oci::SizingPolicy{}, Logger::Null(), "t");
  ASSERT_TRUE(size.has_value()) << size.error().ToString();
  ASSERT_TRUE(size->has_value());
  nlohmann::json j = ReadRecord();
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j.size(), 13u) << j.dump();  // no "overhead": containerd carries none
  EXPECT_EQ(j["source"], "containerd annotations");
  EXPECT_EQ(j["vcpus"], 2);                   // 1.5 + 0.25 -> 2
  EXPECT_EQ(j["memory_mib"], 376);            // 256 + 112 + ceil(3% of 256)
  EXPECT_EQ(j["container_memory_mib"], 256);  // what a resize can grow to (docs/sizing.md)
  EXPECT_EQ(j["cpu_period"], 100000);
  EXPECT_EQ(j["cpu_quota"], 150000);
  EXPECT_EQ(j["cpu_shares"], 1536);
  EXPECT_EQ(j["memory_limit_bytes"], 268435456);
  EXPECT_EQ(j["pod_cpu_millis"], 1500);
  EXPECT_EQ(j["pod_memory_bytes"], 268435456);
  EXPECT_EQ(j["vcpus_defaulted"], false);
  EXPECT_EQ(j["memory_defaulted"], false);
  EXPECT_EQ(j["warnings"], nlohmann::json::array());
  EXPECT_EQ(fs::status(bundle_ / "hull-pod-size.json").permissions() & fs::perms::all,
            fs::perms(0644));
}

// What the server reads back is what `start` computed (Pod::Size reads the
// record instead of computing again).
TEST_F(PodSizeTest, RecordReadsBackAsComputed) {
  oci::CpuMemory workload{.cpu_period = 100000,
                          .cpu_quota = 150000,
                          .cpu_shares = 1536,
                          .memory_limit_bytes = 256 << 20};
  const oci::CpuMemory overhead{
      .cpu_period = 100000, .cpu_quota = 25000, .memory_limit_bytes = 64 << 20};
  for (const oci::CpuMemory* o : {static_cast<const oci::CpuMemory*>(nullptr), &overhead}) {
    oci::PodSize size =
        oci::ComputePodSize(oci::SizeSource::kPodSandboxConfig, workload, o, oci::SizingPolicy{});
    ASSERT_TRUE(WritePodSizeFile(bundle_.string(), size).ok());
    auto read = ReadPodSizeFile((bundle_ / "hull-pod-size.json").string());
    ASSERT_TRUE(read.has_value()) << read.error().ToString();
    EXPECT_EQ(read->ToString(), size.ToString());
    EXPECT_EQ(read->workload, size.workload);
    EXPECT_EQ(read->has_overhead, size.has_overhead);
    EXPECT_EQ(read->overhead, size.overhead);
    EXPECT_EQ(read->cpu_limit_set, size.cpu_limit_set);
    EXPECT_EQ(read->cpu_shares_set, size.cpu_shares_set);
    EXPECT_EQ(read->memory_limit_set, size.memory_limit_set);
    EXPECT_EQ(read->pod_cpu_millis, size.pod_cpu_millis);
    EXPECT_EQ(read->pod_memory_bytes, size.pod_memory_bytes);
    EXPECT_EQ(read->vcpus, size.vcpus);
    EXPECT_EQ(read->memory_mib, size.memory_mib);
    EXPECT_EQ(read->container_memory_mib, size.container_memory_mib);
  }
  std::ofstream(bundle_ / "hull-pod-size.json") << "{\"source\": \"PodSandboxConfig\"}";
  EXPECT_EQ(ReadPodSizeFile((bundle_ / "hull-pod-size.json").string()).error().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(ReadPodSizeFile((bundle_ / "none.json").string()).error().code(), Code::kNotFound);
}

TEST_F(PodSizeTest, PolicyAndWarningsReachTheRecord) {
  auto annotations = Sandbox();
  annotations["io.kubernetes.cri.sandbox-memory"] = "lots";
  oci::SizingPolicy policy;
  policy.default_memory_mib = 512;
  auto size = RecordPodSize(bundle_.string(), annotations, policy, Logger::Null(), "t");
  ASSERT_TRUE(size.has_value());
  nlohmann::json j = ReadRecord();
  EXPECT_EQ(j["memory_mib"], 512);
  EXPECT_EQ(j["memory_limit_bytes"], 0);
  EXPECT_EQ(j["pod_memory_bytes"], 0);
  ASSERT_EQ(j["warnings"].size(), 1u) << j.dump();
}

TEST_F(PodSizeTest, AppContainerGetsNoRecord) {
  auto size = RecordPodSize(bundle_.string(), {{"io.kubernetes.cri.container-type", "container"}},
                            oci::SizingPolicy{}, Logger::Null(), "t");
  ASSERT_TRUE(size.has_value());
  EXPECT_FALSE(size->has_value());
  EXPECT_FALSE(fs::exists(bundle_ / "hull-pod-size.json"));
}

TEST_F(PodSizeTest, UnwritableBundleIsAnError) {
  auto size = RecordPodSize((bundle_ / "missing").string(), Sandbox(), oci::SizingPolicy{},
                            Logger::Null(), "t");
  EXPECT_FALSE(size.has_value());
}

}  // namespace
}  // namespace hull::shim
