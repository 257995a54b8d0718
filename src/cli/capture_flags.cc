#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cli.h"
#include "iotrace/base/status.h"
#include "iotrace/sys/stale_tracefs.h"
#include "iotrace/sys/tracefs.h"

namespace iotrace {

void AddDevFlag(FlagParser& flags, std::vector<std::string>* devs) {
  flags.Add("dev", 0, true, "DEV",
            "only this disk (MAJ:MIN or /dev/NAME; repeatable), filtered in the kernel",
            [devs](const std::string& v) {
              devs->push_back(v);
              return absl::OkStatus();
            });
}

void AddBackendFlag(FlagParser& flags, Backend* backend) {
  flags.Add("backend", 'b', true, "auto|perf|ftrace",
            "capture backend (default auto: ftrace wherever it records, else perf)",
            [backend](const std::string& v) {
              if (v == "auto") *backend = Backend::kAuto;
              else if (v == "perf") *backend = Backend::kPerf;
              else if (v == "ftrace") *backend = Backend::kFtrace;
              else
                return WithHint(absl::InvalidArgumentError(
                                    absl::StrFormat("--backend: unknown backend '%s'", v)),
                                "use auto, perf or ftrace");
              return absl::OkStatus();
            });
}

void AddBufferFlags(FlagParser& flags, uint32_t* mmap_pages, uint32_t* buffer_kb) {
  flags.Add("mmap-pages", 'm', true, "N",
            "perf ring size per CPU in pages, a power of two (default 1024 = 4 MiB)",
            [mmap_pages](const std::string& v) {
              return ParseUint32Flag("--mmap-pages", v, mmap_pages);
            });
  flags.Add("buffer-kb", 0, true, "KB", "ftrace buffer per CPU in KiB (default 8192)",
            [buffer_kb](const std::string& v) {
              return ParseUint32Flag("--buffer-kb", v, buffer_kb);
            });
}

void AddTracefsFlag(FlagParser& flags, std::string* tracefs_dir) {
  flags.AddString("tracefs", 0, "DIR", "tracefs mount point (default: found in /proc/mounts)",
                  tracefs_dir);
}

void RemoveStaleTracefsLeftovers(const std::string& tracefs_dir) {
  absl::StatusOr<std::string> tracefs = FindTracefs(tracefs_dir);
  if (!tracefs.ok()) return;
  for (const std::string& line : RemoveStaleTracefs(*tracefs)) {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

}  // namespace iotrace
