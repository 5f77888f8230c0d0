#include "shim/config/start_input.h"

#include <string>

namespace hull::shim {

Result<StartInput> DecodeStartInput(std::string_view stdin_data, std::string_view id,
                                    std::string_view ns) {
  StartInput input;
  if (stdin_data.empty()) return input;

  containerd::runtime::bootstrap::v1::BootstrapParams params;
  if (params.ParseFromArray(stdin_data.data(), static_cast<int>(stdin_data.size())) &&
      params.instance_id() == id && params.namespace_() == ns) {
    if (params.extensions_size() > 0 && params.extensions(0).has_value()) {
      input.options = params.extensions(0).value();
    }
    input.bootstrap = std::move(params);
    return input;
  }

  google::protobuf::Any any;
  if (!any.ParseFromArray(stdin_data.data(), static_cast<int>(stdin_data.size()))) {
    return InvalidArgumentError("stdin is neither a BootstrapParams for \"" + std::string(id) +
                                "\" nor a protobuf Any of runtime options");
  }
  if (!any.type_url().empty() || !any.value().empty()) input.options = std::move(any);
  return input;
}

}  // namespace hull::shim
