// Reader of perf.data files (PERFILE2): tracepoint samples in timestamp order, read in place
// from a mapping of the file. Header, attrs, ids and feature sections are validated against the
// file size at open; problems inside the data are counted in stats(), never fatal.
//
// CommOf() knows the tracing data's saved cmdlines at open, and the COMM records once ReadAll
// has run (they are met while reading). A file truncated or rewritten while mapped makes reads
// fault (SIGBUS): the reader must not be pointed at a file that is still being written.
//
// Info() keys (present when the file has them): hostname, os_release, perf_version, arch,
// nr_cpus_online, nr_cpus_available, cpu_desc, cpuid, total_mem_kb, cmdline, events, clockid,
// clock_res_ns, clock_ref_wall_ns, clock_ref_clock_ns, first_sample_ns, last_sample_ns,
// data_offset, data_size.
//
// ReadStats problem names: those of PerfProblemName() (perf_record_parser.h) plus
// "truncated_record" (a record runs past the data end; reading stops there),
// "bad_record_size" (a record header with size < 8; reading stops there),
// "read_error" (reading the file failed, or it shrank, before the data end; reading stops
// there and the record cut by it counts as a truncated_record),
// "out_of_order_beyond_window" (delivered although older than an already delivered record),
// "bad_feature_<name>" (a header feature whose contents do not parse; it is ignored),
// "bad_event_format" (a format text in the tracing data that does not parse),
// kProblemFileCut (the data section runs past the end of the file: read up to the end),
// "file_cut_after_data" (the data is whole, but feature sections after it are cut off: lost,
// which costs no event).
#ifndef IOTRACE_FORMATS_PERF_DATA_READER_H_
#define IOTRACE_FORMATS_PERF_DATA_READER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "iotrace/formats/sorted_run_merger.h"
#include "iotrace/formats/trace_reader.h"

namespace iotrace {

struct PerfReadOptions {
  MergeLimits merge;
  // The data section is read into a ring of this many bytes (FileRing), in steps of
  // `read_step_bytes`; what the merge holds beyond it is read again from the file (below).
  size_t read_ring_bytes = size_t{2} << 20;
  size_t read_step_bytes = size_t{128} << 10;
  // With read-ahead (set_read_ahead): the reading thread is told of room half a ring at a time
  // (FileRing), so the ring must hold that on top of what the merge keeps live.
  size_t read_ahead_ring_bytes = size_t{8} << 20;
  // A run whose cursor is further behind the scan than the ring keeps (MergeLimits::near_bytes)
  // reads its records again from the file, a block of this many bytes at a time (4 KiB to
  // 64 KiB): memory ~ runs with records pending x this (~2 x busy CPUs in a recording with round
  // marks). 0: 2 MiB / (3 x the file's CPUs), within 8 to 64 KiB, and 8 KiB from the block
  // that would take the pool past 2 MiB (more runs far at once: a file without round marks). 8
  // KiB at 256 CPUs: at 10^7 events the default two time ranges peak at 58 MiB, 70 with 16
  // KiB. Larger blocks at fewer CPUs: a pread costs ~2.5 us on this VM, and a 3 M-event file at
  // 16 CPUs took 52 k of them in 8 KiB blocks, 9.6 k in 64 KiB ones (0.32 -> 0.25 s).
  size_t far_block_bytes = 0;
  // With many runs read again at once in blocks of the smallest size (many CPUs), each also
  // reads its next block ahead, the empty ones filled together, many reads a system call
  // (io_uring where the kernel allows it); false: each run reads alone.
  bool batch_far_reads = true;
  // A file without two round marks within 64 MiB after its middle is cut for two time ranges
  // that both read from the start of the data (TraceTimeSpan::starts_anywhere) only where a
  // round interleaves at least this many CPUs' drains (estimated from the time a look spans):
  // each range scans every record, which pays only where the merge of many runs costs more (64
  // and 256 CPUs read faster so, 16 slower). 0: wherever the marks are too far apart.
  double min_interleave_from_start = 32;
  // How far after the middle the plan walks for two round marks, to cut where a round begins.
  uint64_t marks_look_bytes = uint64_t{64} << 20;
  // Two such ranges share one walk of the data where the whole data is one merge (at most
  // MergeLimits::round_lag round marks, or one more as the data's last record: nothing is final
  // before the scan has met every record): each range's thread walks half of it for both
  // (TraceReader::ShareRanges). False: each range scans every record.
  bool share_walk = true;
  // Only where the looks that chose reading from the start saw no more round boundaries than
  // the lag (each mark is found only by walking up to it, and a walk that finds one too many
  // was spent for nothing); false: wherever both ranges read from the start (tests of the
  // walk's own checks).
  bool share_walk_by_looks = true;
  // Tried at open when the file's event formats are lost (HEADER_TRACING_DATA cut off); null:
  // such a file is an error. Only used during the open.
  const FormatsFallback* formats_fallback = nullptr;
};

absl::StatusOr<std::unique_ptr<TraceReader>> OpenPerfData(const std::string& path);
absl::StatusOr<std::unique_ptr<TraceReader>> OpenPerfData(const std::string& path,
                                                          const PerfReadOptions& options);

}  // namespace iotrace

#endif  // IOTRACE_FORMATS_PERF_DATA_READER_H_
