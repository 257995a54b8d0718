// The command table of the iotrace binary: each subcommand is one function in
// src/cli/<name>_command.cc that turns its flags into an options struct and runs it.
#ifndef IOTRACE_CLI_CLI_H_
#define IOTRACE_CLI_CLI_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "iotrace/capture/record.h"
#include "iotrace/cli/flags.h"

namespace iotrace {

// Exit codes shared by every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntime = 1;
inline constexpr int kExitUsage = 2;

// Prints "iotrace: error: MESSAGE" and, when the status carries one, "hint: HINT" to stderr.
// Returns kExitUsage for a usage error (IsUsageError: the status says so wherever it was made,
// base/status.h), else kExitRuntime.
int ReportError(const absl::Status& status);

// The flags `record` and `live` share, each with the same name, text and checks (capture_flags.cc):
// --dev (repeatable, filtered in the kernel), -b/--backend, -m/--mmap-pages and --buffer-kb,
// --tracefs.
void AddDevFlag(FlagParser& flags, std::vector<std::string>* devs);
void AddBackendFlag(FlagParser& flags, Backend* backend);
void AddBufferFlags(FlagParser& flags, uint32_t* mmap_pages, uint32_t* buffer_kb);
void AddTracefsFlag(FlagParser& flags, std::string* tracefs_dir);

// Before record, live and doctor set up tracing: removes what killed iotraces left in tracefs
// (sys/stale_tracefs.h) and says so on stderr, one line each. Quiet when there is no tracefs
// (the command reports that itself) or nothing stale.
void RemoveStaleTracefsLeftovers(const std::string& tracefs_dir);

}  // namespace iotrace

#endif  // IOTRACE_CLI_CLI_H_
