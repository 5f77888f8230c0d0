// The shim's socket address, derived exactly as containerd's shim library
// does, so that `start` for every container of a pod lands on one server and
// `ctr shim` can find it: unix://<socket dir>/<hex sha256(filepath.Join(
// <containerd address>, <namespace>, <grouping id>))>. Pure functions.
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <string_view>

#include "base/path.h"
#include "base/status.h"

namespace hull::shim {

// The id a container's shim is grouped by: the first of the annotations
// io.containerd.runc.v2.group and io.kubernetes.cri.sandbox-id, else `id`.
std::string GroupingId(const std::map<std::string, std::string>& annotations,
                       const std::string& id);

// "unix://<socket_dir>/<hex sha256(JoinPath({containerd_address, ns, group}))>".
std::string SocketAddress(std::string_view socket_dir, std::string_view containerd_address,
                          std::string_view ns, std::string_view group);

// `name` has the shape of SocketAddress's last component: 64 lowercase hex
// digits.
bool IsShimSocketName(std::string_view name);

// The filesystem path of a "unix://" address. Other forms (containerd would
// read a bare path as an abstract socket) are InvalidArgument.
Result<std::string> SocketPath(std::string_view address);

}  // namespace hull::shim
