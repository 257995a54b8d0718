#include "iotrace/formats/external_formats.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/status.h"
#include "iotrace/base/text.h"
#include "iotrace/formats/trace_reader_open.h"
#include "iotrace/sys/tracefs.h"

namespace iotrace {
namespace {

std::vector<std::string> ListDirs(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

absl::StatusOr<std::vector<EventFormat>> FormatsFromEventsDir(const std::string& root,
                                                              const std::vector<uint32_t>& ids) {
  const std::string events = root + "/events";
  struct stat st;
  if (::stat(events.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::NotFoundError(absl::StrFormat("%s has no events directory", root));
  }
  std::vector<std::string> systems = ListDirs(events);
  auto block = std::find(systems.begin(), systems.end(), "block");
  if (block != systems.end()) std::rotate(systems.begin(), block, block + 1);
  std::vector<EventFormat> found;
  for (const std::string& sys : systems) {
    for (const std::string& ev : ListDirs(events + "/" + sys)) {
      if (found.size() == ids.size()) return found;
      const std::string dir = events + "/" + sys + "/" + ev;
      auto id_text = ReadFileToString(dir + "/id");
      uint32_t id = 0;
      const std::string_view id_str = id_text.ok() ? TrimText(*id_text) : std::string_view();
      if (!id_text.ok() ||
          !absl::SimpleAtoi(absl::string_view(id_str.data(), id_str.size()), &id) ||
          std::find(ids.begin(), ids.end(), id) == ids.end()) {
        continue;
      }
      IOTRACE_ASSIGN_OR_RETURN(std::string text, ReadFileToString(dir + "/format"));
      auto format = ParseUntrustedEventFormat(sys, text);
      if (!format.ok()) return Annotate(format.status(), absl::StrCat("event format ", dir));
      if (format->id != id) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s/format says ID %u, its id file %u", dir, format->id, id));
      }
      found.push_back(*std::move(format));
    }
  }
  return found;
}

FormatsFallback FormatsFromPath(const std::string& path) {
  FormatsFallback f;
  f.source = path;
  f.description = path;
  f.load = [path](const std::vector<uint32_t>& ids) -> absl::StatusOr<std::vector<EventFormat>> {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      return FormatsFromEventsDir(path, ids);
    }
    IOTRACE_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, OpenTraceReader(path));
    return reader->formats();
  };
  return f;
}

FormatsFallback RunningKernelFormats(const std::string& tracefs, const std::string& release) {
  std::string name = release;
  struct utsname u;
  if (name.empty() && uname(&u) == 0) name = u.release;
  FormatsFallback f;
  f.source = "running kernel";
  f.description = absl::StrFormat("the running kernel (%s)", name);
  f.load = [tracefs](const std::vector<uint32_t>& ids) -> absl::StatusOr<std::vector<EventFormat>> {
    IOTRACE_ASSIGN_OR_RETURN(std::string root, FindTracefs(tracefs));
    return FormatsFromEventsDir(root, ids);
  };
  return f;
}

}  // namespace iotrace
