// Reading the text report in tests: its paragraphs are wrapped at 80 columns, so a phrase is
// looked for in the text with its line breaks and indents squeezed out.
#ifndef IOTRACE_TESTS_UNIT_REPORT_TEXT_H_
#define IOTRACE_TESTS_UNIT_REPORT_TEXT_H_

#include <string>

namespace iotrace::test {

// Runs of spaces and newlines as one space.
inline std::string Squeezed(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : c;
  }
  return out;
}

}  // namespace iotrace::test

#endif  // IOTRACE_TESTS_UNIT_REPORT_TEXT_H_
