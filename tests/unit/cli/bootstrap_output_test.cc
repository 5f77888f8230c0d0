#include "shim/cli/bootstrap_output.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "containerd/runtime/bootstrap/v1/bootstrap.pb.h"

namespace hull::shim {
namespace {

constexpr const char* kAddress = "unix:///run/containerd/s/0123abcd";

// What each containerd's launch of `start` looks like to hull.
const DaemonSignals k16{};  // no MAX_SHIM_VERSION
const DaemonSignals k17{.max_shim_version_set = true, .daemon_module_major = 1};
const DaemonSignals k2x{.max_shim_version_set = true, .daemon_module_major = 2};
const DaemonSignals k23{.bootstrap_params = true, .max_shim_version_set = true};
const DaemonSignals kUnreadable{.max_shim_version_set = true};

TEST(ChooseStartOutputTest, AutoAnswersEachContainerdWhatItTakes) {
  EXPECT_EQ(ChooseStartOutput(StartOutputMode::kAuto, k16), StartOutputFormat::kAddress);
  EXPECT_EQ(ChooseStartOutput(StartOutputMode::kAuto, k17), StartOutputFormat::kAddress);
  EXPECT_EQ(ChooseStartOutput(StartOutputMode::kAuto, k2x), StartOutputFormat::kJsonV3);
  EXPECT_EQ(ChooseStartOutput(StartOutputMode::kAuto, k23), StartOutputFormat::kProtobufV3);
}

TEST(ChooseStartOutputTest, AutoNeverSendsVersion3WithoutProof) {
  // A daemon hull cannot read (not Go, no build info, gone) may be a 1.7,
  // which fails the task on version 3.
  EXPECT_EQ(ChooseStartOutput(StartOutputMode::kAuto, kUnreadable), StartOutputFormat::kAddress);
  // Module v2 without MAX_SHIM_VERSION is not a containerd launching a shim.
  DaemonSignals odd{.daemon_module_major = 2};
  EXPECT_EQ(ChooseStartOutput(StartOutputMode::kAuto, odd), StartOutputFormat::kAddress);
}

TEST(ChooseStartOutputTest, ForcedModesWin) {
  for (const DaemonSignals& s : {k16, k17, k2x, k23, kUnreadable}) {
    EXPECT_EQ(ChooseStartOutput(StartOutputMode::kAddress, s), StartOutputFormat::kAddress);
    EXPECT_EQ(ChooseStartOutput(StartOutputMode::kJsonV2, s), StartOutputFormat::kJsonV2);
    EXPECT_EQ(ChooseStartOutput(StartOutputMode::kJsonV3, s), StartOutputFormat::kJsonV3);
  }
}

TEST(FormatStartOutputTest, EachFormat) {
  EXPECT_EQ(FormatStartOutput(StartOutputFormat::kAddress, kAddress), kAddress);
  for (int version : {2, 3}) {
    auto format = version == 2 ? StartOutputFormat::kJsonV2 : StartOutputFormat::kJsonV3;
    nlohmann::json j = nlohmann::json::parse(FormatStartOutput(format, kAddress));
    EXPECT_EQ(j,
              (nlohmann::json{{"version", version}, {"address", kAddress}, {"protocol", "ttrpc"}}));
  }
  containerd::runtime::bootstrap::v1::BootstrapResult result;
  ASSERT_TRUE(result.ParseFromString(FormatStartOutput(StartOutputFormat::kProtobufV3, kAddress)));
  EXPECT_EQ(result.version(), 3);
  EXPECT_EQ(result.address(), kAddress);
  EXPECT_EQ(result.protocol(), "ttrpc");
}

TEST(ContainerdModuleMajorTest, ReadsTheMainModule) {
  EXPECT_EQ(ContainerdModuleMajor("path\tgithub.com/containerd/containerd/v2/cmd/containerd\n"
                                  "mod\tgithub.com/containerd/containerd/v2\tv2.1.5\t\n"
                                  "dep\tgithub.com/containerd/ttrpc\tv1.2.7\th1:x=\n"),
            2);
  EXPECT_EQ(ContainerdModuleMajor("path\tgithub.com/containerd/containerd/cmd/containerd\n"
                                  "mod\tgithub.com/containerd/containerd\t(devel)\t\n"),
            1);
  EXPECT_EQ(ContainerdModuleMajor("mod\tgithub.com/containerd/containerd/v3\t\t\n"), 3);
}

TEST(ContainerdModuleMajorTest, AnythingElseIsUnknown) {
  EXPECT_EQ(ContainerdModuleMajor(""), std::nullopt);
  EXPECT_EQ(ContainerdModuleMajor("path\tcommand-line-arguments\n"), std::nullopt);
  // containerd as a dependency of something else is not containerd.
  EXPECT_EQ(ContainerdModuleMajor("mod\texample.com/other\t\t\n"
                                  "dep\tgithub.com/containerd/containerd/v2\tv2.1.5\t\n"),
            std::nullopt);
  EXPECT_EQ(ContainerdModuleMajor("mod\tgithub.com/containerd/containerd-fork\t\t\n"),
            std::nullopt);
  EXPECT_EQ(ContainerdModuleMajor("mod\tgithub.com/containerd/containerd/vx\t\t\n"), std::nullopt);
  EXPECT_EQ(ContainerdModuleMajor("mod\tgithub.com/containerd/containerd/v1\t\t\n"), std::nullopt);
}

// A minimal 64-bit ELF file: section names, then .go.buildinfo holding
// `buildinfo`.
std::string ElfWithBuildInfo(const std::string& buildinfo) {
  const std::string names = std::string("\0.shstrtab\0.go.buildinfo\0", 25);
  Elf64_Ehdr ehdr{};
  std::memcpy(ehdr.e_ident, ELFMAG, SELFMAG);
  ehdr.e_ident[EI_CLASS] = ELFCLASS64;
  ehdr.e_ident[EI_DATA] = ELFDATA2LSB;
  ehdr.e_ident[EI_VERSION] = EV_CURRENT;
  ehdr.e_type = ET_EXEC;
  ehdr.e_machine = EM_X86_64;
  ehdr.e_version = EV_CURRENT;
  ehdr.e_ehsize = sizeof(Elf64_Ehdr);
  ehdr.e_shentsize = sizeof(Elf64_Shdr);
  ehdr.e_shnum = 3;
  ehdr.e_shstrndx = 1;
  const uint64_t names_off = sizeof(Elf64_Ehdr);
  const uint64_t info_off = names_off + names.size();
  ehdr.e_shoff = info_off + buildinfo.size();
  Elf64_Shdr sh[3]{};
  sh[1].sh_name = 1;
  sh[1].sh_type = SHT_STRTAB;
  sh[1].sh_offset = names_off;
  sh[1].sh_size = names.size();
  sh[2].sh_name = 11;
  sh[2].sh_type = SHT_PROGBITS;
  sh[2].sh_offset = info_off;
  sh[2].sh_size = buildinfo.size();
  std::string out(reinterpret_cast<const char*>(&ehdr), sizeof ehdr);
  out += names + buildinfo;
  out.append(reinterpret_cast<const char*>(sh), sizeof sh);
  return out;
}

std::string GoBuildInfo(const std::string& go_version, const std::string& modinfo) {
  std::string header("\xff Go buildinf:", 14);
  header += '\x08';  // pointer size
  header += '\x02';  // inline strings
  header.resize(32, '\0');
  auto with_length = [](const std::string& s) {
    std::string out;
    for (uint64_t n = s.size();; n >>= 7) {
      out += static_cast<char>((n & 0x7f) | (n >= 0x80 ? 0x80 : 0));
      if (n < 0x80) break;
    }
    return out + s;
  };
  return header + with_length(go_version) + with_length(modinfo);
}

class ReadGoModuleInfoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/hull-buildinfo-XXXXXX";
    int fd = ::mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    ::close(fd);
    path_ = tmpl;
  }
  void TearDown() override { ::unlink(path_.c_str()); }
  void Write(const std::string& bytes) { std::ofstream(path_, std::ios::binary) << bytes; }
  std::string path_;
};

