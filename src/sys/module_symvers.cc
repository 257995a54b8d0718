#include "iotrace/sys/module_symvers.h"

#include <unistd.h>

#include "iotrace/base/fd.h"
#include "iotrace/base/text.h"

namespace iotrace {

const char* HookStatusName(HookStatus status) {
  switch (status) {
    case HookStatus::kExported: return "exported";
    case HookStatus::kNotExported: return "not exported";
    case HookStatus::kUnknown: break;
  }
  return "unknown";
}

ModuleSymvers ModuleSymvers::Parse(std::string_view text) {
  ModuleSymvers out;
  for (std::string_view line : SplitText(text, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (TrimText(line).empty()) continue;
    std::vector<std::string_view> f = SplitText(line, '\t', /*skip_empty=*/false);
    // Since 5.10: CRC, symbol, module, export type, namespace (may be empty).
    // 5.4 to 5.9: CRC, symbol, namespace, module, export type. Before 5.4: no namespace.
    auto is_export = [](std::string_view s) { return s.rfind("EXPORT_", 0) == 0; };
    bool shape = f.size() >= 4 && f.size() <= 5 && f[0].size() >= 3 &&
                 f[0].substr(0, 2) == "0x" && !f[1].empty();
    ExportedSymbol sym;
    if (shape && is_export(f[3])) {
      sym.module = std::string(f[2]);
      sym.export_type = std::string(f[3]);
      if (f.size() == 5) sym.ns = std::string(f[4]);
    } else if (shape && f.size() == 5 && is_export(f[4])) {
      sym.ns = std::string(f[2]);
      sym.module = std::string(f[3]);
      sym.export_type = std::string(f[4]);
    } else {
      ++out.bad_lines_;
      continue;
    }
    out.symbols_[std::string(f[1])] = std::move(sym);
  }
  return out;
}

absl::StatusOr<ModuleSymvers> ModuleSymvers::Load(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  return Parse(*text);
}

std::string ModuleSymvers::FindForRelease(const std::string& release,
                                          const std::string& modules_root) {
  for (const char* sub : {"/build/Module.symvers", "/Module.symvers"}) {
    std::string path = modules_root + "/" + release + sub;
    if (::access(path.c_str(), R_OK) == 0) return path;
  }
  return "";
}

const ExportedSymbol* ModuleSymvers::Find(std::string_view symbol) const {
  auto it = symbols_.find(std::string(symbol));
  return it == symbols_.end() ? nullptr : &it->second;
}

HookStatus ModuleSymvers::TracepointHook(std::string_view event) const {
  return Find("__tracepoint_" + std::string(event)) != nullptr ? HookStatus::kExported
                                                                : HookStatus::kNotExported;
}

}  // namespace iotrace
