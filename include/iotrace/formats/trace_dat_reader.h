// Reader of trace-cmd trace.dat files: ftrace ring-buffer pages read into a small ring per CPU
// (FileRing) and walked there, the per-CPU streams merged in timestamp order. With read-ahead,
// each CPU's ring is filled by a thread of its own (see TraceDatReaderOptions).
//
// Versions: 6 (what `iotrace record --backend ftrace` and `trace-cmd record --file-version 6`
// write) and 7, uncompressed (`--compression none`) or zstd/zlib-compressed (trace-cmd 3.x's
// default): compressed sections are inflated in memory, compressed per-CPU data into an unlinked
// temporary file that is then read like an uncompressed one (trace_dat_inflate.h);
// another algorithm is refused with the command that converts the file. Every buffer instance in the file
// (top and `-B NAME` ones) is read; RawEvent.cpu is the CPU, pid = tid = common_pid.
//
// Losses, all delivered through EventSink::OnLoss and never overlapping (their counts can be
// summed):
//  - a page whose commit has RB_MISSED_EVENTS: kFtraceDropped with the count the kernel stored
//    (count 0 and the problem "ftrace_missed_events_uncounted" when it had no room), delivered
//    in time order just before the page's first event;
//  - CPUSTAT (per_cpu stats at the end of the recording): kFtraceOverrun with overrun + commit
//    overrun minus what the pages of that CPU already reported, and kFtraceDropped with
//    "dropped events"; delivered after the last event, ts 0.
// Problems (counted in stats(), the page skipped, reading goes on): ftrace_short_page,
// ftrace_commit_past_page_end, ftrace_event_past_page_end, ftrace_bad_event_length,
// ftrace_time_backwards (a page that starts before the previous one ended, or an absolute time
// stamp going back), ftrace_short_record, ftrace_partial_page (CPU data not a page multiple),
// trace_dat_cpu_data_truncated (offset + size past the end of the file),
// trace_dat_cpu_data_overlap (CPU data overlapping another CPU's: that stream is not read),
// trace_dat_pages_not_written (pages iotrace's writer states it could not store),
// event_format_unparsed, read_error (reading a CPU's pages failed, or the file shrank since it
// was opened: that CPU's stream ends there).
// Metadata is read once: an options chain or a flyrecord CPU table overlapping one already read
// (a loop, shared tables) is an error, so that no file costs more than its size to open.
#ifndef IOTRACE_FORMATS_TRACE_DAT_READER_H_
#define IOTRACE_FORMATS_TRACE_DAT_READER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "iotrace/formats/trace_reader.h"

namespace iotrace {

struct TraceDatReaderOptions {
  // With read-ahead (TraceReader::set_read_ahead), each CPU stream with more data than half this
  // is read through a ring this large (FileRing::CapacityFor: a power of two), filled by a
  // thread of its own (FileRing::StartReadAhead), when there are at most 4 such streams and their
  // rings fit in the readers' ring budget (16 MiB); the other streams, and all of them without
  // read-ahead, share what is left of the budget, at most 4 MiB, in rings of at most 256 KiB
  // read in the caller's thread.
  size_t read_ahead_ring_bytes = size_t{4} << 20;
  // From 8 rings read in the caller's thread, they refill together, many reads a system call
  // (FileRingGroup, io_uring where the kernel allows it); false: each reads alone.
  bool batch_reads = true;
};

absl::StatusOr<std::unique_ptr<TraceReader>> OpenTraceDat(const std::string& path,
                                                          TraceDatReaderOptions options = {});

}  // namespace iotrace

#endif  // IOTRACE_FORMATS_TRACE_DAT_READER_H_
