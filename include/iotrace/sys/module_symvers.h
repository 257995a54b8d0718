// Which kernel symbols are exported to modules, from the kernel build's Module.symvers: the
// answer to "could a kernel module hook this tracepoint?" (its __tracepoint_<event> symbol must
// be exported, see EXPORT_TRACEPOINT_SYMBOL_GPL in include/linux/tracepoint.h).
#ifndef IOTRACE_SYS_MODULE_SYMVERS_H_
#define IOTRACE_SYS_MODULE_SYMVERS_H_

#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace iotrace {

struct ExportedSymbol {
  std::string module;       // "vmlinux" or the module path
  std::string export_type;  // "EXPORT_SYMBOL", "EXPORT_SYMBOL_GPL", ...
  std::string ns;           // symbol namespace, "" when none
};

// Whether a tracepoint's probe symbol is exported.
enum class HookStatus { kExported, kNotExported, kUnknown };
const char* HookStatusName(HookStatus status);  // "exported", "not exported", "unknown"

class ModuleSymvers {
 public:
  // Lines are "CRC<TAB>SYMBOL<TAB>MODULE<TAB>EXPORT_TYPE[<TAB>NAMESPACE]" (scripts/mod/modpost.c);
  // other lines are counted in bad_lines().
  static ModuleSymvers Parse(std::string_view text);
  static absl::StatusOr<ModuleSymvers> Load(const std::string& path);
  // The Module.symvers of kernel `release` under `modules_root` (/lib/modules): RELEASE/build/
  // first, then RELEASE/; "" when neither exists.
  static std::string FindForRelease(const std::string& release,
                                    const std::string& modules_root = "/lib/modules");

  size_t size() const { return symbols_.size(); }
  size_t bad_lines() const { return bad_lines_; }
  const ExportedSymbol* Find(std::string_view symbol) const;
  // kExported when __tracepoint_<event> is exported, else kNotExported.
  HookStatus TracepointHook(std::string_view event) const;

 private:
  absl::flat_hash_map<std::string, ExportedSymbol> symbols_;
  size_t bad_lines_ = 0;
};

}  // namespace iotrace

#endif  // IOTRACE_SYS_MODULE_SYMVERS_H_
