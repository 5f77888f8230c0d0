// The Backend interface's default answers. Kept apart from make_backend.cc:
// the Backend vtable is emitted with these (its first out-of-line virtuals),
// so hull-agent's static link, which uses OciCliBackend alone, does not pull
// in MakeBackend and with it the vm backend.
#include "runtime/backend.h"

namespace hull::runtime {

// Only a backend whose RunsSandboxProcess() is true is asked these; the
// answer is a programming error's, not containerd's.
void Backend::StartSandbox(std::function<void(int)>, std::function<void(Result<pid_t>)> done) {
  done(UnimplementedError(name() + " runs no sandbox process of its own"));
}

void Backend::StopSandbox(Done done) {
  done(UnimplementedError(name() + " runs no sandbox process of its own"));
}

}  // namespace hull::runtime
