// ServiceTable: the server's handlers by service and method name. Owned by
// the Server; connections look handlers up in it for each Request.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "base/status.h"
#include "ttrpc/call.h"

namespace hull::ttrpc::internal {

class ServiceTable {
 public:
  // Replaces any handler already registered under the same names.
  void Add(std::string service, std::string method, Handler handler);
  // The handler, or Unimplemented "service X" / "method Y" (Go's replies).
  // The pointer stays valid while the table lives (std::map nodes are stable).
  Result<const Handler*> Find(std::string_view service, std::string_view method) const;

 private:
  std::map<std::string, std::map<std::string, Handler, std::less<>>, std::less<>> services_;
};

}  // namespace hull::ttrpc::internal
