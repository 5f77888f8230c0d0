#include "base/logging.h"

#include <fcntl.h>
#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/null_sink.h>
#include <unistd.h>

namespace hull {
namespace {

// Writes whole formatted lines to a descriptor it owns. Single-threaded, so no
// mutex. A failed write is dropped: logging must never stop the shim.
class FdSink : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 public:
  explicit FdSink(UniqueFd fd) : fd_(std::move(fd)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    const char* p = formatted.data();
    size_t left = formatted.size();
    while (left > 0) {
      ssize_t n = ::write(fd_.get(), p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  void flush_() override {}

 private:
  UniqueFd fd_;
};

// logrus-style text, which is what containerd users expect in its log.
constexpr char kPattern[] =
    "time=\"%Y-%m-%dT%H:%M:%S.%fZ\" level=%l msg=\"%v\" runtime=io.containerd.hull.v2";

std::shared_ptr<spdlog::logger> MakeLogger(std::string_view name, spdlog::sink_ptr sink) {
  auto logger = std::make_shared<spdlog::logger>(std::string(name), std::move(sink));
  logger->set_pattern(kPattern, spdlog::pattern_time_type::utc);
  logger->set_level(spdlog::level::info);
  logger->flush_on(spdlog::level::trace);
  return logger;
}

}  // namespace

Logger Logger::Null() {
  return Logger(MakeLogger("null", std::make_shared<spdlog::sinks::null_sink_st>()));
}

Logger Logger::Stderr(std::string_view name) {
  UniqueFd fd(::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 0));
  return ToFd(std::move(fd), name);
}

Logger Logger::ToFd(UniqueFd fd, std::string_view name) {
  return Logger(MakeLogger(name, std::make_shared<FdSink>(std::move(fd))));
}

void Logger::set_level(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: logger_->set_level(spdlog::level::debug); break;
    case LogLevel::kInfo: logger_->set_level(spdlog::level::info); break;
    case LogLevel::kWarn: logger_->set_level(spdlog::level::warn); break;
    case LogLevel::kError: logger_->set_level(spdlog::level::err); break;
  }
}

}  // namespace hull
