#include "bench/shims/report.h"

#include <cstdio>

namespace hull::bench {

namespace {

std::string Format(double v, int decimals) {
  if (std::isnan(v)) return "–";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  // Thousands separators for the integer part, as the ttrpc section does.
  const std::string s = buf;
  size_t end = s.find('.');
  if (end == std::string::npos) end = s.size();
  size_t begin = s[0] == '-' ? 1 : 0;
  std::string out = s.substr(0, begin);
  for (size_t i = begin; i < end; ++i) {
    if (i > begin && (end - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out + s.substr(end);
}

std::string TargetText(const Figure& f) {
  switch (f.target.goal) {
    case Target::Goal::kNone: return "";
    case Target::Goal::kRatioAtMost: return "≤ " + Format(f.target.value, 2);
    case Target::Goal::kRatioAtLeast: return "≥ " + Format(f.target.value, 0);
    case Target::Goal::kHullEquals: return "hull = " + Format(f.target.value, 0);
  }
  return "";
}

std::string Verdict(const Figure& f) {
  double ratio = f.Ratio();
  bool met = false;
  switch (f.target.goal) {
    case Target::Goal::kNone: return "";
    case Target::Goal::kRatioAtMost:
      if (std::isnan(ratio)) return "";
      met = ratio <= f.target.value;
      break;
    case Target::Goal::kRatioAtLeast:
      if (std::isnan(ratio)) return "";
      met = ratio >= f.target.value;
      break;
    case Target::Goal::kHullEquals:
      if (std::isnan(f.values[0])) return "";
      met = f.values[0] == f.target.value;
      break;
  }
  return met ? "met" : "**missed**";
}

}  // namespace

std::string Report::Markdown() const {
  std::string out;
  std::string section;
  for (const Figure& f : figures_) {
    if (f.section != section) {
      section = f.section;
      out += "\n" + section + "\n\n";
      out += "| figure | hull/runc | Go/runc | hull/Go | hull/crun | hull/runsc | target | |\n";
      out += "|---|---:|---:|---:|---:|---:|---|---|\n";
    }
    double ratio = f.show_ratio ? f.Ratio() : kNotMeasured;
    out += "| " + f.label + " | " + Format(f.values[0], f.decimals) + " | " +
           Format(f.values[1], f.decimals) + " | " +
           (std::isnan(ratio) || std::isinf(ratio) ? "–" : Format(ratio, 2)) + " | " +
           Format(f.values[2], f.decimals) + " | " + Format(f.values[3], f.decimals) + " | " +
           TargetText(f) + " | " + Verdict(f) + " |\n";
  }
  if (!notes_.empty()) out += "\n";
  for (const std::string& n : notes_) out += n + "\n";
  return out;
}

}  // namespace hull::bench
