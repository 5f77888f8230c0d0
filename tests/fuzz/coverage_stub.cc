// The coverage hooks GCC's -fsanitize-coverage=trace-pc,trace-cmp calls and
// the sanitizer runtime does not define, as weak no-ops, for the executables
// of an instrumented build that are not fuzz targets (unit tests, the shim,
// tools). A fuzz target's own coverage_bridge.cc defines them for real and
// takes precedence.
extern "C" __attribute__((weak)) void __sanitizer_cov_trace_pc() {}
extern "C" __attribute__((weak)) void __sanitizer_cov_trace_cmpf(float, float) {}
extern "C" __attribute__((weak)) void __sanitizer_cov_trace_cmpd(double, double) {}
