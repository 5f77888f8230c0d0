// The protobuf bodies of Request and Response frames (package `ttrpc` in
// proto/ttrpc/request.proto), translated to and from hull's types. Shared by
// the server and the client; pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "ttrpc/metadata.h"

namespace hull::ttrpc::internal {

struct RequestEnvelope {
  std::string service;
  std::string method;
  std::string payload;
  int64_t timeout_nano = 0;  // 0: no deadline; negative: already expired
  Metadata metadata;
};

std::string EncodeRequest(RequestEnvelope request);
// InvalidArgument "unmarshal request error: ..." when `body` is not a Request.
Result<RequestEnvelope> DecodeRequest(std::string_view body);

// A Response body. OK: payload only, no status field, so an empty OK reply is
// a zero-length body (what Go sends). Not OK: the status only.
std::string EncodeResponse(const Status& status, std::string payload);
// The payload, or the Status the server sent. Absent status and code 0 both
// mean OK; a zero-length body is an OK empty reply.
Result<std::string> DecodeResponse(std::string_view body);

}  // namespace hull::ttrpc::internal
