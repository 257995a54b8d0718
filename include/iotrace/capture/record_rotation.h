// `iotrace record --switch-output`, `--switch-max-files` and `--max-size`, as perf record spells
// them: the option values, the names of the files a rotating recording makes, and which of them
// to remove. The backends (record_ftrace.cc, record_perf.cc) do the switching; the run loop
// (record_loop.cc) asks this policy when.
#ifndef IOTRACE_CAPTURE_RECORD_ROTATION_H_
#define IOTRACE_CAPTURE_RECORD_ROTATION_H_

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace iotrace {

// When a recording moves on to a new file. perf's spellings: "signal" (SIGUSR2), a size with
// its unit B/K/M/G (powers of 1024), a time with its unit s/m/h/d; a whole number before the
// unit.
struct SwitchOutputMode {
  enum class Kind { kOff, kSignal, kSize, kTime };
  Kind kind = Kind::kOff;
  uint64_t bytes = 0;  // kSize
  uint64_t ns = 0;     // kTime
  bool on() const { return kind != Kind::kOff; }
};

// "" (the bare option) is "signal", as with perf.
absl::StatusOr<SwitchOutputMode> ParseSwitchOutput(std::string_view value);
// A size with perf's units B/K/M/G ("100M"), more than 0: --max-size.
absl::StatusOr<uint64_t> ParseByteSize(std::string_view option, std::string_view value);

// The name of a file of a rotating recording started at `unix_ns` (CLOCK_REALTIME), as perf
// names its switched files: OUTPUT.YYYYMMDDHHMMSSCC, local time to the hundredth of a second.
std::string SwitchedOutputName(const std::string& output, int64_t unix_ns);

// The files of one rotating recording: names them, counts them, and says which to remove past
// --switch-max-files and when --max-size is reached. Holds at most max_files names whatever the
// run's length (none without --switch-max-files).
class OutputRotation {
 public:
  // `max_files` 0: keep every file; `max_size` 0: no bound.
  OutputRotation(std::string output, SwitchOutputMode mode, int max_files, uint64_t max_size);

  const SwitchOutputMode& mode() const { return mode_; }
  uint64_t max_size() const { return max_size_; }
  int max_files() const { return max_files_; }

  // A new file is opened at `unix_ns`, `mono_ns` (the loop's clock): its name, later than every
  // name given before (a name that would repeat one is moved on by a hundredth of a second).
  std::string Open(int64_t unix_ns, uint64_t mono_ns);
  // Whether the file being written should be switched now: its time or size is up, or SIGUSR2
  // came (`signalled`).
  bool Due(uint64_t mono_ns, uint64_t current_bytes, bool signalled) const;
  // A file opened before is finished, `bytes` on disk. Returns the files to remove, oldest
  // first, so that the run's files on disk (finished, and opened but not finished yet) are no
  // more than --switch-max-files; the caller removes them.
  std::vector<std::string> Finished(const std::string& path, uint64_t bytes);
  // Files named by this run but not removed, and their bytes on disk, given the bytes of the
  // files still open.
  uint64_t DiskBytes(uint64_t open_bytes) const { return kept_bytes_ + open_bytes; }
  bool OverMaxSize(uint64_t open_bytes) const {
    return max_size_ != 0 && DiskBytes(open_bytes) >= max_size_;
  }
  uint64_t files_made() const { return files_made_; }
  uint64_t files_removed() const { return files_removed_; }
  uint64_t files_on_disk() const { return files_made_ - files_removed_; }
  uint64_t bytes_written() const { return bytes_written_; }  // of every finished file
  const std::string& first_name() const { return first_name_; }
  const std::string& last_name() const { return last_name_; }

 private:
  std::string output_;
  SwitchOutputMode mode_;
  int max_files_;
  uint64_t max_size_;
  int64_t last_stamp_cs_ = 0;  // the last name's time, hundredths of a second
  uint64_t opened_mono_ns_ = 0;
  uint64_t open_ = 0;          // opened, not finished
  uint64_t files_made_ = 0;
  uint64_t files_removed_ = 0;
  uint64_t kept_bytes_ = 0;    // finished and not removed
  uint64_t bytes_written_ = 0;
  std::deque<std::pair<std::string, uint64_t>> kept_;  // with --switch-max-files only
  std::string first_name_, last_name_;
};

}  // namespace iotrace

#endif  // IOTRACE_CAPTURE_RECORD_ROTATION_H_
