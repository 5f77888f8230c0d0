// containerd 2.x for the integration tests: Debian ships only 1.6.20, so
// the tests bring a 2.x of their own (docs/testing.md, "containerd 2.x"):
// $HULL_CONTAINERD2_DIR (a directory with bin/containerd and bin/ctr), else
// ../shared/containerd-2/containerd-2.1.5-linux-amd64.tar.gz beside the
// repository, unpacked once into <build>/containerd-2.1.5. Blocking; the
// answer is cached for the process.
#pragma once

#include <string>

namespace hull::itest {

// The tarball, relative to the repository's parent directory.
inline constexpr const char* kContainerd2Tarball =
    "shared/containerd-2/containerd-2.1.5-linux-amd64.tar.gz";
inline constexpr const char* kContainerd2DirEnv = "HULL_CONTAINERD2_DIR";

// The directory holding bin/containerd and bin/ctr of a containerd 2.x, or
// "" with one line in *why_not saying why there is none.
std::string Containerd2Dir(std::string* why_not);

// tools/test --full (HULL_TEST_FULL=1): every runtime on every containerd.
// Without it, containerd 2.x runs hull over runc for every test and over
// crun and runsc for a few (docs/testing.md).
bool FullMatrix();

}  // namespace hull::itest
