// Netlink (NETLINK_ROUTE) in-process: a request builder (a fixed header such
// as ifinfomsg or tcmsg, attributes, nested attributes), a socket that sends
// one request and reads its acknowledgement or its dump, and an attribute
// walker for replies. Used by the vm backend on the host (the pod's network
// namespace) and by hull-agent in the guest, where fork+exec of `ip` costs
// too much. Blocking calls on a netlink socket: the kernel answers at once.
// Any thread; one socket per caller.
#pragma once

#include <linux/netlink.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/unique_fd.h"

namespace hull::netlink {

// One request: the nlmsghdr, then the family header, then attributes.
class Request {
 public:
  Request(uint16_t type, uint16_t flags);

  // Appends the family header (ifinfomsg, ifaddrmsg, rtmsg, tcmsg...).
  template <typename T>
  void Header(const T& header) {
    Append(&header, sizeof(header));
  }
  void Attr(uint16_t type, const void* data, size_t len);
  void AttrU32(uint16_t type, uint32_t value) { Attr(type, &value, sizeof(value)); }
  // With its terminating NUL, as the kernel expects names and kinds.
  void AttrString(uint16_t type, std::string_view value);
  // Opens a nested attribute; its length is set by EndNested.
  size_t BeginNested(uint16_t type);
  void EndNested(size_t offset);

  void AddFlags(uint16_t flags);
  uint16_t type() const;
  // The message with its length and `seq` set.
  std::span<const uint8_t> Finish(uint32_t seq);

 private:
  void Append(const void* data, size_t len);
  void Pad();

  std::vector<uint8_t> bytes_;
};

// Calls `each(type, payload)` for each attribute in `data` (the part of a
// message after its family header, or a nested attribute's payload).
void ForEachAttr(std::span<const uint8_t> data,
                 const std::function<void(uint16_t type, std::span<const uint8_t> payload)>& each);
// A u32 attribute's value; 0 when the payload is shorter.
uint32_t AttrU32(std::span<const uint8_t> payload);

// Copies the family header at the start of a message body; false when the
// body is too short.
template <typename T>
bool ReadHeader(std::span<const uint8_t> body, T* header) {
  if (body.size() < NLMSG_ALIGN(sizeof(T))) return false;
  std::memcpy(header, body.data(), sizeof(T));
  return true;
}
// The attributes after a family header of `header_size` bytes.
std::span<const uint8_t> AttrsAfter(std::span<const uint8_t> body, size_t header_size);

// "aa:bb:cc:dd:ee:ff"; "a.b.c.d" (empty unless 4 bytes).
std::string MacString(std::span<const uint8_t> bytes);
std::string Ipv4String(std::span<const uint8_t> bytes);

// A network device as RTM_NEWLINK describes it.
struct Link {
  int index = 0;
  std::string name;
  std::string mac;  // empty without a 6-byte hardware address
  uint32_t mtu = 0;
};
Link ParseLink(std::span<const uint8_t> body);
// RTM_NEWLINK on `ifindex`: MTU (when non-zero) and IFF_UP.
Request LinkUpRequest(int ifindex, uint32_t mtu);

class Socket {
 public:
  // A NETLINK_ROUTE socket in the calling thread's network namespace (it
  // stays bound to that namespace when the thread leaves it).
  static Result<Socket> Open();

  // Sends `request` with NLM_F_ACK and waits for the kernel's answer: OK, or
  // the kernel's errno as a Status naming `what`.
  Status Call(Request& request, std::string_view what);
  // Sends a dump request (NLM_F_DUMP is added) and calls `each` for every
  // message of the answer, up to NLMSG_DONE.
  Status Dump(
      Request& request, std::string_view what,
      const std::function<void(const nlmsghdr& header, std::span<const uint8_t> body)>& each);

 private:
  explicit Socket(UniqueFd fd) : fd_(std::move(fd)) {}
  Status Send(Request& request, std::string_view what);
  // Reads answers to the last request until `done` says so.
  Status Receive(std::string_view what,
                 const std::function<Result<bool>(const nlmsghdr& header)>& each);

  UniqueFd fd_;
  uint32_t seq_ = 0;
};

}  // namespace hull::netlink
