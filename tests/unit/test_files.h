// Files of the tests: a file's bytes read whole or written whole, and a path for a scratch file.
#ifndef IOTRACE_TESTS_UNIT_TEST_FILES_H_
#define IOTRACE_TESTS_UNIT_TEST_FILES_H_

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace iotrace::test {

// A file's bytes ("" when it cannot be read).
inline std::string Slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Replaces the file's bytes with `bytes`.
inline void Spit(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Where the tests' scratch files and directories go: $IOTRACE_TEST_TMPDIR when it is set, else
// $TMPDIR, else /tmp. scripts/test.sh makes one directory for its run and removes it at the
// end, whatever happened: a test that crashed (an abort, a sanitizer's report) never ran its
// own cleanup.
inline const std::string& TestTmpDir() {
  static const std::string dir = [] {
    for (const char* name : {"IOTRACE_TEST_TMPDIR", "TMPDIR"}) {
      const char* d = std::getenv(name);
      if (d != nullptr && *d != '\0') return std::string(d);
    }
    return std::string("/tmp");
  }();
  return dir;
}

// Where small scratch files rewritten thousands of times go: $IOTRACE_TEST_SHMDIR when set
// (scripts/test.sh's directory for the run in tmpfs), else tmpfs when there is one (the
// disk-full sweeps), else TestTmpDir().
inline const std::string& TestShmDir() {
  static const std::string dir = [] {
    const char* d = std::getenv("IOTRACE_TEST_SHMDIR");
    if (d != nullptr && *d != '\0') return std::string(d);
    return ::access("/dev/shm", W_OK) == 0 ? std::string("/dev/shm") : TestTmpDir();
  }();
  return dir;
}

// A new directory TestTmpDir()/PREFIXxxxxxx (mkdtemp); "" when it cannot be made.
inline std::string MakeTempDir(const std::string& prefix) {
  std::string path = TestTmpDir() + "/" + prefix + "XXXXXX";
  return ::mkdtemp(path.data()) != nullptr ? path : std::string();
}

// Removes `path` and everything under it, quietly (a test's scratch directory).
inline void RemoveTree(const std::string& path) {
  std::error_code ec;
  if (!path.empty()) std::filesystem::remove_all(path, ec);
}

// DIR/PREFIX-PID, then SUFFIX: a scratch path unique to this process.
inline std::string PathOfProcess(const std::string& dir, const std::string& prefix,
                                 const std::string& suffix) {
  return dir + "/" + prefix + "-" + std::to_string(getpid()) + suffix;
}

// A scratch file's path on disk: TestTmpDir()/PREFIX-PID, then SUFFIX.
inline std::string TmpPath(const std::string& prefix, const std::string& suffix = "") {
  return PathOfProcess(TestTmpDir(), prefix, suffix);
}

// A scratch file's path in tmpfs where there is one: TestShmDir()/PREFIX-PID-NAME.
inline std::string ScratchPath(const std::string& prefix, const std::string& name) {
  return PathOfProcess(TestShmDir(), prefix, "-" + name);
}

// Writes `n` bytes to `path` whose values depend on their offsets (each 8 bytes a hash of their
// offset: no period), so that a byte read from the wrong place shows; returns them.
inline std::vector<uint8_t> WriteOffsetPattern(const std::filesystem::path& path, size_t n) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) {
    uint64_t z = (i >> 3) + 0x9e3779b97f4a7c15ULL;  // splitmix64 of the word's index
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    bytes[i] = static_cast<uint8_t>(z >> (8 * (i & 7)));
  }
  Spit(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), n));
  return bytes;
}

}  // namespace iotrace::test

#endif  // IOTRACE_TESTS_UNIT_TEST_FILES_H_
