// The command line in Go flag syntax, as containerd 1.6 - 2.x passes it.

#include "shim/cli/flags.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace hull::shim {
namespace {

Result<CommandLine> Parse(std::vector<std::string> args) {
  return ParseCommandLine(args);
}

TEST(FlagsTest, ContainerdStart) {
  auto cmd = Parse({"-namespace", "k8s.io", "-address", "/run/containerd/containerd.sock",
                    "-publish-binary", "/usr/bin/containerd", "-id", "abc", "-debug", "start"});
  ASSERT_TRUE(cmd.has_value()) << cmd.error().ToString();
  EXPECT_EQ(cmd->action, Action::kStart);
  EXPECT_EQ(cmd->ns, "k8s.io");
  EXPECT_EQ(cmd->address, "/run/containerd/containerd.sock");
  EXPECT_EQ(cmd->publish_binary, "/usr/bin/containerd");
  EXPECT_EQ(cmd->id, "abc");
  EXPECT_TRUE(cmd->debug);
  EXPECT_TRUE(cmd->unknown_flags.empty());
}

TEST(FlagsTest, ContainerdDelete) {
  auto cmd = Parse({"-namespace", "default", "-address", "/a", "-publish-binary", "/c", "-id", "x",
                    "-bundle", "/run/b/x", "delete"});
  ASSERT_TRUE(cmd.has_value());
  EXPECT_EQ(cmd->action, Action::kDelete);
  EXPECT_EQ(cmd->bundle, "/run/b/x");
  EXPECT_FALSE(cmd->debug);
}

TEST(FlagsTest, NoActionWordIsServeMode) {
  auto cmd = Parse({"-namespace", "ns", "-id", "x", "-address", "/a", "-debug"});
  ASSERT_TRUE(cmd.has_value());
  EXPECT_EQ(cmd->action, Action::kServe);
  EXPECT_TRUE(cmd->debug);
}

TEST(FlagsTest, GoValueForms) {
  auto cmd = Parse({"-namespace=ns", "--id", "x", "--address=/a=b", "-bundle=", "delete"});
  ASSERT_TRUE(cmd.has_value());
  EXPECT_EQ(cmd->ns, "ns");
  EXPECT_EQ(cmd->id, "x");
  EXPECT_EQ(cmd->address, "/a=b");  // only the first '=' separates
  EXPECT_EQ(cmd->bundle, "");
}

TEST(FlagsTest, ValueMayStartWithDash) {
  // Go gives a string flag the next argument whatever it looks like.
  auto cmd = Parse({"-id", "-weird", "start"});
  ASSERT_TRUE(cmd.has_value());
  EXPECT_EQ(cmd->id, "-weird");
  EXPECT_EQ(cmd->action, Action::kStart);
}

TEST(FlagsTest, LastValueWins) {
  auto cmd = Parse({"-id", "a", "-id", "b"});
  ASSERT_TRUE(cmd.has_value());
  EXPECT_EQ(cmd->id, "b");
}

TEST(FlagsTest, BoolForms) {
  for (const char* on :
       {"-debug", "--debug", "-debug=true", "-debug=1", "-debug=T", "-debug=TRUE"}) {
    auto cmd = Parse({on});
    ASSERT_TRUE(cmd.has_value()) << on;
    EXPECT_TRUE(cmd->debug) << on;
  }
  for (const char* off : {"-debug=false", "-debug=0", "-debug=F", "--debug=False"}) {
    auto cmd = Parse({"-debug", off});
    ASSERT_TRUE(cmd.has_value()) << off;
    EXPECT_FALSE(cmd->debug) << off;
  }
  auto bad = Parse({"-debug=maybe"});
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), Code::kInvalidArgument);
}

TEST(FlagsTest, BoolDoesNotTakeTheNextArgument) {
  // "-debug false" is -debug plus the action word "false" in Go.
  auto cmd = Parse({"-debug", "start"});
  ASSERT_TRUE(cmd.has_value());
  EXPECT_TRUE(cmd->debug);
  EXPECT_EQ(cmd->action, Action::kStart);
  EXPECT_FALSE(Parse({"-debug", "false"}).has_value());
}

TEST(FlagsTest, VersionAndInfo) {
  EXPECT_EQ(Parse({"-v"})->action, Action::kVersion);
  EXPECT_EQ(Parse({"-version"})->action, Action::kVersion);
  EXPECT_EQ(Parse({"--version"})->action, Action::kVersion);
  EXPECT_EQ(Parse({"-info"})->action, Action::kInfo);
  EXPECT_EQ(Parse({"-h"})->action, Action::kHelp);
  // As in Go shims: version first, then info, before any action word.
  EXPECT_EQ(Parse({"-info", "-v"})->action, Action::kVersion);
  EXPECT_EQ(Parse({"-info", "start"})->action, Action::kInfo);
  EXPECT_EQ(Parse({"-v", "anything"})->action, Action::kVersion);
  EXPECT_EQ(Parse({"-info=false", "start"})->action, Action::kStart);
}

