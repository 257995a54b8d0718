// The ftrace backend's side of `iotrace record`: a private tracefs instance drained into a
// trace.dat, run by the loop, and its per-CPU losses in the summary. Private to the capture stage.
#ifndef IOTRACE_CAPTURE_RECORD_FTRACE_H_
#define IOTRACE_CAPTURE_RECORD_FTRACE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "iotrace/capture/record.h"
#include "iotrace/capture/record_control.h"
#include "iotrace/sys/tracefs.h"
#include "record_signals.h"

namespace iotrace {

// Records `events` (filtered by `filter`) into summary->output, runs the command if there is
// one, and fills `summary`. Returns what iotrace exits with, as RunRecord does.
absl::StatusOr<int> RecordWithFtrace(const RecordOptions& opt, const std::string& tracefs,
                                     const std::vector<TraceEventInfo>& events,
                                     const std::string& filter, SignalGuard& signals,
                                     ControlChannel* control, RecordSummary* summary);

}  // namespace iotrace

#endif  // IOTRACE_CAPTURE_RECORD_FTRACE_H_
