#include "iotrace/formats/trace_dat_recover.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "iotrace/base/bytes.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/status.h"
#include "iotrace/formats/tracing_data.h"
#include "trace_dat.h"

namespace iotrace {
namespace {

absl::Status NotOurs(const std::string& path, std::string_view why) {
  return WithHint(absl::InvalidArgumentError(
                      absl::StrFormat("recover %s: %s", path, why)),
                  "recover finishes trace.dat files of an iotrace record that was killed; a "
                  "perf.data of one needs no recovery (iotrace report reads it as it is)");
}

std::string_view CString(ByteView data) {
  std::string_view s = data.AsString();
  return s.substr(0, s.find('\0'));
}

}  // namespace

absl::StatusOr<TraceDatRecovery> RecoverTraceDat(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(errno, "open", path);
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return ErrnoError(errno, "stat", path);
  if (st.st_size <= 0) return NotOurs(path, "the file is empty");
  void* addr = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (addr == MAP_FAILED) return ErrnoError(errno, "mmap", path);
  UniqueMapping map(addr, static_cast<size_t>(st.st_size));
  const ByteView file(addr, static_cast<size_t>(st.st_size));

  auto decoded = DecodeTracingData(file, /*keep_kallsyms=*/true);
  if (!decoded.ok()) return NotOurs(path, std::string(decoded.status().message()));
  if (decoded->version != "6") {
    return NotOurs(path, absl::StrCat("trace.dat version ", decoded->version,
                                      " (iotrace records version 6)"));
  }
  TraceDatWriterOptions options;
  options.meta = std::move(decoded->meta);
  ByteReader r(file);
  r.Seek(decoded->consumed);
  uint32_t cpus = 0;
  ByteView label;
  if (!r.Read(&cpus) || cpus == 0 || cpus > 65536 || !r.ReadBytes(kTraceDatLabelSize, &label) ||
      label.AsString() != std::string_view(kTraceDatOptionsLabel, kTraceDatLabelSize)) {
    return NotOurs(path, "its header is damaged (CPU count, options)");
  }
  options.nr_cpus = static_cast<int>(cpus);
  for (;;) {
    uint16_t id = 0;
    uint32_t size = 0;
    ByteView data;
    if (!r.Read(&id)) return NotOurs(path, "its header is damaged (options)");
    if (id == kOptionDone) break;
    if (!r.Read(&size) || !r.ReadBytes(size, &data)) {
      return NotOurs(path, "its header is damaged (an option)");
    }
    if (id == kOptionTraceClock) options.trace_clock = std::string(CString(data));
    if (id == kOptionUname) options.uname = std::string(CString(data));
    if (id == kOptionVersion) options.recorder = std::string(CString(data));
  }
  if (!r.ReadBytes(kTraceDatLabelSize, &label) ||
      label.AsString() != std::string_view(kTraceDatFlyrecordLabel, kTraceDatLabelSize)) {
    return NotOurs(path, "its header is damaged (flyrecord)");
  }
  bool no_data = true;
  for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
    uint64_t offset = 0, size = 0;
    if (!r.Read(&offset) || !r.Read(&size)) return NotOurs(path, "its CPU table is cut");
    no_data &= offset == 0 && size == 0;
  }
  if (options.recorder.rfind("iotrace", 0) != 0) {
    return NotOurs(path, absl::StrCat("it was recorded by ",
                                      options.recorder.empty() ? "another tool"
                                                               : options.recorder));
  }
  map = UniqueMapping();
  fd.Reset();

  TraceDatRecovery out;
  if (!no_data) {
    // Complete: a kill between writing its header and removing the spools leaves them.
    out.was_complete = true;
    for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
      if (::unlink(TraceDatSpoolPath(path, static_cast<int>(cpu)).c_str()) == 0) {
        ++out.spools_removed;
      }
    }
    return out;
  }
  for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
    out.spools += ::access(TraceDatSpoolPath(path, static_cast<int>(cpu)).c_str(), F_OK) == 0;
  }
  if (out.spools == 0) {
    return WithHint(absl::DataLossError(absl::StrFormat(
                        "recover %s: the recording did not finish and its spool files (%s ...) "
                        "are gone",
                        path, TraceDatSpoolPath(path, 0))),
                    "the events were in those files; record again");
  }
  IOTRACE_ASSIGN_OR_RETURN(std::unique_ptr<TraceDatWriter> writer,
                           TraceDatWriter::Resume(path, std::move(options),
                                                  kTraceDatRecoveredNote));
  IOTRACE_ASSIGN_OR_RETURN(out.written, writer->Finish());
  return out;
}

}  // namespace iotrace
