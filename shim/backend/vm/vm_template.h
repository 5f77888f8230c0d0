// The template cache of the vm backend (docs/vm.md, "Template clones"): one
// directory per pod shape under a tmpfs root, holding a template VM's RAM
// (`ram`, the file its clones map copy-on-write), its saved device state
// (`state`) and `template.json` (the shape's key, the state's hash, the MAC
// and TSC rate the template booted with). A template is built in
// `<hash>.build`, locked with flock on `<hash>.lock` so that concurrent
// shims of one shape never build it twice, and renamed into place when
// complete. The cache is bounded: the oldest used templates go first.
// Plain blocking file operations, all small (a few stats, the hash of a
// state file of a few hundred KiB); loop thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "base/unique_fd.h"
#include "shim/backend/vm/qemu_command.h"

namespace hull::shim::vm {

// Where templates live: /run is tmpfs on Debian (and cleared at boot).
inline constexpr std::string_view kTemplateRoot = "/run/hull/vm-templates";

// Everything that must be identical between a template and its clones:
// the QEMU binary, kernel and initramfs (path, size, mtime: a changed file
// is a new shape), the machine arguments, vCPUs, memory and whether it has
// a NIC. Pods are never rounded to another size (docs/vm.md).
std::string TemplateKey(const GuestAssets& assets, const VmOptions& options, uint32_t vcpus,
                        uint64_t memory_mib, bool nic);

// A ready template.
struct Template {
  std::string dir;
  std::string ram;
  std::string state;
  std::string tsc_khz;  // the template's kernel command line's (a clone passes the same)
  std::string mac;      // the NIC's MAC in the template (empty: no NIC)
};

// A template being built: its files go in `dir`; `lock` is held until
// Commit or destruction (a crashed builder's lock goes with its process).
struct TemplateBuild {
  std::string key;
  std::string dir;
  UniqueFd lock;
  std::string ram() const { return dir + "/ram"; }
  std::string state() const { return dir + "/state"; }
  std::string qmp_socket() const { return dir + "/qmp.sock"; }
  std::string agent_socket() const { return dir + "/agent.sock"; }
  std::string console_log() const { return dir + "/console.log"; }
  std::string share_dir() const { return dir + "/share"; }
};

class TemplateCache {
 public:
  // `limit_mib`: the bound on the RAM and state all templates hold.
  TemplateCache(std::string root, uint64_t limit_mib);

  // The ready template of `key`, its use recorded (LRU). nullopt: none.
  // FailedPrecondition when its files are missing, of the wrong size or their hash
  // does not match: the template is removed, and the caller builds anew.
  Result<std::optional<Template>> Find(const std::string& key);

  // A fresh build directory for `key`, locked; nullopt when another shim
  // builds it now. FailedPrecondition when the root is not on tmpfs.
  Result<std::optional<TemplateBuild>> Begin(const std::string& key);

  // Records the built template (its state file must be complete), renames
  // it into place and evicts the oldest templates past the bound (this one
  // too, if it alone is past it: its clones keep their mapping).
  Result<Template> Commit(TemplateBuild build, const std::string& tsc_khz, const std::string& mac);

  // Removes `key`'s template (a clone of it failed).
  void Remove(const std::string& key);

  const std::string& root() const { return root_; }

 private:
  std::string DirOf(const std::string& key) const;
  void Evict();

  std::string root_;
  uint64_t limit_bytes_;
};

}  // namespace hull::shim::vm
