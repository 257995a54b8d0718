// Small std::string_view text helpers (this Abseil build's absl::string_view is a distinct
// type, so absl::StrSplit does not take std::string_view), and counted nouns for messages.
#ifndef IOTRACE_BASE_TEXT_H_
#define IOTRACE_BASE_TEXT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace iotrace {

// Splits on `sep`; empty pieces dropped when skip_empty.
std::vector<std::string_view> SplitText(std::string_view text, char sep, bool skip_empty = true);
// Without leading/trailing spaces, tabs, CR and LF.
std::string_view TrimText(std::string_view text);

// "1 request", "2 requests", "0 requests": the count and the noun in the number it takes.
// `plural` defaults to `singular` + "s".
std::string Plural(uint64_t n, std::string_view singular, std::string_view plural = {});

}  // namespace iotrace

#endif  // IOTRACE_BASE_TEXT_H_
