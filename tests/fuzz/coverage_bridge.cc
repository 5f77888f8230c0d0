// Coverage for libFuzzer from GCC-instrumented code. hull needs C++23's
// std::expected, which Debian's clang 14 cannot compile, so the fuzz build
// uses GCC with -fsanitize-coverage=trace-pc,trace-cmp and links clang's
// libFuzzer. libFuzzer 14 takes the comparisons (trace-cmp) as they are but
// no longer accepts trace-pc; this maps each traced PC transition (an edge,
// hashed AFL-style) onto a table of 8-bit counters that libFuzzer reads as
// coverage. Linked with --allow-multiple-definition, ahead of libFuzzer,
// whose own __sanitizer_cov_trace_pc only aborts.
#include <cstddef>
#include <cstdint>

extern "C" void __sanitizer_cov_8bit_counters_init(uint8_t* start, uint8_t* stop);

namespace {

constexpr size_t kCounters = size_t{1} << 18;
alignas(64) uint8_t counters[kCounters];
uintptr_t previous = 0;

struct Register {
  Register() { __sanitizer_cov_8bit_counters_init(counters, counters + kCounters); }
} register_counters;

}  // namespace

extern "C" __attribute__((no_sanitize("address", "undefined"))) void __sanitizer_cov_trace_pc() {
  auto pc = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  uintptr_t current = (pc >> 4) ^ (pc << 8);
  ++counters[(current ^ previous) % kCounters];
  previous = current >> 1;
}

// GCC's trace-cmp also traces floating-point comparisons, which libFuzzer
// has no hooks for; they carry nothing it could use.
extern "C" void __sanitizer_cov_trace_cmpf(float, float) {}
extern "C" void __sanitizer_cov_trace_cmpd(double, double) {}
