// The server's own settings: read from what `start` stored in the bundle
// (so a handler's ConfigPath file counts), and a later container's
// server-wide keys refused with a logged error naming the file and the key.

#include "shim/config/server_config.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "google/protobuf/any.pb.h"
#include "runtimeoptions/v1/options.pb.h"

namespace hull::shim {
namespace {

namespace fs = std::filesystem;

class ServerConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/hull-server-config-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    root_ = dir;
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(root_ / name) << text;
    return (root_ / name).string();
  }
  fs::path root_;
};

google::protobuf::Any HandlerOptions(const std::string& config_path) {
  runtimeoptions::v1::Options options;
  options.set_config_path(config_path);
  google::protobuf::Any any;
  any.set_type_url("runtimeoptions.v1.Options");
  any.set_value(options.SerializeAsString());
  return any;
}

TEST(DifferingKeysTest, NamesEachKeyOfASectionAndTopLevelKeys) {
  ShimConfig a;
  ShimConfig b;
  EXPECT_TRUE(DifferingKeys(a, b, ServerWideKeys()).empty());
  b.security.confine = false;
  b.ttrpc.max_connections = 7;
  b.log_level = LogLevel::kWarn;
  b.runtime.binary_name = "crun";  // not server-wide: the pod refuses it itself
  std::vector<KeyDifference> d = DifferingKeys(a, b, ServerWideKeys());
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0], (KeyDifference{"log_level", "'info'", "'warn'"}));
  EXPECT_EQ(d[1], (KeyDifference{"ttrpc.max_connections", "256", "7"}));
  EXPECT_EQ(d[2], (KeyDifference{"security.confine", "true", "false"}));
}

// The bundle's copy wins over the config file: it is the config file under
// containerd's options, a handler's ConfigPath file among them (issue 26:
// [security] there was silently ignored).
TEST_F(ServerConfigTest, ServerReadsWhatStartStoredInTheBundle) {
  const std::string file = Write("config.toml", "[security]\nconfine = false\n");
  ShimConfig stored;
  stored.security.confine = true;
  stored.ttrpc.max_connections = 9;
  stored.log_level = LogLevel::kError;
  ASSERT_TRUE(WriteBundleConfig(root_.string(), stored).ok());
  Result<ServerConfig> loaded = LoadServerConfig(root_.string(), file);
  ASSERT_TRUE(loaded.has_value()) << loaded.error().ToString();
  EXPECT_EQ(loaded->config, stored);
  EXPECT_NE(loaded->origin.find("hull-config.toml"), std::string::npos) << loaded->origin;
}

TEST_F(ServerConfigTest, WithoutABundleCopyTheConfigFileApplies) {
  const std::string file = Write("config.toml", "[security]\nconfine = true\n");
  Result<ServerConfig> loaded = LoadServerConfig(root_.string(), file);
  ASSERT_TRUE(loaded.has_value()) << loaded.error().ToString();
  EXPECT_TRUE(loaded->config.security.confine);
  EXPECT_EQ(loaded->origin, file);
}

TEST_F(ServerConfigTest, AnInvalidBundleCopyIsAnError) {
  const std::string file = Write("config.toml", "");
  Write("hull-config.toml", "[security]\nconfine = 3\n");
  Result<ServerConfig> loaded = LoadServerConfig(root_.string(), file);
  ASSERT_FALSE(loaded.has_value());
  EXPECT_EQ(loaded.error().code(), Code::kInvalidArgument);
}

TEST_F(ServerConfigTest, OriginNamesTheHandlerFile) {
  const google::protobuf::Any handler = HandlerOptions("/etc/hull/vm.toml");
  std::string origin = ContainerConfigOrigin(handler, root_.string(), "/etc/hull/config.toml");
  EXPECT_TRUE(origin.starts_with("/etc/hull/vm.toml")) << origin;
  EXPECT_NE(origin.find("/etc/hull/config.toml"), std::string::npos) << origin;
  EXPECT_EQ(ConfigOrigin(nullptr, "/etc/hull/config.toml"), "/etc/hull/config.toml");
  // Without options at Create: what `start` kept with the bundle's copy,
  // which still reads back as the same config.
  const google::protobuf::Any none;
  EXPECT_EQ(ContainerConfigOrigin(none, root_.string(), "/etc/hull/config.toml"),
            (root_ / "hull-config.toml").string());
  ShimConfig stored;
  stored.security.confine = true;
  ASSERT_TRUE(
      WriteBundleConfig(root_.string(), stored, ConfigOrigin(&handler, "/etc/hull/config.toml"))
          .ok());
  origin = ContainerConfigOrigin(none, root_.string(), "/etc/hull/config.toml");
  EXPECT_TRUE(origin.starts_with("/etc/hull/vm.toml over /etc/hull/config.toml")) << origin;
  Result<ShimConfig> back = ReadBundleConfig(root_.string());
  ASSERT_TRUE(back.has_value()) << back.error().ToString();
  EXPECT_EQ(*back, stored);
}

class CheckServerWideKeysTest : public ServerConfigTest {
 protected:
  // Runs the check with a logger writing to a file; returns the log.
  std::string Check(const ShimConfig& server, const ShimConfig& container, Status* status) {
    const std::string path = (root_ / "log").string();
    {
      Logger log =
          Logger::ToFd(UniqueFd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600)));
      *status = CheckServerWideKeys(server, container, "create c1", "/etc/hull/vm.toml", log);
      log.Flush();
    }
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

TEST_F(CheckServerWideKeysTest, AskingAnUnconfinedServerForConfinementIsRefusedAndLogged) {
  ShimConfig server;
  server.security.confine = false;
  ShimConfig container;
  Status status;
  std::string log = Check(server, container, &status);
  EXPECT_EQ(status.code(), Code::kFailedPrecondition);
  EXPECT_NE(log.find("/etc/hull/vm.toml"), std::string::npos) << log;
  EXPECT_NE(log.find("security.confine"), std::string::npos) << log;
}

TEST_F(CheckServerWideKeysTest, OtherServerWideKeysAreLoggedNotApplied) {
  ShimConfig server;
  ShimConfig container;
  container.security.confine = false;
  container.ttrpc.partial_frame_timeout_ms = 5;
  Status status;
  std::string log = Check(server, container, &status);
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_NE(log.find("ttrpc.partial_frame_timeout_ms"), std::string::npos) << log;
  EXPECT_NE(log.find("security.confine"), std::string::npos) << log;
  EXPECT_NE(log.find("/etc/hull/vm.toml"), std::string::npos) << log;
}

TEST_F(CheckServerWideKeysTest, TheSameSettingsSayNothing) {
  ShimConfig server;
  server.security.confine = true;
  ShimConfig container = server;
  container.runtime.binary_name = "crun";
  Status status;
  EXPECT_EQ(Check(server, container, &status), "");
  EXPECT_TRUE(status.ok());
}

}  // namespace
}  // namespace hull::shim
