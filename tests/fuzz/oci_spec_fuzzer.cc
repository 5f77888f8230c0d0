// OCI spec parsing, annotations and pod sizing: a config.json as a bundle
// would hold it. Every accessor must cope with whatever Parse accepted, and
// the size from its annotations must be sane under the default policy.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "oci/sizing.h"
#include "oci/spec.h"

using namespace hull::oci;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto spec = Spec::Parse(text);
  if (!spec) return 0;
  auto annotations = spec->Annotations();
  (void)spec->Terminal();
  (void)spec->Args();
  (void)spec->Env();
  (void)spec->Cwd();
  (void)spec->OomScoreAdj();
  (void)spec->Hostname();
  (void)spec->Mounts();
  (void)spec->CgroupsPath();
  (void)spec->Namespaces();
  (void)spec->Sysctls();
  SizingPolicy policy;
  PodSize pod = SizeFromAnnotations(annotations, policy);
  if (pod.vcpus == 0 || pod.memory_mib < policy.min_memory_mib) __builtin_trap();
  (void)pod.ToString();
  spec->SetAnnotation("io.hull.fuzz", "x");
  spec->SetNamespacePath("network", "/proc/1/ns/net");
  auto reparsed = Spec::Parse(spec->Dump());
  if (!reparsed) __builtin_trap();  // what hull writes, it must read
  return 0;
}
