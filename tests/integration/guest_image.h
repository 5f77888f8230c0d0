// tools/guest-image for the tests that boot the vm backend's guest: builds
// the image into <build>/guest-image (or finds it cached there, where the
// backend's defaults look) and reads its image.env. Shared by the agent's VM
// tests (agent_vm_guest.h) and vm_backend_test.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <optional>
#include <sstream>
#include <string>

#include "base/file_util.h"
#include "base/spawn.h"
#include "base/status.h"
#include "base/unique_fd.h"

namespace hull::itest {

// image.env's variables (HULL_GUEST_KERNEL, HULL_GUEST_INITRAMFS,
// HULL_GUEST_KERNEL_RELEASE, ...); nullopt and `why` when the image cannot
// be built here.
inline std::optional<std::map<std::string, std::string>> BuildGuestImage(std::string* why) {
  if (::geteuid() != 0) {
    *why = "needs root (QEMU's 9p and the image tool)";
    return std::nullopt;
  }
  if (::access("/usr/bin/qemu-system-x86_64", X_OK) != 0) {
    *why = "no /usr/bin/qemu-system-x86_64 (apt-get install qemu-system-x86)";
    return std::nullopt;
  }
  const std::string out = std::string(HULL_BINARY_DIR) + "/guest-image";
  const std::string log = std::string(HULL_BINARY_DIR) + "/guest-image.log";
  UniqueFd log_fd(::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  Result<pid_t> pid = Spawn(SpawnOptions{
      .argv = {std::string(HULL_SOURCE_DIR) + "/tools/guest-image", "--out", out, "--agent",
               HULL_AGENT_BINARY},
      .fds = {{1, log_fd.get()}, {2, log_fd.get()}},
      .parent_death_signal = SIGKILL,
  });
  if (!pid) {
    *why = "tools/guest-image: " + pid.error().ToString();
    return std::nullopt;
  }
  int status = 0;
  while (::waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *why = "tools/guest-image failed: " + ReadFile(log).value_or("(no log)");
    return std::nullopt;
  }
  Result<std::string> env = ReadFile(out + "/image.env");
  if (!env) {
    *why = "no image.env: " + env.error().ToString();
    return std::nullopt;
  }
  std::map<std::string, std::string> vars;
  std::istringstream in(*env);
  for (std::string line; std::getline(in, line);) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) vars[line.substr(0, eq)] = line.substr(eq + 1);
  }
  if (vars["HULL_GUEST_KERNEL_RELEASE"].empty()) {
    *why = "image.env names no kernel release";
    return std::nullopt;
  }
  return vars;
}

}  // namespace hull::itest
