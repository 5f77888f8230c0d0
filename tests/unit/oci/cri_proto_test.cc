// proto/cri/runtime/v1/api.proto against the wire: bytes built by hand from
// the upstream field numbers (k8s.io/cri-api runtime/v1) must decode into the
// right fields, and hull's encoding must produce those bytes. This pins the
// field numbers hull depends on; the whole file was also compared with the
// upstream api.proto field by field when it was written.

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "cri/runtime/v1/api.pb.h"

namespace {

std::string Bytes(std::initializer_list<unsigned char> bytes) {
  return std::string(bytes.begin(), bytes.end());
}

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : bytes) {
    if (!out.empty()) out += ' ';
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

// PodSandboxConfig{linux(8){resources(5){cpu_period(1)=100000},
//                           overhead(4){memory_limit_in_bytes(4)=1}}}
TEST(CriProtoTest, LinuxResourcesAndOverheadFieldNumbers) {
  ::runtime::v1::PodSandboxConfig config;
  config.mutable_linux()->mutable_resources()->set_cpu_period(100000);
  config.mutable_linux()->mutable_overhead()->set_memory_limit_in_bytes(1);
  std::string wire;
  ASSERT_TRUE(config.SerializeToString(&wire));
  // Fields are written in field-number order: overhead (4) before resources (5).
  EXPECT_EQ(Hex(wire), Hex(Bytes({0x42, 0x0A,                              // linux, 10 bytes
                                  0x22, 0x02, 0x20, 0x01,                  // overhead{memory=1}
                                  0x2A, 0x04, 0x08, 0xA0, 0x8D, 0x06})));  // resources{period}
}

TEST(CriProtoTest, DecodesKubeletStyleBytes) {
  // metadata(1){name(1)="p", uid(2)="u", namespace(3)="n", attempt(4)=2},
  // hostname(2)="h", log_directory(3)="/l",
  // dns_config(4){servers(1)="1.1.1.1", searches(2)="s", options(3)="o"},
  // linux(8){cgroup_parent(1)="/k", security_context(2){
  //   namespace_options(1){network(1)=NODE(2), pid(2)=NODE, ipc(3)=NODE},
  //   run_as_user(3){value=1000}, supplemental_groups(5)=[5] (packed),
  //   privileged(6)=true, run_as_group(8){value=3000},
  //   seccomp(9){profile_type=Unconfined(1)}},
  //   sysctls(3){"a"->"b"}, resources(5){cpu_quota(2)=-1}}
  const std::string wire = Bytes({
      0x0A, 0x0B, 0x0A, 0x01, 'p',  0x12, 0x01, 'u',  0x1A, 0x01, 'n',  0x20, 0x02,       //
      0x12, 0x01, 'h',                                                                    //
      0x1A, 0x02, '/',  'l',                                                              //
      0x22, 0x0F, 0x0A, 0x07, '1',  '.',  '1',  '.',  '1',  '.',  '1',  0x12, 0x01, 's',  //
      0x1A, 0x01, 'o',                                                                    //
      0x42, 0x36,                                                                         // linux
      0x0A, 0x02, '/',  'k',                                                              //
      0x12, 0x1B,                                      // security_context
      0x0A, 0x06, 0x08, 0x02, 0x10, 0x02, 0x18, 0x02,  //
      0x1A, 0x03, 0x08, 0xE8, 0x07,                    //
      0x2A, 0x01, 0x05,                                // packed
      0x30, 0x01,                                      //
      0x42, 0x03, 0x08, 0xB8, 0x17,                    //
      0x4A, 0x02, 0x08, 0x01,                          //
      0x1A, 0x06, 0x0A, 0x01, 'a',  0x12, 0x01, 'b',   // sysctls
      0x2A, 0x0B, 0x10, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01,  // resources
  });
  ::runtime::v1::PodSandboxConfig config;
  ASSERT_TRUE(config.ParseFromString(wire));
  EXPECT_EQ(config.metadata().name(), "p");
  EXPECT_EQ(config.metadata().uid(), "u");
  EXPECT_EQ(config.metadata().namespace_(), "n");
  EXPECT_EQ(config.metadata().attempt(), 2u);
  EXPECT_EQ(config.hostname(), "h");
  EXPECT_EQ(config.log_directory(), "/l");
  EXPECT_EQ(config.dns_config().servers(0), "1.1.1.1");
  EXPECT_EQ(config.dns_config().searches(0), "s");
  EXPECT_EQ(config.dns_config().options(0), "o");
  const auto& linux_config = config.linux();
  EXPECT_EQ(linux_config.cgroup_parent(), "/k");
  const auto& sc = linux_config.security_context();
  EXPECT_EQ(sc.namespace_options().network(), ::runtime::v1::NODE);
  EXPECT_EQ(sc.namespace_options().pid(), ::runtime::v1::NODE);
  EXPECT_EQ(sc.namespace_options().ipc(), ::runtime::v1::NODE);
  EXPECT_EQ(sc.run_as_user().value(), 1000);
  EXPECT_EQ(sc.run_as_group().value(), 3000);
  ASSERT_EQ(sc.supplemental_groups_size(), 1);
  EXPECT_EQ(sc.supplemental_groups(0), 5);
  EXPECT_TRUE(sc.privileged());
  EXPECT_EQ(sc.seccomp().profile_type(), ::runtime::v1::SecurityProfile::Unconfined);
  EXPECT_EQ(linux_config.sysctls().at("a"), "b");
  EXPECT_EQ(linux_config.resources().cpu_quota(), -1);
  // Re-encoding gives the same bytes (no field lost or renumbered).
  std::string again;
  ASSERT_TRUE(config.SerializeToString(&again));
  EXPECT_EQ(Hex(again), Hex(wire));
}

TEST(CriProtoTest, UserNamespaceAndContainerFields) {
  // NamespaceOption{userns_options(5){mode(1)=POD(0 omitted),
  //   uids(2){host_id(1)=100000, container_id(2)=0, length(3)=65536}}}
  ::runtime::v1::NamespaceOption ns;
  auto* uid = ns.mutable_userns_options()->add_uids();
  uid->set_host_id(100000);
  uid->set_length(65536);
  std::string wire;
  ASSERT_TRUE(ns.SerializeToString(&wire));
  EXPECT_EQ(Hex(wire),
            Hex(Bytes({0x2A, 0x0A, 0x12, 0x08, 0x08, 0xA0, 0x8D, 0x06, 0x18, 0x80, 0x80, 0x04})));

  // ContainerConfig{stop_signal(18)=SIGKILL(13)}: a two-byte tag.
  ::runtime::v1::ContainerConfig container;
  container.set_stop_signal(::runtime::v1::SIGNAL_SIGKILL);
  ASSERT_TRUE(container.SerializeToString(&wire));
  EXPECT_EQ(Hex(wire), Hex(Bytes({0x90, 0x01, 0x0D})));

  // ImageSpec{user_specified_image(18)="x"}.
  ::runtime::v1::ImageSpec image;
  image.set_user_specified_image("x");
  ASSERT_TRUE(image.SerializeToString(&wire));
  EXPECT_EQ(Hex(wire), Hex(Bytes({0x92, 0x01, 0x01, 'x'})));
}

TEST(CriProtoTest, UnknownFieldsSurvive) {
  // PodSandboxConfig field 99 (varint 7) is not in hull's subset.
  const std::string wire = Bytes({0x12, 0x01, 'h', 0x98, 0x06, 0x07});
  ::runtime::v1::PodSandboxConfig config;
  ASSERT_TRUE(config.ParseFromString(wire));
  EXPECT_EQ(config.hostname(), "h");
  std::string again;
  ASSERT_TRUE(config.SerializeToString(&again));
  EXPECT_EQ(Hex(again), Hex(wire));
}

}  // namespace
