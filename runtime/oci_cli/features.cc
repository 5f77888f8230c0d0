#include "runtime/oci_cli/features.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

namespace hull::runtime::oci_cli {
namespace {

using nlohmann::json;

// crun 1.8's support tables (src/libcrun: the hooks container.c runs, the
// mount_flags.perf word list, linux.c's namespace table, seccomp.c's action
// and operator parsers). crun 1.9+ prints these itself via `crun features`.
constexpr const char* kHooks[] = {"prestart",       "createRuntime", "createContainer",
                                  "startContainer", "poststart",     "poststop"};
constexpr const char* kMountOptions[] = {
    "defaults",      "bind",        "rbind",       "ro",          "rw",           "suid",
    "nosuid",        "dev",         "nodev",       "exec",        "noexec",       "sync",
    "async",         "dirsync",     "remount",     "mand",        "nomand",       "atime",
    "noatime",       "diratime",    "nodiratime",  "relatime",    "norelatime",   "strictatime",
    "nostrictatime", "shared",      "rshared",     "slave",       "rslave",       "private",
    "rprivate",      "unbindable",  "runbindable", "rro",         "rrw",          "rsuid",
    "rnosuid",       "rdev",        "rnodev",      "rexec",       "rnoexec",      "rsync",
    "rasync",        "rdirsync",    "rmand",       "rnomand",     "ratime",       "rnoatime",
    "rdiratime",     "rnodiratime", "rrelatime",   "rnorelatime", "rstrictatime", "rnostrictatime",
    "tmpcopyup",     "idmap"};
constexpr const char* kNamespaces[] = {"mount", "network", "ipc",    "pid",
                                       "uts",   "user",    "cgroup", "time"};
constexpr const char* kSeccompActions[] = {
    "SCMP_ACT_ALLOW",        "SCMP_ACT_ERRNO",       "SCMP_ACT_KILL",
    "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG",
    "SCMP_ACT_NOTIFY",       "SCMP_ACT_TRACE",       "SCMP_ACT_TRAP"};
constexpr const char* kSeccompOperators[] = {"SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT",
                                             "SCMP_CMP_LE", "SCMP_CMP_LT", "SCMP_CMP_MASKED_EQ",
                                             "SCMP_CMP_NE"};
// Every architecture the OCI runtime-spec names for seccomp.
constexpr const char* kSpecArchs[] = {
    "SCMP_ARCH_X86",     "SCMP_ARCH_X86_64",   "SCMP_ARCH_X32",         "SCMP_ARCH_ARM",
    "SCMP_ARCH_AARCH64", "SCMP_ARCH_MIPS",     "SCMP_ARCH_MIPS64",      "SCMP_ARCH_MIPS64N32",
    "SCMP_ARCH_MIPSEL",  "SCMP_ARCH_MIPSEL64", "SCMP_ARCH_MIPSEL64N32", "SCMP_ARCH_PPC",
    "SCMP_ARCH_PPC64",   "SCMP_ARCH_PPC64LE",  "SCMP_ARCH_S390",        "SCMP_ARCH_S390X",
    "SCMP_ARCH_PARISC",  "SCMP_ARCH_PARISC64", "SCMP_ARCH_RISCV64",     "SCMP_ARCH_LOONGARCH64"};

struct DlClose {
  void operator()(void* handle) const { ::dlclose(handle); }
};
using DlHandle = std::unique_ptr<void, DlClose>;

template <typename Fn>
Fn Symbol(const DlHandle& lib, const char* name) {
  return reinterpret_cast<Fn>(::dlsym(lib.get(), name));
}

std::string Upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::vector<std::string> LibcapNames() {
  std::vector<std::string> names;
  DlHandle lib(::dlopen("libcap.so.2", RTLD_NOW | RTLD_LOCAL));
  if (!lib) return names;
  auto to_name = Symbol<char* (*)(int)>(lib, "cap_to_name");
  auto free_fn = Symbol<int (*)(void*)>(lib, "cap_free");
  if (to_name == nullptr || free_fn == nullptr) return names;
  // libcap names the capabilities it knows and prints the others as numbers.
  for (int cap = 0; cap < 64; ++cap) {
    char* name = to_name(cap);
    if (name == nullptr) break;
    std::string s(name);
    free_fn(name);
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) break;
    names.push_back(Upper(std::move(s)));
  }
  return names;
}

void LibseccompFacts(HostFacts& facts) {
  DlHandle lib(::dlopen("libseccomp.so.2", RTLD_NOW | RTLD_LOCAL));
  if (!lib) return;
  struct Version {
    unsigned int major, minor, micro;
  };
  auto version = Symbol<const Version* (*)()>(lib, "seccomp_version");
  auto resolve = Symbol<uint32_t (*)(const char*)>(lib, "seccomp_arch_resolve_name");
  if (version != nullptr) {
    if (const Version* v = version()) {
      facts.libseccomp_version = std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                                 std::to_string(v->micro);
    }
  }
  if (resolve == nullptr) return;
  for (const char* arch : kSpecArchs) {
    // As crun does: strip SCMP_ARCH_, lower-case, ask libseccomp.
    if (resolve(Lower(std::string(arch + 10)).c_str()) != 0) facts.seccomp_archs.push_back(arch);
  }
}

// The banner `crun --version` prints:
//   crun version 1.8.1
//   commit: f8a0...
//   rundir: /run/crun
//   spec: 1.0.0
//   +SYSTEMD +SELINUX +APPARMOR +CAP +SECCOMP +EBPF +YAJL
struct CrunVersion {
  std::string version;
  std::string commit;
  std::string spec;
  std::set<std::string> built_with;  // "SECCOMP", "CRIU", ...
};

Result<CrunVersion> ParseCrunVersion(std::string_view banner) {
  CrunVersion v;
  std::string_view text = banner;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    auto value_of = [&](std::string_view key) -> std::string {
      return std::string(line.substr(key.size()));
    };
    if (line.starts_with("crun version ")) {
      v.version = value_of("crun version ");
    } else if (line.starts_with("commit: ")) {
      v.commit = value_of("commit: ");
    } else if (line.starts_with("spec: ")) {
      v.spec = value_of("spec: ");
    } else if (line.starts_with("+")) {
      while (!line.empty()) {
        size_t sp = line.find(' ');
        std::string_view word = line.substr(0, sp);
        if (word.size() > 1 && word[0] == '+') v.built_with.emplace(word.substr(1));
        line.remove_prefix(sp == std::string_view::npos ? line.size() : sp + 1);
      }
    }
  }
  if (v.version.empty()) {
    return InvalidArgumentError("not a crun --version banner: " +
                                std::string(banner.substr(0, banner.find('\n'))));
  }
  return v;
}

