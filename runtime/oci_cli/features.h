// The OCI runtime features document (runtime-spec features.md) for runtimes
// whose CLI has no `features` command (crun before 1.9): hull builds it from
// what the installed runtime and its libraries say about themselves, and
// from the support tables of the crun release it was written against.
// Pure except QueryHostFacts. Any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace hull::runtime::oci_cli {

// What the libraries crun links can tell about this host.
struct HostFacts {
  // Capability names libcap knows (crun parses names with libcap), upper case.
  std::vector<std::string> capabilities;
  // SCMP_ARCH_* names libseccomp resolves (crun resolves them the same way).
  std::vector<std::string> seccomp_archs;
  std::string libseccomp_version;  // "2.5.4"; empty: unknown
};

// Asks libcap.so.2 and libseccomp.so.2 (dlopen'd, so hull links neither);
// fields whose library is missing stay empty and are left out of the document.
HostFacts QueryHostFacts();

// The features document for the crun whose `crun --version` printed
// `version_output`. InvalidArgument if that is not crun's version banner.
Result<std::string> CrunFeaturesDocument(std::string_view version_output, const HostFacts& facts);

// CrunFeaturesDocument with this host's facts (a Flavour::build_features).
Result<std::string> BuildCrunFeatures(std::string_view version_output);

// The newest runtime-spec version the crun whose `crun --version` printed
// `version_output` lets through its ociVersion check (a
// Flavour::spec_version_max), for crun without `crun features`. crun 1.8
// accepts 1.0.x and 1.1.x and refuses 1.2 ("unknown version specified"),
// though its banner says "spec: 1.0.0". Before 1.8.6 it knows the fields of
// 1.1.0-rc.1 only (no OCI time namespace, scheduler or ioPriority), so
// "1.1.0-rc.1"; 1.8.6 and later "1.1.0"; older crun: the banner's version.
// "" when the output is not crun's banner.
std::string CrunSpecVersionMax(std::string_view version_output);

}  // namespace hull::runtime::oci_cli
