#include "iotrace/base/status.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace iotrace {
namespace {

constexpr char kHintUrl[] = "iotrace/hint";
constexpr char kUsageUrl[] = "iotrace/usage";

absl::StatusCode CodeForErrno(int err) {
  switch (err) {
    case EACCES:
    case EPERM:
      return absl::StatusCode::kPermissionDenied;
    case ENOENT:
    case ENODEV:
    case ENXIO:
      return absl::StatusCode::kNotFound;
    case EEXIST:
    case EBUSY:
      return absl::StatusCode::kAlreadyExists;
    case ENOSPC:
    case EDQUOT:
    case ENOMEM:
    case EMFILE:
    case ENFILE:
      return absl::StatusCode::kResourceExhausted;
    case EINVAL:
    case E2BIG:
      return absl::StatusCode::kInvalidArgument;
    case EOPNOTSUPP:
    case ENOSYS:
      return absl::StatusCode::kUnimplemented;
    case EINTR:
    case EAGAIN:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace

absl::Status ErrnoError(int err, std::string_view action, std::string_view object) {
  std::string message = object.empty()
                            ? absl::StrFormat("%s: %s (errno %d)", action, std::strerror(err), err)
                            : absl::StrFormat("%s %s: %s (errno %d)", action, object,
                                              std::strerror(err), err);
  return absl::Status(CodeForErrno(err), message);
}

absl::Status WithHint(absl::Status status, std::string_view hint) {
  if (!status.ok() && !hint.empty()) status.SetPayload(kHintUrl, absl::Cord(std::string(hint)));
  return status;
}

std::string HintOf(const absl::Status& status) {
  auto payload = status.GetPayload(kHintUrl);
  return payload ? std::string(*payload) : std::string();
}

absl::Status UsageError(std::string_view message, std::string_view hint) {
  return AsUsageError(WithHint(absl::InvalidArgumentError(std::string(message)), hint));
}

bool IsUsageError(const absl::Status& status) {
  return status.GetPayload(kUsageUrl).has_value();
}

absl::Status AsUsageError(absl::Status status) {
  if (!status.ok()) status.SetPayload(kUsageUrl, absl::Cord("1"));
  return status;
}

absl::Status Annotate(const absl::Status& status, std::string_view context) {
  if (status.ok()) return status;
  absl::Status out(status.code(),
                   std::string(context) + ": " + std::string(status.message()));
  status.ForEachPayload(
      [&out](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

}  // namespace iotrace
