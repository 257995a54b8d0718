#include "iotrace/sys/probe.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "iotrace/base/status.h"
#include "iotrace/base/text.h"
#include "iotrace/sys/elf_symbols.h"
#include "tracefs_shim.h"

namespace iotrace {
namespace {

// Limits from kernel/trace/trace_probe.h.
constexpr size_t kMaxEventNameLen = 64;      // MAX_EVENT_NAME_LEN, with the NUL
constexpr uint32_t kMaxArrayLen = 64;        // MAX_ARRAY_LEN
constexpr uint32_t kMaxRetprobeActive = 4096;  // KRETPROBE_MAXACTIVE_MAX
constexpr size_t kMaxProbeArgs = 128;        // MAX_TRACE_ARGS

// Field names every probe event already has (trace_probe.c reserved_field_names).
constexpr const char* kReservedArgNames[] = {
    "common_type", "common_flags", "common_preempt_count", "common_pid", "common_tgid",
    "__probe_ip",  "__probe_ret_ip", "__probe_func"};

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

absl::Status BadDefinition(std::string_view text, const std::string& why) {
  return WithHint(absl::InvalidArgumentError(
                      absl::StrFormat("bad probe definition '%s': %s", text, why)),
                  "syntax: 'p[:[GRP/]NAME] SYMBOL[+OFFS] [ARG=FETCHARG[:TYPE] ...]', "
                  "'r[MAXACTIVE][:[GRP/]NAME] SYMBOL ...' or 'p[:[GRP/]NAME] "
                  "/path/to/binary:SYMBOL[+OFFS] ...' (see docs/probes.md)");
}

std::vector<std::string_view> Words(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

// Unsigned number as kstrtoul(base 0) takes it: decimal, 0x hex, or 0 octal.
bool ParseNumber(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  } else if (s.size() > 1 && s[0] == '0') {
    base = 8;
    s.remove_prefix(1);
  }
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, base);
  return ec == std::errc() && ptr == s.data() + s.size();
}

bool IsSymbolChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

bool IsSymbolName(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), IsSymbolChar);
}

// "SYM[+OFFS]" -> symbol, offset.
bool SplitSymbolOffset(std::string_view place, std::string* symbol, uint64_t* offset) {
  size_t plus = place.find('+');
  std::string_view sym = place.substr(0, plus);
  *offset = 0;
  if (plus != std::string_view::npos && !ParseNumber(place.substr(plus + 1), offset)) {
    return false;
  }
  if (!IsSymbolName(sym)) return false;
  *symbol = std::string(sym);
  return true;
}

bool IsX86Register(std::string_view r) {
  static constexpr const char* kRegs[] = {
      "ax", "bx", "cx", "dx", "si", "di", "bp", "sp", "r8", "r9", "r10", "r11", "r12", "r13",
      "r14", "r15", "ip", "flags", "cs", "ss", "ds", "es", "fs", "gs", "orig_ax"};
  return std::any_of(std::begin(kRegs), std::end(kRegs),
                     [&](const char* k) { return r == k; });
}

struct FetchInfo {
  bool memory = false;  // the value comes from memory (or is a string source)
};

