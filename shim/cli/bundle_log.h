// The logger for the short-lived actions (start, delete, and serve mode's
// command-line warnings): the bundle's `log` FIFO when containerd is reading
// it, else nothing. Never stderr: containerd reads start's stderr together
// with its stdout, and treats delete's stderr as warnings.
#pragma once

#include <string>

#include "base/logging.h"

namespace hull::shim {

// Opens <bundle>/log for writing without blocking. A missing file, a file
// that is not a FIFO, or a FIFO nobody reads (ENXIO) gives Logger::Null().
Logger OpenBundleLog(const std::string& bundle, bool debug);

}  // namespace hull::shim
