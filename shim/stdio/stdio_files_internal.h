// Opening what containerd names for stdio: the stdin FIFO (and the writer
// that holds it open), output FIFOs or files, and file:// log files. Every
// descriptor is O_CLOEXEC and returned in a UniqueFd; errors name the path.
// Paths come from containerd (never from the container), so plain open(2);
// a confined server, which sees the host read-only (docs/security.md), has
// its spawner open files to write (spawner_files.h).
#pragma once

#include <string>

#include "base/spawner.h"
#include "base/unique_fd.h"

namespace hull::shim::stdio {

struct StdinFifo {
  UniqueFd read;    // O_RDONLY|O_NONBLOCK: what the shim copies from
  UniqueFd holder;  // O_WRONLY: keeps a writer so a client disconnect is no EOF
};

// Opens the stdin FIFO for reading and holds it open for writing. It must be
// a FIFO (or another pollable file): a regular file cannot be watched.
Result<StdinFifo> OpenStdinFifo(const std::string& path);

// An output stream in FIFO mode. A FIFO is opened O_RDWR|O_NONBLOCK: the
// shim is then a reader itself, so opening never waits for a client and
// writes never fail with EPIPE while none is attached. Anything else (a
// file the client created) is opened O_WRONLY|O_APPEND and must exist.
// A regular file is opened by `spawner` when there is one.
Result<UniqueFd> OpenOutputPath(const std::string& path, SpawnerClient* spawner);

// file:// mode: creates missing parent directories (0755) and opens `path`
// O_WRONLY|O_CREAT|O_APPEND (0644), by `spawner` when there is one.
Result<UniqueFd> OpenLogFile(const std::string& path, SpawnerClient* spawner = nullptr);

// /dev/null for writing, O_NONBLOCK like every other sink.
Result<UniqueFd> OpenDevNull();

}  // namespace hull::shim::stdio
