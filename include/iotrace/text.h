// Small std::string_view text helpers (this Abseil build's absl::string_view is a distinct
// type, so absl::StrSplit does not take std::string_view).
#ifndef IOTRACE_TEXT_H_
#define IOTRACE_TEXT_H_

#include <string>
#include <string_view>
#include <vector>

namespace iotrace {

// Splits on `sep`; empty pieces dropped when skip_empty.
std::vector<std::string_view> SplitText(std::string_view text, char sep, bool skip_empty = true);
// Without leading/trailing spaces, tabs, CR and LF.
std::string_view TrimText(std::string_view text);

}  // namespace iotrace

#endif  // IOTRACE_TEXT_H_
