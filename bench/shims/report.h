// Report: the figures bench_shims measured, one row each with a value per
// variant (hull/runc, Go/runc, hull/crun), the hull/Go ratio and the issue's
// target for it, printed as a Markdown table ready for docs/benchmarks.md.
#pragma once

#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "bench/shims/bench_env.h"

namespace hull::bench {

inline constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();

// What the issue asks of a figure.
struct Target {
  enum class Goal { kNone, kRatioAtMost, kRatioAtLeast, kHullEquals };
  Goal goal = Goal::kNone;
  double value = 0;

  static Target None() { return {}; }
  static Target RatioAtMost(double v) { return {Goal::kRatioAtMost, v}; }
  static Target RatioAtLeast(double v) { return {Goal::kRatioAtLeast, v}; }
  static Target HullEquals(double v) { return {Goal::kHullEquals, v}; }
};

// A row with nothing measured yet.
inline std::array<double, kKinds> NotMeasuredRow() {
  std::array<double, kKinds> row;
  row.fill(kNotMeasured);
  return row;
}

struct Figure {
  std::string section;  // rows of one section are printed together
  std::string label;
  std::array<double, kKinds> values = NotMeasuredRow();
  int decimals = 0;
  Target target;
  bool show_ratio = true;  // false where hull/Go means nothing

  double Ratio() const { return values[0] / values[1]; }
};

class Report {
 public:
  void Add(Figure figure) { figures_.push_back(std::move(figure)); }
  // Free text printed under the table (rounds, load, notes).
  void Note(std::string line) { notes_.push_back(std::move(line)); }
  std::string Markdown() const;

 private:
  std::vector<Figure> figures_;
  std::vector<std::string> notes_;
};

}  // namespace hull::bench
