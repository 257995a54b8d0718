// Dynamic probes (`record --probe`): the kernel's kprobe/uprobe definition syntax parsed and
// checked before anything is written, and DynamicProbes, which creates the probe events through
// libtracefs, resolves them like tracepoints, and removes every one it created.
#ifndef IOTRACE_SYS_PROBE_H_
#define IOTRACE_SYS_PROBE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "iotrace/sys/kallsyms.h"
#include "iotrace/sys/tracefs.h"

struct tracefs_dynevent;

namespace iotrace {

enum class ProbeType { kKprobe, kKretprobe, kUprobe, kUretprobe };
const char* ProbeTypeName(ProbeType type);  // "kprobe", "kretprobe", "uprobe", "uretprobe"

// One fetch argument, NAME=FETCHARG[:TYPE]. A bare FETCHARG gets the kernel's name argN.
struct ProbeArg {
  std::string name;
  std::string fetch;  // "%di", "+8(%sp)", "$comm", "@sym+4", ...
  std::string type;   // "" (the kernel's default, x64/x32) or "u32", "string", "x8[4]", ...
  std::string Text() const;  // as the kernel takes it
};

// A parsed definition (kernel syntax, Documentation/trace/{kprobetrace,uprobetracer}.rst):
//   p[:[GRP/][EVENT]] [MOD:]SYM[+OFFS]|0xADDR [FETCHARGS]       kprobe
//   r[MAXACTIVE][:[GRP/][EVENT]] [MOD:]SYM[+0] [FETCHARGS]      kretprobe
//   p[:[GRP/][EVENT]] /PATH:SYMBOL[+OFFS]|/PATH:0xOFFSET [FETCHARGS]   uprobe (r: uretprobe)
// A place ending in "%return" makes a return probe of a `p` line, as in the kernel.
struct ProbeDefinition {
  ProbeType type = ProbeType::kKprobe;
  std::string group;        // "" = the default group (iotrace_<pid>)
  std::string event;        // "" = derived from the place (DefaultProbeEvent)
  uint32_t maxactive = 0;   // kretprobe only; 0 = kernel default
  // Kernel probes: [module:]symbol+offset, or a raw address (symbol empty).
  std::string module;
  std::string symbol;       // kprobe symbol, or uprobe ELF symbol ("" = offset given directly)
  uint64_t offset = 0;      // kprobe: +OFFS; uprobe: +OFFS after symbol, or the file offset
  uint64_t address = 0;     // kprobe given as an address
  bool has_address = false;
  std::string path;         // uprobe: the binary, as written
  std::vector<ProbeArg> args;
  std::string text;         // the definition as given

