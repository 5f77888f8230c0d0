#include "ttrpc/service_table_internal.h"

namespace hull::ttrpc::internal {

void ServiceTable::Add(std::string service, std::string method, Handler handler) {
  services_[std::move(service)][std::move(method)] = std::move(handler);
}

Result<const Handler*> ServiceTable::Find(std::string_view service, std::string_view method) const {
  auto s = services_.find(service);
  if (s == services_.end()) return UnimplementedError("service " + std::string(service));
  auto m = s->second.find(method);
  if (m == s->second.end()) return UnimplementedError("method " + std::string(method));
  return &m->second;
}

}  // namespace hull::ttrpc::internal
