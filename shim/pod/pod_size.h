// The pod's size on disk: for a pause container (CRI container type
// "sandbox"), oci::PodSize computed from the spec's annotations with the
// config's [sizing] policy is logged and recorded in
// <bundle>/hull-pod-size.json, where it is read back (Pod::Size) and the VM
// backend boots from it. The file's keys are in docs/sizing.md. Blocking
// file I/O; no state.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/logging.h"
#include "base/spawner.h"
#include "base/status.h"
#include "oci/sizing.h"

namespace hull::shim {

inline constexpr std::string_view kPodSizeFile = "hull-pod-size.json";

// True for the pause container of a CRI pod.
bool IsSandboxContainer(const std::map<std::string, std::string>& annotations);

// The record's JSON text (an object, one key per line).
std::string PodSizeJson(const oci::PodSize& size);

// <bundle>/hull-pod-size.json, written atomically (mode 0644; by `spawner`
// when given: a confined server's).
Status WritePodSizeFile(const std::string& bundle, const oci::PodSize& size,
                        SpawnerClient* spawner = nullptr);

// Reads a record WritePodSizeFile wrote back: NotFound when absent,
// InvalidArgument when malformed.
Result<oci::PodSize> ReadPodSizeFile(const std::string& path);

// For a pause container: computes the size, logs it (one info line, plus a
// warning line per PodSize warning, prefixed with `who`) and writes the
// file. nullopt (and nothing written) for any other container.
Result<std::optional<oci::PodSize>> RecordPodSize(
    const std::string& bundle, const std::map<std::string, std::string>& annotations,
    const oci::SizingPolicy& policy, const Logger& log, std::string_view who);

}  // namespace hull::shim