TEST(FlagsTest, UnknownFlagsAreKeptForAWarning) {
  auto cmd = Parse({"-namespace", "ns", "-new-flag", "-other=1", "-id", "x", "start"});
  ASSERT_TRUE(cmd.has_value()) << cmd.error().ToString();
  EXPECT_EQ(cmd->unknown_flags, (std::vector<std::string>{"-new-flag", "-other=1"}));
  EXPECT_EQ(cmd->id, "x");
  EXPECT_EQ(cmd->action, Action::kStart);
}

TEST(FlagsTest, UnknownFlagTakesAPlainNextArgument) {
  auto cmd = Parse({"-new-flag", "value", "-id", "x", "start"});
  ASSERT_TRUE(cmd.has_value());
  EXPECT_EQ(cmd->unknown_flags, std::vector<std::string>{"-new-flag value"});
  EXPECT_EQ(cmd->action, Action::kStart);

  // ... but never an action word, and nothing at the end.
  cmd = Parse({"-id", "x", "-new-flag", "delete"});
  ASSERT_TRUE(cmd.has_value());
  EXPECT_EQ(cmd->unknown_flags, std::vector<std::string>{"-new-flag"});
  EXPECT_EQ(cmd->action, Action::kDelete);
  cmd = Parse({"-id", "x", "--new-flag"});
  ASSERT_TRUE(cmd.has_value());
  EXPECT_EQ(cmd->unknown_flags, std::vector<std::string>{"--new-flag"});
  EXPECT_EQ(cmd->action, Action::kServe);
}

TEST(FlagsTest, DoubleDashEndsFlags) {
  auto cmd = Parse({"-id", "x", "--", "start", "extra"});
  ASSERT_TRUE(cmd.has_value());
  EXPECT_EQ(cmd->action, Action::kStart);
  EXPECT_EQ(cmd->extra_args, std::vector<std::string>{"extra"});
}

TEST(FlagsTest, Errors) {
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"-id"},                      // value missing
           {"-namespace", "ns", "-id"},  // value missing at the end
           {"---id", "x"},               // bad syntax
           {"-=x"},                      // bad syntax
           {"-id", "x", "stop"},         // unknown action
           {"-"},                        // "-" is an action word, and unknown
       }) {
    auto cmd = Parse(args);
    ASSERT_FALSE(cmd.has_value()) << args[0];
    EXPECT_EQ(cmd.error().code(), Code::kInvalidArgument);
  }
}

TEST(FlagsTest, Environment) {
  std::map<std::string, std::string> vars = {
      {"TTRPC_ADDRESS", "/run/containerd/containerd.sock.ttrpc"},
      {"GRPC_ADDRESS", "/run/containerd/containerd.sock"},
      {"NAMESPACE", "k8s.io"},
      {"MAX_SHIM_VERSION", "2"},
      {"SCHED_CORE", "1"},
      {"HULL_CONFIG", "/tmp/hull.toml"},
      {"HULL_SOCKET_DIR", "/tmp/s"},
  };
  auto getenv = [&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  Environment env = ReadEnvironment(getenv);
  EXPECT_EQ(env.ttrpc_address, "/run/containerd/containerd.sock.ttrpc");
  EXPECT_EQ(env.grpc_address, "/run/containerd/containerd.sock");
  EXPECT_EQ(env.ns, "k8s.io");
  EXPECT_EQ(env.max_shim_version, "2");
  EXPECT_TRUE(env.sched_core);
  EXPECT_EQ(env.config_path, "/tmp/hull.toml");
  EXPECT_EQ(env.socket_dir, "/tmp/s");

  // -namespace and -address fall back to the environment.
  CommandLine cmd;
  ApplyEnvironmentDefaults(env, cmd);
  EXPECT_EQ(cmd.ns, "k8s.io");
  EXPECT_EQ(cmd.address, "/run/containerd/containerd.sock");
  cmd.ns = "flag";
  ApplyEnvironmentDefaults(env, cmd);
  EXPECT_EQ(cmd.ns, "flag");

  vars.clear();
  env = ReadEnvironment(getenv);
  EXPECT_FALSE(env.sched_core);
  EXPECT_EQ(env.config_path, "/etc/hull/config.toml");
  EXPECT_EQ(env.socket_dir, "/run/containerd/s");
}

TEST(FlagsTest, ServerArgs) {
  auto cmd = Parse({"-namespace", "ns", "-id", "x", "-address", "/run/c.sock", "-publish-binary",
                    "/bin/c", "-debug"});
  ASSERT_TRUE(cmd.has_value());
  Environment env;
  ServerArgs args = MakeServerArgs(*cmd, env, "/run/bundle");
  EXPECT_EQ(args.ns, "ns");
  EXPECT_EQ(args.id, "x");
  EXPECT_EQ(args.address, "/run/c.sock");
  EXPECT_EQ(args.publish_binary, "/bin/c");
  EXPECT_EQ(args.ttrpc_address, "/run/c.sock.ttrpc");  // derived when TTRPC_ADDRESS is unset
  EXPECT_EQ(args.bundle, "/run/bundle");
  EXPECT_TRUE(args.debug);
  EXPECT_EQ(args.listen_fd, 3);

  env.ttrpc_address = "/run/t.ttrpc";
  EXPECT_EQ(MakeServerArgs(*cmd, env, "/b").ttrpc_address, "/run/t.ttrpc");
}

}  // namespace
}  // namespace hull::shim
