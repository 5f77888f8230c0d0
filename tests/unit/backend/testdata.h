// The backend tests' captured runtime output (tests/unit/backend/testdata),
// named by file. The build defines HULL_BACKEND_TESTDATA.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace hull::runtime::oci_cli::testing {

// The file's contents; empty if it cannot be read.
inline std::string ReadTestdata(const std::string& name) {
  std::ifstream in(std::string(HULL_BACKEND_TESTDATA) + "/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace hull::runtime::oci_cli::testing
