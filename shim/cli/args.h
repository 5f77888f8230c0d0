// ServerArgs: what serve mode (no action word on the command line) hands to
// hull::shim::RunServer. Built by main from the command line, the environment
// and the working directory; the server owns everything from there.
#pragma once

#include <string>

namespace hull::shim {

struct ServerArgs {
  std::string ns;              // -namespace (or $NAMESPACE)
  std::string id;              // -id: the task that started this shim
  std::string address;         // -address: containerd's gRPC socket (or $GRPC_ADDRESS)
  std::string publish_binary;  // -publish-binary; unused by ttrpc publishing
  std::string ttrpc_address;   // $TTRPC_ADDRESS, else "<address>.ttrpc": events go here
  std::string bundle;          // the working directory `start` gave the server
  bool debug = false;          // -debug
  int listen_fd = 3;           // the listening ttrpc socket `start` passed
};

}  // namespace hull::shim
