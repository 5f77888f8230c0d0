// SHA-256 (FIPS 180-4), for the shim socket name containerd and `ctr shim`
// derive from the pod id. Small and self-contained so that the shim does not
// link a crypto library for one hash of a short string.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace hull::shim {

std::array<uint8_t, 32> Sha256(std::string_view data);

// Lower-case hex, as Go's fmt "%x" prints a digest.
std::string Sha256Hex(std::string_view data);

}  // namespace hull::shim
