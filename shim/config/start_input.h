// What containerd writes to the stdin of `start`: nothing, a protobuf Any of
// the runtime options (containerd 1.6 - 2.2), or a BootstrapParams (2.3+),
// which carries the options Any as its first extension. Pure decoding.
#pragma once

#include <optional>
#include <string_view>

#include "base/status.h"
#include "containerd/runtime/bootstrap/v1/bootstrap.pb.h"
#include "google/protobuf/any.pb.h"

namespace hull::shim {

struct StartInput {
  // The runtime options, when containerd sent any.
  std::optional<google::protobuf::Any> options;
  // Set when stdin was a BootstrapParams (containerd 2.3+).
  std::optional<containerd::runtime::bootstrap::v1::BootstrapParams> bootstrap;
};

// Decodes `stdin_data`. It is a BootstrapParams only if it parses as one AND
// its instance_id and namespace equal `id` and `ns` (containerd's own test);
// otherwise it must be an Any. Empty input is an empty StartInput; input that
// is neither is InvalidArgument.
Result<StartInput> DecodeStartInput(std::string_view stdin_data, std::string_view id,
                                    std::string_view ns);

}  // namespace hull::shim
