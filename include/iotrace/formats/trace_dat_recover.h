// `iotrace recover` for trace.dat: a recording whose iotrace was killed (SIGKILL, the OOM
// killer, a crash) leaves its header, written first with no CPU data, and its pages in spool
// files beside it (FILE.cpuN, see trace_dat_writer.h). RecoverTraceDat assembles them into a
// complete trace.dat version 6, as the recording would have ended: `trace-cmd report` reads it.
// Every CPU's CPUSTAT says the recording did not finish and that its losses are unknown, so
// that iotrace's reader goes on marking the file unfinished. (trace-cmd leaves only its per-CPU
// files after a kill, and `trace-cmd restore` needs a header made again on the recording
// machine; here the header is already there.)
#ifndef IOTRACE_FORMATS_TRACE_DAT_RECOVER_H_
#define IOTRACE_FORMATS_TRACE_DAT_RECOVER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "iotrace/formats/trace_dat_writer.h"

namespace iotrace {

struct TraceDatRecovery {
  // The file was complete already (nothing done, except leftover spools removed).
  bool was_complete = false;
  int spools = 0;                // spool files found and assembled
  uint64_t spools_removed = 0;   // of a complete file: spools left by a kill after its end
  TraceDatWriteResult written;   // per CPU: pages stored, a trailing partial page cut
};

// Error when `path` is not a trace.dat of iotrace, is unfinished with no spool left, or cannot
// be written.
absl::StatusOr<TraceDatRecovery> RecoverTraceDat(const std::string& path);

}  // namespace iotrace

#endif  // IOTRACE_FORMATS_TRACE_DAT_RECOVER_H_