TEST_F(ReadGoModuleInfoTest, ReadsTheInlineModuleInfo) {
  // Long enough that its length takes two varint bytes.
  std::string modinfo =
      "path\tgithub.com/containerd/containerd/v2/cmd/containerd\n"
      "mod\tgithub.com/containerd/containerd/v2\t(devel)\t\n" +
      std::string(300, 'x') + "\n";
  Write(ElfWithBuildInfo(GoBuildInfo("go1.23.5", modinfo)));
  Result<std::string> read = ReadGoModuleInfo(path_);
  ASSERT_TRUE(read.has_value()) << read.error().ToString();
  EXPECT_EQ(*read, modinfo);
  EXPECT_EQ(ContainerdModuleMajor(*read), 2);
}

TEST_F(ReadGoModuleInfoTest, FilesWithoutItAreNotFound) {
  Write("#!/bin/sh\n");
  EXPECT_EQ(ReadGoModuleInfo(path_).error().code(), Code::kNotFound);
  // This test binary: ELF, but not Go.
  EXPECT_EQ(ReadGoModuleInfo("/proc/self/exe").error().code(), Code::kNotFound);
  EXPECT_EQ(DaemonModuleMajor(::getpid()), std::nullopt);
  // Pre-1.18 layout (pointers instead of inline strings).
  std::string old = GoBuildInfo("go1.16", "mod\tgithub.com/containerd/containerd/v2\t\t\n");
  old[15] = '\0';
  Write(ElfWithBuildInfo(old));
  EXPECT_EQ(ReadGoModuleInfo(path_).error().code(), Code::kNotFound);
  // A length past the end.
  Write(ElfWithBuildInfo(GoBuildInfo("go1.23", "mod\tx\n").substr(0, 36)));
  EXPECT_FALSE(ReadGoModuleInfo(path_).has_value());
}

TEST_F(ReadGoModuleInfoTest, MissingFileIsAnError) {
  EXPECT_EQ(ReadGoModuleInfo(path_ + ".missing").error().code(), Code::kNotFound);
}

}  // namespace
}  // namespace hull::shim