// Checks one FETCHARG (without name and type) against the forms of
// Documentation/trace/kprobetrace.rst and uprobetracer.rst, recursing into dereferences.
absl::Status CheckFetch(std::string_view fetch, const ProbeDefinition& def, int depth,
                        FetchInfo* info) {
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrFormat("fetch argument '%s': %s", fetch, why));
  };
  if (fetch.empty()) return bad("empty");
  if (depth > 8) return bad("dereferences nested too deep");
  const bool kernel = def.IsKernel();
  switch (fetch[0]) {
    case '%': {
      std::string_view reg = fetch.substr(1);
      if (reg.empty()) return bad("register name missing");
#if defined(__x86_64__)
      if (!IsX86Register(reg)) {
        return bad("unknown register (x86-64 names: %ax %bx %cx %dx %si %di %bp %sp "
                   "%r8-%r15 %ip %flags)");
      }
#else
      if (!std::all_of(reg.begin(), reg.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
          })) {
        return bad("bad register name");
      }
#endif
      return absl::OkStatus();
    }
    case '@': {
      std::string_view rest = fetch.substr(1);
      uint64_t n = 0;
      info->memory = true;
      if (rest.empty()) return bad("address or symbol missing after @");
      if (rest[0] == '+') {
        if (kernel) return bad("@+OFFSET (a file offset) is for uprobes only");
        if (!ParseNumber(rest.substr(1), &n)) return bad("bad file offset");
        return absl::OkStatus();
      }
      if (ParseNumber(rest, &n)) return absl::OkStatus();
      if (!kernel) return bad("@SYMBOL is for kprobes only; uprobes take @ADDR or @+OFFSET");
      size_t sign = rest.find_first_of("+-");
      uint64_t off = 0;
      if (!IsSymbolName(rest.substr(0, sign)) ||
          (sign != std::string_view::npos && !ParseNumber(rest.substr(sign + 1), &off))) {
        return bad("expected @ADDR or @SYMBOL[+|-OFFSET]");
      }
      return absl::OkStatus();
    }
    case '$': {
      std::string_view var = fetch.substr(1);
      uint64_t n = 0;
      if (var == "comm") {
        info->memory = true;
        return absl::OkStatus();
      }
      if (var == "stack") return absl::OkStatus();
      if (var.rfind("stack", 0) == 0 && ParseNumber(var.substr(5), &n)) return absl::OkStatus();
      if (var == "retval") {
        if (!def.IsReturn()) return bad("$retval is only available on return probes (r:...)");
        return absl::OkStatus();
      }
      if (var.rfind("arg", 0) == 0 && ParseNumber(var.substr(3), &n)) {
        if (!kernel) {
          return bad("$argN is for kprobes only; on a uprobe read the register (x86-64: "
                     "%di %si %dx %cx %r8 %r9)");
        }
        if (n == 0) return bad("arguments count from $arg1");
        return absl::OkStatus();
      }
      return bad("unknown variable (known: $stack, $stackN, $retval, $comm, $argN)");
    }
    case '+':
    case '-': {
      size_t open = fetch.find('(');
      if (open == std::string_view::npos || fetch.back() != ')') {
        return bad("a dereference is +|-[u]OFFSET(FETCHARG)");
      }
      std::string_view off = fetch.substr(1, open - 1);
      if (!off.empty() && off[0] == 'u') off.remove_prefix(1);
      uint64_t n = 0;
      if (!ParseNumber(off, &n)) return bad("bad dereference offset");
      FetchInfo inner;
      IOTRACE_RETURN_IF_ERROR(
          CheckFetch(fetch.substr(open + 1, fetch.size() - open - 2), def, depth + 1, &inner));
      info->memory = true;
      return absl::OkStatus();
    }
    case '\\': {
      std::string_view imm = fetch.substr(1);
      uint64_t n = 0;
      if (!imm.empty() && imm[0] == '"') {
        if (imm.size() < 2 || imm.back() != '"') return bad("unterminated immediate string");
        info->memory = true;
        return absl::OkStatus();
      }
      if (!imm.empty() && imm[0] == '-') imm.remove_prefix(1);
      if (!ParseNumber(imm, &n)) return bad("bad immediate value");
      return absl::OkStatus();
    }
    default:
      break;
  }
  // Kernel function-entry probes can name arguments through BTF ("file", "file->f_mode").
  if (kernel && (std::isalpha(static_cast<unsigned char>(fetch[0])) || fetch[0] == '_')) {
    bool ok = std::all_of(fetch.begin(), fetch.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '>' ||
             c == '.';
    });
    if (ok) return absl::OkStatus();
  }
  return bad("unknown form (expected %REG, @ADDR, $stackN, $retval, $comm, $argN, "
             "+OFFS(FETCHARG) or \\IMM)");
}

absl::Status CheckType(std::string_view type, const ProbeDefinition& def,
                       const FetchInfo& info) {
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrFormat("type '%s': %s", type, why));
  };
  std::string_view base = type;
  bool is_array = false;
  size_t bracket = type.find('[');
  if (bracket != std::string_view::npos) {
    if (type.back() != ']') return bad("an array type is TYPE[N]");
    uint64_t n = 0;
    if (!ParseNumber(type.substr(bracket + 1, type.size() - bracket - 2), &n) || n == 0 ||
        n > kMaxArrayLen) {
      return bad(absl::StrFormat("array length must be 1..%d", kMaxArrayLen));
    }
    base = type.substr(0, bracket);
    is_array = true;
  }
  static constexpr const char* kInts[] = {"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64",
                                          "x8", "x16", "x32", "x64", "char"};
  bool known = std::any_of(std::begin(kInts), std::end(kInts),
                           [&](const char* k) { return base == k; });
  if (base == "string" || base == "ustring") {
    known = true;
    if (!info.memory) {
      return bad("strings are read from memory: dereference the pointer, e.g. +0(%di):string");
    }
  } else if (base == "symbol" || base == "symstr" || base == "%pd" || base == "%pD") {
    known = true;
    if (!def.IsKernel()) return bad("this type is for kprobes only");
  } else if (base.size() > 1 && base[0] == 'b') {
    // b<bit-width>@<bit-offset>/<container-size>
    size_t at = base.find('@'), slash = base.find('/');
    uint64_t width = 0, offset = 0, container = 0;
    if (at == std::string_view::npos || slash == std::string_view::npos || slash < at ||
        !ParseNumber(base.substr(1, at - 1), &width) ||
        !ParseNumber(base.substr(at + 1, slash - at - 1), &offset) ||
        !ParseNumber(base.substr(slash + 1), &container)) {
      return bad("a bitfield is b<bit-width>@<bit-offset>/<container-size>");
    }
    if ((container != 8 && container != 16 && container != 32 && container != 64) ||
        width == 0 || width + offset > container) {
      return bad("bitfield must fit its container of 8, 16, 32 or 64 bits");
    }
    if (is_array) return bad("bitfields cannot be arrays");
    known = true;
  }
  if (!known) {
    return bad("unknown type (known: u8..u64, s8..s64, x8..x64, char, string, ustring, "
               "symbol, symstr, %pd, %pD, b<w>@<o>/<size>, TYPE[N])");
  }
  if (is_array && !info.memory) {
    return bad("arrays are read from memory: dereference the pointer, e.g. +0(%di):u8[4]");
  }
  return absl::OkStatus();
}

