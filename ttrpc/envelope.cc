#include "google/rpc/status.pb.h"
#include "ttrpc/envelope_internal.h"
#include "ttrpc/request.pb.h"

namespace hull::ttrpc::internal {

std::string EncodeRequest(RequestEnvelope request) {
  ::ttrpc::Request msg;
  msg.set_service(std::move(request.service));
  msg.set_method(std::move(request.method));
  msg.set_payload(std::move(request.payload));
  msg.set_timeout_nano(request.timeout_nano);
  for (auto& [key, value] : request.metadata) {
    ::ttrpc::KeyValue* kv = msg.add_metadata();
    kv->set_key(std::move(key));
    kv->set_value(std::move(value));
  }
  return msg.SerializeAsString();
}

Result<RequestEnvelope> DecodeRequest(std::string_view body) {
  ::ttrpc::Request msg;
  if (!msg.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
    return InvalidArgumentError("unmarshal request error: malformed ttrpc.Request");
  }
  RequestEnvelope request{.service = std::move(*msg.mutable_service()),
                          .method = std::move(*msg.mutable_method()),
                          .payload = std::move(*msg.mutable_payload()),
                          .timeout_nano = msg.timeout_nano(),
                          .metadata = {}};
  request.metadata.reserve(static_cast<size_t>(msg.metadata_size()));
  for (auto& kv : *msg.mutable_metadata()) {
    request.metadata.emplace_back(std::move(*kv.mutable_key()), std::move(*kv.mutable_value()));
  }
  return request;
}

std::string EncodeResponse(const Status& status, std::string payload) {
  ::ttrpc::Response msg;
  if (status.ok()) {
    msg.set_payload(std::move(payload));
  } else {
    msg.mutable_status()->set_code(static_cast<int32_t>(status.code()));
    msg.mutable_status()->set_message(status.message());
  }
  return msg.SerializeAsString();
}

Result<std::string> DecodeResponse(std::string_view body) {
  ::ttrpc::Response msg;
  if (!msg.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
    return InternalError("ttrpc: malformed response");
  }
  if (msg.has_status() && msg.status().code() != 0) {
    int32_t code = msg.status().code();
    // A code outside google.rpc's range still means failure; keep its number.
    if (code < 0 || code > static_cast<int32_t>(Code::kUnauthenticated)) {
      return UnknownError("code " + std::to_string(code) + ": " + msg.status().message());
    }
    return Status(static_cast<Code>(code), msg.status().message());
  }
  return std::move(*msg.mutable_payload());
}

}  // namespace hull::ttrpc::internal
