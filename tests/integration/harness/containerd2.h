// containerd 2.x for the integration tests: Debian ships only 1.6.20, so
// the tests bring a 2.x of their own (docs/testing.md, "containerd 2.x"):
// $HULL_CONTAINERD2_DIR (a directory with bin/containerd and bin/ctr), else
// the tarball of the version $HULL_CONTAINERD2_VERSION names beside the
// repository: 2.3.4 (../shared/containerd-2.3/, the default) or 2.1.5
// (../shared/containerd-2/, tools/test --full runs the 2.x tests again on
// it), unpacked once into <build>/containerd-<version>. Blocking; the answer
// is cached for the process.
#pragma once

#include <string>

namespace hull::itest {

// The tarballs, relative to the repository's parent directory.
inline constexpr const char* kContainerd23Tarball =
    "shared/containerd-2.3/containerd-2.3.4-linux-amd64.tar.gz";
inline constexpr const char* kContainerd21Tarball =
    "shared/containerd-2/containerd-2.1.5-linux-amd64.tar.gz";
inline constexpr const char* kContainerd2DirEnv = "HULL_CONTAINERD2_DIR";
inline constexpr const char* kContainerd2VersionEnv = "HULL_CONTAINERD2_VERSION";

// The 2.x the tests run: "2.3.4" unless $HULL_CONTAINERD2_VERSION says
// "2.1.5" (for a $HULL_CONTAINERD2_DIR: what the variable says, or "2.x").
std::string Containerd2Version();

// The directory holding bin/containerd and bin/ctr of a containerd 2.x, or
// "" with one line in *why_not saying why there is none.
std::string Containerd2Dir(std::string* why_not);

// tools/test --full (HULL_TEST_FULL=1): every runtime on every containerd.
// Without it, containerd 2.x runs hull over runc for every test and over
// crun and runsc for a few (docs/testing.md).
bool FullMatrix();

}  // namespace hull::itest
