// What `iotrace record` tells the user around a recording, besides the end-of-run table
// (FormatRecordSummary, capture/record.h): the backend it records with, and a full disk.
// Private to the capture stage.
#ifndef IOTRACE_CAPTURE_RECORD_SUMMARY_H_
#define IOTRACE_CAPTURE_RECORD_SUMMARY_H_

#include "absl/status/status.h"
#include "iotrace/capture/record.h"

namespace iotrace {

absl::Status DiskFullError(const RecordSummary& s);

// Said once everything is set up, right before the events are enabled.
void AnnounceBackend(const RecordSummary& s);

}  // namespace iotrace

#endif  // IOTRACE_CAPTURE_RECORD_SUMMARY_H_
