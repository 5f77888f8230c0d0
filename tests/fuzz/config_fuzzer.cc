// hull's TOML config and the runtime options containerd sends: the input is
// TOML (first byte 0), a containerd.runc.v1.Options (1) or a
// runtimeoptions.v1.Options (2) payload. What applies must print as TOML
// that reads back to the same config.
#include <cstddef>
#include <cstdint>
#include <string>

#include "google/protobuf/any.pb.h"
#include "shim/config/config.h"

using namespace hull::shim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  ShimConfig config;
  hull::Status status;
  switch (data[0] % 3) {
    case 0: status = ApplyToml(body, "fuzz", config); break;
    case 1:
    case 2: {
      google::protobuf::Any any;
      any.set_type_url(data[0] % 3 == 1 ? "containerd.runc.v1.Options"
                                        : "runtimeoptions.v1.Options");
      any.set_value(body);
      status = ApplyOptions(any, config);
      break;
    }
  }
  if (!status.ok()) return 0;
  ShimConfig again;
  hull::Status reread = ApplyToml(ToToml(config), "fuzz-roundtrip", again);
  if (!reread.ok() || !(again == config)) __builtin_trap();  // ToToml must reproduce it
  return 0;
}
