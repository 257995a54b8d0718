// Status helpers shared by every module: errno-carrying errors and early-return macros
// (this Abseil build has no status macros of its own).
#ifndef IOTRACE_BASE_STATUS_H_
#define IOTRACE_BASE_STATUS_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace iotrace {

// "ACTION OBJECT: strerror (errno N)", with a code that fits the errno (EACCES ->
// PermissionDenied, ENOENT -> NotFound, ENOSPC -> ResourceExhausted, ...).
absl::Status ErrnoError(int err, std::string_view action, std::string_view object);

// A message plus an optional hint that the CLI prints as "hint: ..." on its own line.
// The hint rides in the status payload so it survives being returned up the stack.
absl::Status WithHint(absl::Status status, std::string_view hint);
std::string HintOf(const absl::Status& status);

// An error in what the user asked for (bad option value, unknown event, command not found):
// the CLI exits with status 2 for these, 1 for everything else.
absl::Status UsageError(std::string_view message, std::string_view hint = "");
bool IsUsageError(const absl::Status& status);
absl::Status AsUsageError(absl::Status status);

// Prefixes the message ("CONTEXT: message") and keeps code and hint.
absl::Status Annotate(const absl::Status& status, std::string_view context);

}  // namespace iotrace

#define IOTRACE_STATUS_CONCAT_INNER(a, b) a##b
#define IOTRACE_STATUS_CONCAT(a, b) IOTRACE_STATUS_CONCAT_INNER(a, b)

#define IOTRACE_RETURN_IF_ERROR(expr)            \
  do {                                           \
    ::absl::Status iotrace_status_ = (expr);     \
    if (!iotrace_status_.ok()) return iotrace_status_; \
  } while (0)

#define IOTRACE_ASSIGN_OR_RETURN(lhs, expr) \
  IOTRACE_ASSIGN_OR_RETURN_IMPL(IOTRACE_STATUS_CONCAT(iotrace_statusor_, __LINE__), lhs, expr)

#define IOTRACE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).status();      \
  lhs = std::move(tmp).value()

#endif  // IOTRACE_BASE_STATUS_H_
