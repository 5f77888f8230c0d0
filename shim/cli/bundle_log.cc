#include "shim/cli/bundle_log.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "base/unique_fd.h"

namespace hull::shim {

Logger OpenBundleLog(const std::string& bundle, bool debug) {
  std::string path = bundle + "/log";
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW));
  struct stat st;
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISFIFO(st.st_mode)) return Logger::Null();
  Logger logger = Logger::ToFd(std::move(fd), "hull");
  if (debug) logger.set_level(LogLevel::kDebug);
  return logger;
}

}  // namespace hull::shim
