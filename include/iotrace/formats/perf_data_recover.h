// `iotrace recover` for perf.data: iotrace record's perf backend writes records to the file as
// it drains the rings, behind a header that says "no data, no features" until the end. A
// recording killed before it finished keeps every record written; iotrace's reader reads it as
// it is, but perf needs the header and the feature table. RecoverPerfData writes them from the
// block the writer kept before the data (perf_data.h, kRecoveryMagic), ending the data at its
// last whole record: `perf script` then reads the file. The block is marked recovered, so
// iotrace's reader still says the recording did not finish (the silent-drop counts that record
// writes at the end are missing: losses are not known).
#ifndef IOTRACE_FORMATS_PERF_DATA_RECOVER_H_
#define IOTRACE_FORMATS_PERF_DATA_RECOVER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "iotrace/base/bytes.h"

namespace iotrace {

struct PerfDataRecovery {
  bool was_complete = false;  // the header was final: nothing done
  uint64_t records = 0;       // whole records kept
  uint64_t data_bytes = 0;    // their bytes
  uint64_t bytes_cut = 0;     // a record cut by the kill, after the last whole one
};

// Error when `path` is not a perf.data of iotrace record (perf's own and pipe-mode files carry
// no recovery block) or cannot be written.
absl::StatusOr<PerfDataRecovery> RecoverPerfData(const std::string& path);

// True when the recovery block ending at `data_offset` of `file` (the whole file) is marked
// recovered: a reader's check, false when there is no such block.
bool PerfDataWasRecovered(ByteView file, uint64_t data_offset);

}  // namespace iotrace

#endif  // IOTRACE_FORMATS_PERF_DATA_RECOVER_H_