std::string Sanitize(std::string_view s) {
  std::string out;
  for (char c : s) out.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return out;
}

std::string Truncate(std::string s) {
  if (s.size() >= kMaxEventNameLen) s.resize(kMaxEventNameLen - 1);
  return s;
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

const char* ProbeTypeName(ProbeType type) {
  switch (type) {
    case ProbeType::kKprobe: return "kprobe";
    case ProbeType::kKretprobe: return "kretprobe";
    case ProbeType::kUprobe: return "uprobe";
    case ProbeType::kUretprobe: return "uretprobe";
  }
  return "probe";
}

std::string ProbeArg::Text() const {
  std::string out = name + "=" + fetch;
  if (!type.empty()) out += ":" + type;
  return out;
}

std::string ProbeDefinition::FetchArgs() const {
  std::vector<std::string> parts;
  for (const ProbeArg& a : args) parts.push_back(a.Text());
  return absl::StrJoin(parts, " ");
}

std::string ProbeDefinition::KernelPlace() const {
  if (has_address) return absl::StrFormat("0x%x", address);
  std::string out = module.empty() ? symbol : module + ":" + symbol;
  if (offset != 0) out += absl::StrFormat("+%u", offset);
  return out;
}

bool IsGoodProbeName(std::string_view name) {
  if (name.empty() || name.size() >= kMaxEventNameLen) return false;
  if (!std::isalpha(static_cast<unsigned char>(name[0])) && name[0] != '_') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

absl::StatusOr<ProbeDefinition> ParseProbeDefinition(std::string_view text) {
  ProbeDefinition def;
  def.text = std::string(TrimText(text));
  std::vector<std::string_view> words = Words(def.text);
  if (words.empty()) return BadDefinition(text, "empty definition");
  if (words.size() < 2) return BadDefinition(text, "the probe place (SYMBOL or /path:SYMBOL) is missing");
  if (words.size() - 2 > kMaxProbeArgs) {
    return BadDefinition(text, absl::StrFormat("more than %d arguments", kMaxProbeArgs));
  }

  // Head: p | r[MAXACTIVE], then optionally :[GRP/][EVENT].
  std::string_view head = words[0];
  size_t colon = head.find(':');
  std::string_view kind = head.substr(0, colon);
  if (kind.empty() || (kind[0] != 'p' && kind[0] != 'r')) {
    if (!kind.empty() && kind[0] == '-') {
      return BadDefinition(text, "removing probes is not done with --probe: iotrace removes "
                                 "its own probes, and 'iotrace reset' removes leftovers");
    }
    return BadDefinition(text, absl::StrFormat(
                                   "unknown probe kind '%s' (p = probe, r = return probe; "
                                   "event, synthetic and fprobe events are not supported)",
                                   kind));
  }
  bool is_return = kind[0] == 'r';
  if (kind.size() > 1) {
    uint64_t maxactive = 0;
    if (!is_return || !ParseNumber(kind.substr(1), &maxactive)) {
      return BadDefinition(text, absl::StrFormat("unknown probe kind '%s'", kind));
    }
    if (maxactive == 0 || maxactive > kMaxRetprobeActive) {
      return BadDefinition(text,
                           absl::StrFormat("MAXACTIVE must be 1..%d", kMaxRetprobeActive));
    }
    def.maxactive = static_cast<uint32_t>(maxactive);
  }
  if (colon != std::string_view::npos) {
    std::string_view name = head.substr(colon + 1);
    size_t slash = name.find('/');
    if (slash != std::string_view::npos) {
      def.group = std::string(name.substr(0, slash));
      name = name.substr(slash + 1);
      if (!IsGoodProbeName(def.group)) {
        return BadDefinition(text, absl::StrFormat(
                                       "group '%s' is not a C identifier of at most %d chars",
                                       def.group, kMaxEventNameLen - 1));
      }
    }
    def.event = std::string(name);
    if (!def.event.empty() && !IsGoodProbeName(def.event)) {
      return BadDefinition(text, absl::StrFormat(
                                     "event name '%s' is not a C identifier of at most %d chars",
                                     def.event, kMaxEventNameLen - 1));
    }
    if (def.group.empty() && def.event.empty()) {
      return BadDefinition(text, "nothing after ':' (give [GROUP/]NAME or drop the ':')");
    }
  }

  // Place.
  std::string_view place = words[1];
  constexpr std::string_view kReturnSuffix = "%return";
  if (place.size() > kReturnSuffix.size() &&
      place.substr(place.size() - kReturnSuffix.size()) == kReturnSuffix) {
    if (is_return) return BadDefinition(text, "use either r: or %return, not both");
    is_return = true;
    place.remove_suffix(kReturnSuffix.size());
  }
  const bool is_user = place.find('/') != std::string_view::npos;
  if (is_user) {
    def.type = is_return ? ProbeType::kUretprobe : ProbeType::kUprobe;
    if (def.maxactive != 0) return BadDefinition(text, "MAXACTIVE is for kretprobes only");
    size_t last = place.rfind(':');
    if (last == std::string_view::npos || last + 1 == place.size()) {
      return BadDefinition(text, "a uprobe place is /path/to/binary:SYMBOL[+OFFS] or "
                                 "/path/to/binary:0xOFFSET");
    }
    def.path = std::string(place.substr(0, last));
    std::string_view target = place.substr(last + 1);
    if (target.find('(') != std::string_view::npos) {
      return BadDefinition(text, "reference counter offsets '(REF_CTR_OFFSET)' are not supported");
    }
    if (std::isdigit(static_cast<unsigned char>(target[0]))) {
      if (!ParseNumber(target, &def.offset)) {
        return BadDefinition(text, absl::StrFormat("bad file offset '%s'", target));
      }
    } else if (!SplitSymbolOffset(target, &def.symbol, &def.offset)) {
      return BadDefinition(text, absl::StrFormat("bad symbol '%s' (SYMBOL[+OFFS])", target));
    }
  } else {
    def.type = is_return ? ProbeType::kKretprobe : ProbeType::kKprobe;
    std::string_view target = place;
    if (target.size() > 2 && target[0] == '0' && (target[1] == 'x' || target[1] == 'X')) {
      if (!ParseNumber(target, &def.address)) {
        return BadDefinition(text, absl::StrFormat("bad address '%s'", target));
      }
      def.has_address = true;
    } else {
      size_t mod = target.find(':');
      if (mod != std::string_view::npos) {
        def.module = std::string(target.substr(0, mod));
        target = target.substr(mod + 1);
        if (!IsSymbolName(def.module)) {
          return BadDefinition(text, absl::StrFormat("bad module name '%s'", def.module));
        }
      }
      if (!SplitSymbolOffset(target, &def.symbol, &def.offset)) {
        return BadDefinition(
            text, absl::StrFormat("bad kernel symbol '%s' ([MOD:]SYMBOL[+OFFS] or 0xADDRESS)",
                                  target));
      }
    }
    if (is_return && def.offset != 0) {
      return BadDefinition(text, "a return probe goes on the function itself: no +OFFS");
    }
  }

  // Arguments.
  int index = 0;
  for (size_t w = 2; w < words.size(); ++w) {
    ++index;
    std::string_view word = words[w];
    ProbeArg arg;
    size_t eq = word.find('=');
    std::string_view body = word;
    if (eq != std::string_view::npos && word[0] != '\\') {
      arg.name = std::string(word.substr(0, eq));
      body = word.substr(eq + 1);
      if (!IsGoodProbeName(arg.name)) {
        return BadDefinition(text, absl::StrFormat(
                                       "argument name '%s' is not a C identifier", arg.name));
      }
    } else {
      arg.name = absl::StrFormat("arg%d", index);  // the kernel's name for a bare FETCHARG
    }
    // The type follows the first ':' (after the closing quote of an immediate string).
    size_t type_from = 0;
    if (body.size() > 1 && body[0] == '\\' && body[1] == '"') {
      size_t close = body.find('"', 2);
      type_from = close == std::string_view::npos ? body.size() : close;
    }
    size_t tcolon = body.find(':', type_from);
    arg.fetch = std::string(body.substr(0, tcolon));
    if (tcolon != std::string_view::npos) arg.type = std::string(body.substr(tcolon + 1));
    for (const char* reserved : kReservedArgNames) {
      if (arg.name == reserved) {
        return BadDefinition(text, absl::StrFormat(
                                       "argument name '%s' is reserved for the event's own "
                                       "fields", arg.name));
      }
    }
    for (const ProbeArg& other : def.args) {
      if (other.name == arg.name) {
        return BadDefinition(text,
                             absl::StrFormat("argument name '%s' is used twice", arg.name));
      }
    }
    FetchInfo info;
    absl::Status fs = CheckFetch(arg.fetch, def, 0, &info);
    if (!fs.ok()) return BadDefinition(text, std::string(fs.message()));
    if (tcolon != std::string_view::npos) {
      absl::Status ts = CheckType(arg.type, def, info);
      if (!ts.ok()) return BadDefinition(text, std::string(ts.message()));
    }
    def.args.push_back(std::move(arg));
  }
  return def;
}

std::string DefaultProbeGroup() { return absl::StrFormat("iotrace_%d", ::getpid()); }

std::string DefaultProbeEvent(const ProbeDefinition& def) {
  const char prefix = def.IsReturn() ? 'r' : 'p';
  if (def.IsKernel()) {
    if (def.has_address) return Truncate(absl::StrFormat("%c_0x%x", prefix, def.address));
    std::string sym = def.module.empty() ? def.symbol : def.module + "_" + def.symbol;
    return Truncate(Sanitize(absl::StrFormat("%c_%s_%u", prefix, sym, def.offset)));
  }
  // As the kernel: the binary's base name up to its first '.', '-' or '_'.
  std::string_view base = def.path;
  size_t slash = base.rfind('/');
  if (slash != std::string_view::npos) base = base.substr(slash + 1);
  base = base.substr(0, base.find_first_of(".-_"));
  std::string name;
  if (def.symbol.empty()) {
    name = absl::StrFormat("%c_%s_0x%x", prefix, base, def.offset);
  } else if (def.offset == 0) {
    name = absl::StrFormat("%c_%s_%s", prefix, base, def.symbol);
  } else {
    name = absl::StrFormat("%c_%s_%s_%u", prefix, base, def.symbol, def.offset);
  }
  return Truncate(Sanitize(name));
}

ProbeSupport DetectProbeSupport(const std::string& tracefs) {
  ProbeSupport s;
  s.kprobes = FileExists(tracefs + "/kprobe_events");
  s.uprobes = FileExists(tracefs + "/uprobe_events");
  s.dynamic_events = FileExists(tracefs + "/dynamic_events");
  return s;
}

absl::Status CheckProbeSupported(const ProbeDefinition& def, const ProbeSupport& support,
                                 const std::string& tracefs) {
  if (def.IsKernel() && !support.kprobes) {
    std::string hint =
        "kprobes need a kernel built with CONFIG_KPROBES=y and CONFIG_KPROBE_EVENTS=y; here, "
        "use the kernel's tracepoints ('iotrace list')";
    if (support.uprobes) hint += " or, for user-space code, a uprobe (/path/to/binary:SYMBOL)";
    return WithHint(
        absl::FailedPreconditionError(absl::StrFormat(
            "%s '%s': this kernel has no kprobe support (CONFIG_KPROBE_EVENTS is off: "
            "%s/kprobe_events does not exist)",
            ProbeTypeName(def.type), def.text, tracefs)),
        hint);
  }
  if (!def.IsKernel() && !support.uprobes) {
    return WithHint(absl::FailedPreconditionError(absl::StrFormat(
                        "%s '%s': this kernel has no uprobe support (CONFIG_UPROBE_EVENTS is "
                        "off: %s/uprobe_events does not exist)",
                        ProbeTypeName(def.type), def.text, tracefs)),
                    "uprobes need a kernel built with CONFIG_UPROBES=y and "
                    "CONFIG_UPROBE_EVENTS=y");
  }
  return absl::OkStatus();
}

absl::Status ValidateKprobeTarget(const ProbeDefinition& def, const Kallsyms& kallsyms,
                                  const absl::flat_hash_set<std::string>* traceable) {
  if (!def.IsKernel()) return absl::OkStatus();
  if (def.has_address) {
    if (kallsyms.addresses_hidden()) return absl::OkStatus();
    const KernelSymbol* at = kallsyms.SymbolAt(def.address);
    if (at == nullptr || !at->IsText()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "kprobe '%s': address 0x%x is not inside a kernel function", def.text, def.address));
    }
    return absl::OkStatus();
  }
  std::vector<const KernelSymbol*> hits = kallsyms.Find(def.symbol, def.module);
  if (hits.empty()) {
    if (!def.module.empty() && !kallsyms.Find(def.symbol).empty()) {
      return absl::NotFoundError(absl::StrFormat(
          "kprobe '%s': '%s' is not in module '%s'", def.text, def.symbol, def.module));
    }
    absl::Status nf = absl::NotFoundError(absl::StrFormat(
        "kprobe '%s': no kernel symbol '%s' in kallsyms", def.text, def.symbol));
    std::vector<std::string> near = SuggestNames(def.symbol, kallsyms.TextNames());
    if (!near.empty()) return WithHint(nf, "did you mean " + absl::StrJoin(near, ", ") + "?");
    return nf;
  }
  std::vector<const KernelSymbol*> text;
  for (const KernelSymbol* s : hits) {
    if (!s->IsText()) continue;
    if (std::none_of(text.begin(), text.end(),
                     [&](const KernelSymbol* t) { return t->address == s->address; })) {
      text.push_back(s);
    }
  }
  if (text.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "kprobe '%s': '%s' is not a function (kallsyms type '%c')", def.text, def.symbol,
        hits[0]->type));
  }
  if (text.size() > 1 && !kallsyms.addresses_hidden()) {
    std::vector<std::string> addrs;
    for (const KernelSymbol* s : text) addrs.push_back(absl::StrFormat("0x%x", s->address));
    return WithHint(absl::FailedPreconditionError(absl::StrFormat(
                        "kprobe '%s': symbol '%s' is not unique (%d functions: %s); the kernel "
                        "refuses ambiguous probe symbols",
                        def.text, def.symbol, text.size(), absl::StrJoin(addrs, ", "))),
                    "probe one of them by address: 'p:NAME 0xADDRESS'");
  }
  if (traceable != nullptr && !traceable->contains(def.symbol)) {
    return WithHint(absl::FailedPreconditionError(absl::StrFormat(
                        "kprobe '%s': '%s' cannot be probed: it is not in "
                        "available_filter_functions (notrace or blacklisted), and the kernel "
                        "refuses kprobe events there",
                        def.text, def.symbol)),
                    "probe its caller, or a tracepoint near it ('iotrace list')");
  }
  if (!kallsyms.addresses_hidden() && def.offset != 0) {
    uint64_t start = text[0]->address;
    uint64_t next = kallsyms.NextAddressAfter(start);
    if (next != 0 && def.offset >= next - start) {
      const KernelSymbol* after = kallsyms.SymbolAt(next);
      return absl::OutOfRangeError(absl::StrFormat(
          "kprobe '%s': offset +0x%x is outside %s, which is 0x%x bytes long (next symbol: %s)",
          def.text, def.offset, def.symbol, next - start, after ? after->name : "?"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<UprobeTarget> ResolveUprobeTarget(const ProbeDefinition& def) {
  if (def.IsKernel()) return absl::InvalidArgumentError("not a uprobe: " + def.text);
  std::unique_ptr<char, FreeDeleter> real(::realpath(def.path.c_str(), nullptr));
  if (!real) {
    return Annotate(ErrnoError(errno, "find the binary", def.path),
                    absl::StrFormat("%s '%s'", ProbeTypeName(def.type), def.text));
  }
  UprobeTarget target;
  target.path = real.get();
  struct stat st;
  if (::stat(target.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s '%s': %s is not a regular file", ProbeTypeName(def.type), def.text, target.path));
  }
  if (def.symbol.empty()) {
    if (def.offset >= static_cast<uint64_t>(st.st_size)) {
      return absl::OutOfRangeError(absl::StrFormat(
          "%s '%s': file offset 0x%x is past the end of %s (%d bytes)", ProbeTypeName(def.type),
          def.text, def.offset, target.path, st.st_size));
    }
    target.file_offset = def.offset;
    return target;
  }
  auto elf = ElfSymbols::Open(target.path);
  if (!elf.ok()) {
    return Annotate(elf.status(), absl::StrFormat("%s '%s'", ProbeTypeName(def.type), def.text));
  }
  auto offset = elf->SymbolFileOffset(def.symbol, def.offset);
  if (!offset.ok()) {
    return Annotate(offset.status(),
                    absl::StrFormat("%s '%s'", ProbeTypeName(def.type), def.text));
  }
  target.file_offset = *offset;
  return target;
}

// ---------------------------------------------------------------------------------------------
// DynamicProbes

absl::StatusOr<std::unique_ptr<DynamicProbes>> DynamicProbes::Create(
    const std::vector<std::string>& definitions, const DynamicProbeOptions& options) {
  std::unique_ptr<DynamicProbes> probes(new DynamicProbes());
  if (definitions.empty()) return probes;
  // Syntax first: nothing is looked at or written while any definition is wrong.
  std::vector<ProbeDefinition> defs;
  for (const std::string& text : definitions) {
    IOTRACE_ASSIGN_OR_RETURN(ProbeDefinition def, ParseProbeDefinition(text));
    defs.push_back(std::move(def));
  }
  IOTRACE_ASSIGN_OR_RETURN(probes->tracefs_, FindTracefs(options.tracefs));
  const ProbeSupport support = DetectProbeSupport(probes->tracefs_);
  for (const ProbeDefinition& def : defs) {
    IOTRACE_RETURN_IF_ERROR(CheckProbeSupported(def, support, probes->tracefs_));
  }

  // Targets.
  std::unique_ptr<Kallsyms> kallsyms;
  std::unique_ptr<absl::flat_hash_set<std::string>> traceable;
  std::vector<UprobeTarget> targets(defs.size());
  for (size_t i = 0; i < defs.size(); ++i) {
    const ProbeDefinition& def = defs[i];
    if (def.IsKernel()) {
      if (!kallsyms) {
        auto k = Kallsyms::Load(options.kallsyms_path);
        if (!k.ok()) return Annotate(k.status(), "check kprobe symbols");
        kallsyms = std::make_unique<Kallsyms>(std::move(*k));
        std::string path = options.traceable_path.empty()
                               ? probes->tracefs_ + "/available_filter_functions"
                               : options.traceable_path;
        // Unreadable on some kernels even for root: then the kernel alone decides.
        auto t = LoadTraceableFunctions(path);
        if (t.ok()) traceable = std::make_unique<absl::flat_hash_set<std::string>>(std::move(*t));
      }
      IOTRACE_RETURN_IF_ERROR(ValidateKprobeTarget(def, *kallsyms, traceable.get()));
    } else {
      IOTRACE_ASSIGN_OR_RETURN(targets[i], ResolveUprobeTarget(def));
    }
  }

  // Names: unique among ours, and not taken in tracefs (we never touch probes we did not make).
  const std::string default_group =
      options.default_group.empty() ? DefaultProbeGroup() : options.default_group;
  std::vector<std::pair<std::string, std::string>> names;
  for (const ProbeDefinition& def : defs) {
    std::string group = def.group.empty() ? default_group : def.group;
    std::string event = def.event.empty() ? DefaultProbeEvent(def) : def.event;
    auto key = std::make_pair(group, event);
    if (std::find(names.begin(), names.end(), key) != names.end()) {
      return WithHint(absl::InvalidArgumentError(absl::StrFormat(
                          "two probes are named %s:%s", group, event)),
                      "name them: 'p:NAME ...'");
    }
    if (FileExists(probes->tracefs_ + "/events/" + group + "/" + event)) {
      absl::Status s = absl::AlreadyExistsError(
          absl::StrFormat("probe event %s:%s exists already", group, event));
      if (group.rfind("iotrace_", 0) == 0) {
        return WithHint(s, "a killed iotrace left it behind: run 'iotrace reset'");
      }
      return WithHint(s, "give the probe another name or group: 'p:GROUP/NAME ...'");
    }
    names.push_back(key);
  }

  for (size_t i = 0; i < defs.size(); ++i) {
    IOTRACE_RETURN_IF_ERROR(probes->CreateOne(defs[i], names[i].first, names[i].second,
                                              targets[i].path, targets[i].file_offset));
  }
  IOTRACE_ASSIGN_OR_RETURN(probes->events_,
                           ResolveEvents(probes->tracefs_, probes->EventNames()));
  return probes;
}

absl::Status DynamicProbes::CreateOne(const ProbeDefinition& def, const std::string& group,
                                      const std::string& event, const std::string& path,
                                      uint64_t file_offset) {
  const std::string args = def.FetchArgs();
  const char* fetchargs = args.empty() ? nullptr : args.c_str();
  errno = 0;
  tracefs_dynevent* handle =
      def.IsKernel()
          ? iotrace_tfs_kprobe_alloc(group.c_str(), event.c_str(), def.KernelPlace().c_str(),
                                     fetchargs, def.IsReturn() ? 1 : 0, def.maxactive)
          : iotrace_tfs_uprobe_alloc(group.c_str(), event.c_str(), path.c_str(), file_offset,
                                     fetchargs, def.IsReturn() ? 1 : 0);
  if (handle == nullptr) {
    return ErrnoError(errno ? errno : ENOMEM, "prepare probe", def.text);
  }
  iotrace_tfs_error_clear(nullptr);
  errno = 0;
  if (iotrace_tfs_dynevent_create(handle) != 0) {
    int err = errno ? errno : EINVAL;
    iotrace_tfs_dynevent_free(handle);
    absl::Status s = ErrnoError(
        err, absl::StrFormat("create %s", ProbeTypeName(def.type)),
        absl::StrFormat("%s:%s from '%s'", group, event, def.text));
    std::string kernel = TracefsErrorLast(nullptr);
    if (!kernel.empty()) {
      // error_log is "[time] source: error: MESSAGE\n  Command: ...\n  ^": keep all of it,
      // indented, since the caret points at the rejected part.
      std::string indented;
      for (std::string_view line : SplitText(kernel, '\n')) {
        absl::StrAppendFormat(&indented, "\n    %s", line);
      }
      return absl::Status(s.code(), std::string(s.message()) + "; the kernel says:" + indented);
    }
    return s;
  }
  created_.push_back({group, event, handle});
  return absl::OkStatus();
}

DynamicProbes::~DynamicProbes() {
  absl::Status s = Remove();
  if (!s.ok()) {
    std::fprintf(stderr, "iotrace: warning: %s\nhint: run 'iotrace reset' to remove it\n",
                 std::string(s.message()).c_str());
  }
}

std::vector<std::string> DynamicProbes::EventNames() const {
  std::vector<std::string> out;
  for (const Created& c : created_) out.push_back(c.group + ":" + c.event);
  return out;
}

absl::Status DynamicProbes::Remove() {
  absl::Status first;
  // Newest first, so a half-built set unwinds in reverse.
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
    errno = 0;
    int ret = iotrace_tfs_dynevent_destroy(it->handle, /*force=*/1);
    int err = errno ? errno : EBUSY;
    iotrace_tfs_dynevent_free(it->handle);
    it->handle = nullptr;
    if (ret != 0 && first.ok()) {
      first = ErrnoError(err, "remove probe event", it->group + ":" + it->event);
      if (err == EBUSY) first = Annotate(first, "still in use (an open perf event?)");
    }
  }
  created_.clear();
  return first;
}

std::vector<ExistingProbe> ListProbeEvents(const std::string& tracefs) {
  std::vector<ExistingProbe> out;
  if (!FindTracefs(tracefs).ok()) return out;
  const ProbeSupport support = DetectProbeSupport(tracefs);
  if (!support.uprobes && !support.kprobes) return out;
  tracefs_dynevent** list = iotrace_tfs_probe_events(support.kprobes ? 1 : 0);
  if (list == nullptr) return out;
  for (size_t i = 0; list[i] != nullptr; ++i) {
    char* system = nullptr;
    char* event = nullptr;
    int type = iotrace_tfs_dynevent_names(list[i], &system, &event);
    if (type > 0 && event != nullptr) {
      ProbeType t = type == 1   ? ProbeType::kKprobe
                    : type == 2 ? ProbeType::kKretprobe
                    : type == 8 ? ProbeType::kUretprobe
                                : ProbeType::kUprobe;
      out.push_back({system ? system : "", event, t});
    }
    std::free(system);
    std::free(event);
  }
  iotrace_tfs_dynevent_list_free(list);
  return out;
}

absl::Status RemoveProbeEvent(const std::string& tracefs, const std::string& group,
                              const std::string& event) {
  IOTRACE_RETURN_IF_ERROR(FindTracefs(tracefs).status());
  const ProbeSupport support = DetectProbeSupport(tracefs);
  tracefs_dynevent** list = iotrace_tfs_probe_events(support.kprobes ? 1 : 0);
  absl::Status result = absl::NotFoundError(
      absl::StrFormat("remove probe event %s:%s: no such probe", group, event));
  for (size_t i = 0; list != nullptr && list[i] != nullptr; ++i) {
    char* system = nullptr;
    char* name = nullptr;
    bool match = iotrace_tfs_dynevent_names(list[i], &system, &name) > 0 && system &&
                 name && group == system && event == name;
    std::free(system);
    std::free(name);
    if (!match) continue;
    errno = 0;
    if (iotrace_tfs_dynevent_destroy(list[i], /*force=*/1) != 0) {
      int err = errno ? errno : EBUSY;
      result = ErrnoError(err, "remove probe event", group + ":" + event);
    } else {
      result = absl::OkStatus();
    }
    break;
  }
  iotrace_tfs_dynevent_list_free(list);
  return result;
}

}  // namespace iotrace