template <size_t N>
json Array(const char* const (&items)[N]) {
  json out = json::array();
  for (const char* s : items) out.push_back(s);
  return out;
}

}  // namespace

HostFacts QueryHostFacts() {
  HostFacts facts;
  facts.capabilities = LibcapNames();
  LibseccompFacts(facts);
  return facts;
}

Result<std::string> CrunFeaturesDocument(std::string_view version_output, const HostFacts& facts) {
  HULL_ASSIGN_OR_RETURN(CrunVersion v, ParseCrunVersion(version_output));
  auto has = [&](const char* feature) { return v.built_with.contains(feature); };

  json linux_ = {{"namespaces", Array(kNamespaces)}};
  if (has("CAP") && !facts.capabilities.empty()) linux_["capabilities"] = facts.capabilities;
  // crun drives cgroup v1 and v2 through cgroupfs always, and systemd (also a
  // user's systemd) when built with it.
  linux_["cgroup"] = {
      {"v1", true}, {"v2", true}, {"systemd", has("SYSTEMD")}, {"systemdUser", has("SYSTEMD")}};
  json seccomp = {{"enabled", has("SECCOMP")}};
  if (has("SECCOMP")) {
    seccomp["actions"] = Array(kSeccompActions);
    seccomp["operators"] = Array(kSeccompOperators);
    if (!facts.seccomp_archs.empty()) seccomp["archs"] = facts.seccomp_archs;
  }
  linux_["seccomp"] = std::move(seccomp);
  linux_["apparmor"] = {{"enabled", has("APPARMOR")}};
  linux_["selinux"] = {{"enabled", has("SELINUX")}};
  // The `idmap` mount option (crun(1): "idmap mount options").
  linux_["mountExtensions"] = {{"idmap", {{"enabled", true}}}};

  const char* checkpoint = has("CRIU") ? "true" : "false";
  json annotations = {
      {"org.opencontainers.runc.checkpoint.enabled", checkpoint},
      {"run.oci.crun.checkpoint.enabled", checkpoint},
      {"run.oci.crun.version", v.version},
  };
  if (!v.commit.empty()) annotations["run.oci.crun.commit"] = v.commit;
  if (has("SECCOMP") && !facts.libseccomp_version.empty()) {
    annotations["io.github.seccomp.libseccomp.version"] = facts.libseccomp_version;
  }

  json doc = {
      {"ociVersionMin", "1.0.0"},
      {"ociVersionMax", v.spec.empty() ? std::string("1.0.0") : v.spec},
      {"hooks", Array(kHooks)},
      {"mountOptions", Array(kMountOptions)},
      {"linux", std::move(linux_)},
      {"annotations", std::move(annotations)},
  };
  // Replace, not throw, should a banner carry invalid UTF-8.
  return doc.dump(4, ' ', false, json::error_handler_t::replace);
}

Result<std::string> BuildCrunFeatures(std::string_view version_output) {
  return CrunFeaturesDocument(version_output, QueryHostFacts());
}

std::string CrunSpecVersionMax(std::string_view version_output) {
  Result<CrunVersion> v = ParseCrunVersion(version_output);
  if (!v) return "";
  int major = 0, minor = 0, patch = 0;
  const char* end = v->version.data() + v->version.size();
  auto [p, ec] = std::from_chars(v->version.data(), end, major);
  if (ec == std::errc() && p != end && *p == '.') {
    auto [p2, ec2] = std::from_chars(p + 1, end, minor);
    if (ec2 == std::errc() && p2 != end && *p2 == '.') std::from_chars(p2 + 1, end, patch);
  }
  // crun took the OCI time namespace in 1.8.4, the scheduler in 1.8.5 and
  // ioPriority in 1.8.6: the fields of 1.1.0-rc.2 and rc.3.
  if (major > 1 || (major == 1 && (minor > 8 || (minor == 8 && patch >= 6)))) return "1.1.0";
  if (major == 1 && minor == 8) return "1.1.0-rc.1";
  return v->spec.empty() ? std::string("1.0.0") : v->spec;
}

}  // namespace hull::runtime::oci_cli
