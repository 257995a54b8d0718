// Asking for a cache line ahead of its use, in a way the optimizer keeps. GCC 12 removed a
// loop of __builtin_prefetch calls whole, and the call to the function that held it, as code
// with no effect (the report's stage that asks for its histograms' counts, LatencyReportBuilder:
// no prefetch instruction was left in the binary). An asm statement marked volatile stays.
#ifndef IOTRACE_BASE_PREFETCH_H_
#define IOTRACE_BASE_PREFETCH_H_

namespace iotrace {

// The line holding `p`, into every level of the cache (`p` need not be dereferenceable: a
// prefetch never faults).
inline void Prefetch(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
  asm volatile("" : : "r"(p) : "memory");
#endif
}

}  // namespace iotrace

#endif  // IOTRACE_BASE_PREFETCH_H_