  bool IsKernel() const { return type == ProbeType::kKprobe || type == ProbeType::kKretprobe; }
  bool IsReturn() const { return type == ProbeType::kKretprobe || type == ProbeType::kUretprobe; }
  // "a=%di:u32 b=+0(%si):string", the fetch-argument part of the kernel command.
  std::string FetchArgs() const;
  // The place as the kernel's kprobe_events takes it: "[MOD:]SYM[+OFFS]" or "0xADDR".
  std::string KernelPlace() const;
};

// Parses one definition. Syntax errors are InvalidArgument naming the definition and the part
// that is wrong (names, types, fetch-argument forms, probe-kind restrictions such as $retval
// only on return probes, @SYM not on uprobes, MAXACTIVE only on kretprobes).
absl::StatusOr<ProbeDefinition> ParseProbeDefinition(std::string_view text);

// The kernel's naming rule for groups, events and argument names (a C identifier, < 64 chars).
bool IsGoodProbeName(std::string_view name);

// "iotrace_<pid>": the group probes go to when the definition names none.
std::string DefaultProbeGroup();
// The event name the definition gets when it names none, like the kernel's own choice:
// "p_vfs_read_0", "r_vfs_read_0", "p_mybin_myfunc" (uprobe by symbol), "p_mybin_0x11c0".
std::string DefaultProbeEvent(const ProbeDefinition& def);

// What this kernel offers for dynamic probes (files under tracefs).
struct ProbeSupport {
  bool kprobes = false;         // kprobe_events exists (CONFIG_KPROBE_EVENTS)
  bool uprobes = false;         // uprobe_events exists (CONFIG_UPROBE_EVENTS)
  bool dynamic_events = false;  // dynamic_events exists
};
ProbeSupport DetectProbeSupport(const std::string& tracefs);

// FailedPrecondition with a hint when the kernel cannot host this kind of probe: the clear,
// one-line answer for kprobes on a kernel without CONFIG_KPROBE_EVENTS.
absl::Status CheckProbeSupported(const ProbeDefinition& def, const ProbeSupport& support,
                                 const std::string& tracefs);

// Kprobe target checks against kallsyms: the symbol exists (suggesting close names when not),
// is a function, is unique (the kernel refuses ambiguous names), is traceable (in
// available_filter_functions, when `traceable` is given: the kernel refuses notrace
// functions), and the offset lies before the next symbol. Raw addresses are checked to lie
// inside a text symbol. Range checks are skipped when kallsyms hides addresses.
absl::Status ValidateKprobeTarget(const ProbeDefinition& def, const Kallsyms& kallsyms,
                                  const absl::flat_hash_set<std::string>* traceable);

// Uprobe target: the binary's canonical path and the file offset the probe goes to, resolved
// from the ELF symbol (symtab, else dynsym) when the definition names one.
struct UprobeTarget {
  std::string path;
  uint64_t file_offset = 0;
};
absl::StatusOr<UprobeTarget> ResolveUprobeTarget(const ProbeDefinition& def);

struct DynamicProbeOptions {
  std::string tracefs;                        // the mount (FindTracefs)
  std::string kallsyms_path = "/proc/kallsyms";
  std::string traceable_path;                 // "" = <tracefs>/available_filter_functions
  std::string default_group;                  // "" = DefaultProbeGroup()
};

// The probe events of one run. Create() parses, validates and creates every definition (all or
// none: on a failure the ones already created are removed), then resolves the new events to
// TraceEventInfo (id + format) so both backends record them like tracepoints. The destructor
// removes every probe this object created, and only those; Remove() does it now and reports
// failures. Close every perf fd and instance using the events first: the kernel refuses to
// delete a probe that is in use (EBUSY).
class DynamicProbes {
 public:
  static absl::StatusOr<std::unique_ptr<DynamicProbes>> Create(
      const std::vector<std::string>& definitions, const DynamicProbeOptions& options);
  ~DynamicProbes();
  DynamicProbes(const DynamicProbes&) = delete;
  DynamicProbes& operator=(const DynamicProbes&) = delete;

  const std::vector<TraceEventInfo>& events() const { return events_; }
  // "group:event" of every created probe, in definition order.
  std::vector<std::string> EventNames() const;
  // Removes every created probe; safe to call twice. Tries them all and returns the first error.
  absl::Status Remove();

 private:
  struct Created {
    std::string group;
    std::string event;
    tracefs_dynevent* handle = nullptr;
  };
  DynamicProbes() = default;
  absl::Status CreateOne(const ProbeDefinition& def, const std::string& group,
                         const std::string& event, const std::string& place_path,
                         uint64_t file_offset);

  std::string tracefs_;
  std::vector<Created> created_;
  std::vector<TraceEventInfo> events_;
};

// A probe event that exists in tracefs now (for `iotrace reset` and `iotrace list`).
struct ExistingProbe {
  std::string group;
  std::string event;
  ProbeType type = ProbeType::kUprobe;
};
// Every kprobe/uprobe event the kernel has now.
std::vector<ExistingProbe> ListProbeEvents(const std::string& tracefs);
// Removes one probe event by group and name (disabling it in every instance first).
absl::Status RemoveProbeEvent(const std::string& tracefs, const std::string& group,
                              const std::string& event);

}  // namespace iotrace

#endif  // IOTRACE_SYS_PROBE_H_
