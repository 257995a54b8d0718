// The command table of the iotrace binary: each subcommand is one function in
// src/cli/<name>_command.cc that turns its flags into an options struct and runs it.
#ifndef IOTRACE_CLI_CLI_H_
#define IOTRACE_CLI_CLI_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace iotrace {

// Exit codes shared by every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntime = 1;
inline constexpr int kExitUsage = 2;

// Prints "iotrace: error: MESSAGE" and, when the status carries one, "hint: HINT" to stderr.
// Returns kExitUsage for a usage error (IsUsageError: the status says so wherever it was made,
// base/status.h), else kExitRuntime.
int ReportError(const absl::Status& status);

}  // namespace iotrace

#endif  // IOTRACE_CLI_CLI_H_
