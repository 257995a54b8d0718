// Kernel symbols from /proc/kallsyms (or a fixture): where a function starts and where the next
// symbol starts, so a kprobe's SYMBOL+OFFSET can be checked before the kernel sees it; and the
// list of functions ftrace can trace (available_filter_functions), which kprobe events require.
#ifndef IOTRACE_SYS_KALLSYMS_H_
#define IOTRACE_SYS_KALLSYMS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"

namespace iotrace {

struct KernelSymbol {
  uint64_t address = 0;
  char type = '?';      // nm-style: T/t text, D/d data, W/w weak, ...
  std::string name;
  std::string module;   // "" for vmlinux, else the "[module]" name without brackets

  bool IsText() const { return type == 'T' || type == 't' || type == 'W' || type == 'w'; }
};

class Kallsyms {
 public:
  // Reads and parses a kallsyms file ("ADDRESS TYPE NAME [MODULE]" lines).
  static absl::StatusOr<Kallsyms> Load(const std::string& path = "/proc/kallsyms");
  // Lines that do not have that shape are counted in bad_lines(), not fatal.
  static Kallsyms Parse(std::string_view text);

  size_t size() const { return symbols_.size(); }
  size_t bad_lines() const { return bad_lines_; }
  // True when every address is 0: the kernel hides them (kptr_restrict, not root), so no range
  // check is possible.
  bool addresses_hidden() const { return addresses_hidden_; }

  // Every symbol with that name (in address order); only those of `module` when it is not "".
  std::vector<const KernelSymbol*> Find(std::string_view name,
                                        std::string_view module = "") const;
  // The lowest symbol address above `address` (the end of the function starting at or
  // containing `address`); 0 when there is none.
  uint64_t NextAddressAfter(uint64_t address) const;
  // The symbol whose range contains `address` (the last one starting at or below it), or null.
  const KernelSymbol* SymbolAt(uint64_t address) const;
  // Names of text symbols (for "did you mean").
  std::vector<std::string> TextNames() const;

 private:
  std::vector<KernelSymbol> symbols_;  // sorted by address, then file order
  absl::flat_hash_map<std::string, std::vector<uint32_t>> by_name_;
  size_t bad_lines_ = 0;
  bool addresses_hidden_ = true;
};

// available_filter_functions: one function a line, optionally followed by " [module]".
absl::flat_hash_set<std::string> ParseTraceableFunctions(std::string_view text);
// NotFound / PermissionDenied when the file cannot be read (it is root-only, and some kernels
// refuse it even to root); callers then skip the check.
absl::StatusOr<absl::flat_hash_set<std::string>> LoadTraceableFunctions(const std::string& path);

}  // namespace iotrace

#endif  // IOTRACE_SYS_KALLSYMS_H_
