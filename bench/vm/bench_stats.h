// What the vm bench programs (bench_vm, bench_cri_pod) share: one figure's
// samples printed as "median (min-max)", and the load average as
// /proc/loadavg gives it.
#pragma once

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace hull::bench {

struct Stats {
  std::vector<double> samples;
  std::string Cell() const {
    if (samples.empty()) return "—";
    std::vector<double> s = samples;
    std::sort(s.begin(), s.end());
    char buf[96];
    std::snprintf(buf, sizeof(buf), "%.0f (%.0f-%.0f)", s[s.size() / 2], s.front(), s.back());
    return buf;
  }
};

// The 1, 5 and 15 minute load averages, "a b c".
inline std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

}  // namespace hull::bench
