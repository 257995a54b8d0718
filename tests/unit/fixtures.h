// Fixture files of the unit tests (tests/fixtures/, recorded on this project's kernel or built
// by hand for other layouts).
#ifndef IOTRACE_TESTS_UNIT_FIXTURES_H_
#define IOTRACE_TESTS_UNIT_FIXTURES_H_

#include <fstream>
#include <sstream>
#include <string>

namespace iotrace::test {

// The whole file tests/fixtures/<relative>, bytes as they are ("" when it cannot be read).
inline std::string ReadFixture(const std::string& relative) {
  // Appended piece by piece: GCC 12 warns (-Wstringop-overflow, a false positive) on
  // string(...) + "/" + relative here.
  std::string path = IOTRACE_FIXTURES;
  path.append("/").append(relative);
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The format of block:<event> as kernel `kernel` prints it: tests/fixtures/formats/<kernel>/,
// laid out as tracefs (6.18 is this project's kernel; 6.10 and 3.x are older layouts).
inline std::string ReadBlockFormat(const std::string& event, const std::string& kernel = "6.18") {
  std::string relative = "formats/";
  relative.append(kernel).append("/events/block/").append(event).append("/format");
  return ReadFixture(relative);
}

}  // namespace iotrace::test

#endif  // IOTRACE_TESTS_UNIT_FIXTURES_H_
