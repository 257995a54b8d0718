// IOTRACE_ASAN: 1 in a build with AddressSanitizer, from either compiler (GCC defines
// __SANITIZE_ADDRESS__; clang says so through __has_feature), else 0. Memory the code carves
// itself (arenas, blocks from chunks) is taken one allocation at a time under it, so that an
// overrun lands in the sanitizer's redzone, not in the next object.
#ifndef IOTRACE_BASE_SANITIZERS_H_
#define IOTRACE_BASE_SANITIZERS_H_

#if defined(__SANITIZE_ADDRESS__)
#define IOTRACE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IOTRACE_ASAN 1
#endif
#endif
#ifndef IOTRACE_ASAN
#define IOTRACE_ASAN 0
#endif

#endif  // IOTRACE_BASE_SANITIZERS_H_
