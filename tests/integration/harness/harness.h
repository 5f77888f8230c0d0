// The integration-test harness in one include: host commands (command.h),
// host facts and leak checks (host.h) and a private containerd
// (containerd.h). See docs/testing.md.
#pragma once

#include "tests/integration/harness/command.h"
#include "tests/integration/harness/containerd.h"
#include "tests/integration/harness/host.h"
