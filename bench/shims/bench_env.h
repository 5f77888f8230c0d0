// BenchEnv: one private containerd (from the integration-test harness) with
// the busybox image, and the shim variants under test on it: hull driving
// runc, containerd's Go runc shim, hull driving crun and hull driving runsc. Everything the
// phases do to containerd goes through here, so every variant is run the
// same way. Single thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "tests/integration/harness/harness.h"

namespace hull::bench {

// The columns of the report, in order.
enum class Kind { kHull = 0, kGo = 1, kHullCrun = 2, kHullRunsc = 3 };
inline constexpr int kKinds = 4;

struct Variant {
  Kind kind;
  std::string name;     // "hull/runc", ...
  std::string runtime;  // containerd runtime name
  // ctr --runtime-config-path (hull's TOML naming the OCI runtime); "" for
  // none: hull then uses its default (runc) and the Go shim gets no options,
  // so hull/runc and Go/runc are driven by identical ctr command lines.
  std::string config_path;
  std::string binary;  // the shim executable containerd runs
};

struct BenchOptions {
  bool debug_log = false;  // keep the harness's debug log level
  // hull's servers run confined (docs/security.md), as by default: every
  // hull variant; false gives them [security] confine = false.
  bool confine = true;
};

class BenchEnv {
 public:
  static Result<std::unique_ptr<BenchEnv>> Create(const BenchOptions& options);

  itest::PrivateContainerd& containerd() { return *containerd_; }
  const std::vector<Variant>& variants() const { return variants_; }
  const Variant& variant(Kind kind) const { return variants_[static_cast<int>(kind)]; }
  std::string bundle(const std::string& id) const;
  std::string hull_binary() const { return variant(Kind::kHull).binary; }
  std::string go_binary() const { return variant(Kind::kGo).binary; }

  // A container id no earlier call returned: "<prefix>-<n>". Never reused,
  // so no run sees sockets, cgroups or runc state of an earlier one.
  std::string NewId(const std::string& prefix);

  itest::CommandResult Ctr(const std::vector<std::string>& args,
                           std::chrono::milliseconds timeout = std::chrono::seconds(120));
  // `ctr run --runtime ... <flags> busybox <id> <command...>`.
  itest::CommandResult Run(const Variant& v, const std::vector<std::string>& flags,
                           const std::string& id, const std::vector<std::string>& command);
  // Force-deletes the tasks and containers, then waits until no shim of this
  // instance is left.
  Status RemoveAll(const std::vector<std::string>& ids);
  // Live shim processes of this containerd, of the executable `binary`.
  std::vector<pid_t> Shims(const std::string& binary) const;
  Status WaitForNoShims(std::chrono::milliseconds timeout) const;

 private:
  BenchEnv() = default;

  std::unique_ptr<itest::PrivateContainerd> containerd_;
  std::vector<Variant> variants_;
  int next_id_ = 0;
};

// The variants in the order of round `round`: forward on even rounds and
// backward on odd ones (ABC CBA ABC ...), so slow drift of the machine
// cancels out between variants.
std::vector<const Variant*> RoundOrder(const std::vector<Variant>& variants, int round);

}  // namespace hull::bench
