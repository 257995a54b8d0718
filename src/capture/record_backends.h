// The backends' side of `iotrace record`, one function each, as RunRecord calls them. Private to
// the capture stage.
//   record_perf.cc: opens the perf events and a perf.data writer, runs the loop over them, and
//   keeps the books of what perf dropped silently (written into the file as LOST_SAMPLES).
//   record_ftrace.cc: a private tracefs instance drained into a trace.dat, run by the loop, and
//   its per-CPU losses in the summary.
#ifndef IOTRACE_CAPTURE_RECORD_BACKENDS_H_
#define IOTRACE_CAPTURE_RECORD_BACKENDS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "iotrace/capture/record.h"
#include "iotrace/capture/record_control.h"
#include "iotrace/sys/tracefs.h"
#include "iotrace/base/signal_guard.h"

namespace iotrace {

// Records `events` (filtered by `filter`) into summary->output, runs the command if there is
// one, and fills `summary`. Return what iotrace exits with, as RunRecord does.
absl::StatusOr<int> RecordWithPerf(const RecordOptions& opt, const std::string& tracefs,
                                   const std::vector<TraceEventInfo>& events,
                                   const std::string& filter, SignalGuard& signals,
                                   ControlChannel* control, RecordSummary* summary);
absl::StatusOr<int> RecordWithFtrace(const RecordOptions& opt, const std::string& tracefs,
                                     const std::vector<TraceEventInfo>& events,
                                     const std::string& filter, SignalGuard& signals,
                                     ControlChannel* control, RecordSummary* summary);

}  // namespace iotrace

#endif  // IOTRACE_CAPTURE_RECORD_BACKENDS_H_
