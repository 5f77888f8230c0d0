// Logger: hull's log, over spdlog, with the sink chosen once at start-up
// (the bundle's `log` FIFO for the shim server, stderr for tools, nothing for
// `start`/`delete`, which must keep stderr quiet). main builds one Logger and
// passes it down; there is no global logger. Libraries return errors rather
// than log them; the layer that decides what to do with an error logs it.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "base/unique_fd.h"

namespace hull {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

class Logger {
 public:
  // Discards everything.
  static Logger Null();
  // Writes to stderr.
  static Logger Stderr(std::string_view name = "hull");
  // Writes to `fd` (a FIFO or file the logger now owns). Writes that fail
  // (EPIPE while containerd is away, EAGAIN on a full FIFO) are dropped.
  static Logger ToFd(UniqueFd fd, std::string_view name = "hull");

  void set_level(LogLevel level);

  template <typename... Args>
  void Debug(spdlog::format_string_t<Args...> fmt, Args&&... args) const {
    logger_->debug(fmt, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void Info(spdlog::format_string_t<Args...> fmt, Args&&... args) const {
    logger_->info(fmt, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void Warn(spdlog::format_string_t<Args...> fmt, Args&&... args) const {
    logger_->warn(fmt, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void Error(spdlog::format_string_t<Args...> fmt, Args&&... args) const {
    logger_->error(fmt, std::forward<Args>(args)...);
  }

  void Flush() const { logger_->flush(); }

 private:
  explicit Logger(std::shared_ptr<spdlog::logger> logger) : logger_(std::move(logger)) {}
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace hull
