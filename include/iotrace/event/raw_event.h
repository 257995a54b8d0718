// One record of a tracepoint (or probe) as the readers and the live buffers hand it on: its
// time, CPU, task and raw payload, decoded in place by the event stage (block_event.h).
#ifndef IOTRACE_EVENT_RAW_EVENT_H_
#define IOTRACE_EVENT_RAW_EVENT_H_

#include <cstdint>

#include "iotrace/base/bytes.h"

namespace iotrace {

// One tracepoint (or probe) record. `payload` points into the reader's mapping and is valid
// only during the OnEvent call; it starts with the 8-byte common header (common_type ...).
struct RawEvent {
  uint64_t ts = 0;       // nanoseconds in the file's trace clock
  uint32_t cpu = 0;
  int32_t pid = -1;      // process (tgid) when the file says; else common_pid
  int32_t tid = -1;      // thread; common_pid for ftrace
  uint16_t type = 0;     // common_type: the event format id
  ByteView payload;
};

}  // namespace iotrace

#endif  // IOTRACE_EVENT_RAW_EVENT_H_
