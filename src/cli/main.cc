// iotrace: block-I/O latency profiler. One binary, one function per subcommand.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli.h"
#include "iotrace/base/status.h"

namespace iotrace {

int RecordCommand(const std::vector<std::string>& args);
int ReportCommand(const std::vector<std::string>& args);
int ListCommand(const std::vector<std::string>& args);
int DoctorCommand(const std::vector<std::string>& args);
int ResetCommand(const std::vector<std::string>& args);
int LiveCommand(const std::vector<std::string>& args);
int RecoverCommand(const std::vector<std::string>& args);

namespace {

struct Command {
  const char* name;
  int (*run)(const std::vector<std::string>& args);
  const char* summary;
};

constexpr Command kCommands[] = {
    {"record", RecordCommand, "capture block-layer events into perf.data or trace.dat"},
    {"report", ReportCommand, "per-request latency histograms from a recorded file"},
    {"live", LiveCommand, "latency as it happens, straight from the kernel's buffers"},
    {"list", ListCommand, "tracepoints and probe events this kernel offers (-v: fields)"},
    {"doctor", DoctorCommand, "what this machine supports and what iotrace will do"},
    {"reset", ResetCommand, "remove tracefs leftovers (iotrace_* instances and probes)"},
    {"recover", RecoverCommand, "finish the file of a recording that was killed"},
};

void PrintUsage(FILE* out) {
  std::fprintf(out,
               "usage: iotrace [--help] [--version] <command> [<args>]\n\n"
               "Block-I/O latency profiler: records block tracepoints from user space (no kernel\n"
               "module, no BPF) and reports insert->issue->complete latency per disk and op.\n\n"
               "commands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-8s %s\n", c.name, c.summary);
  std::fprintf(out, "\nRun 'iotrace <command> --help' for a command's options.\n");
}

}  // namespace

int ReportError(const absl::Status& status) {
  std::fprintf(stderr, "iotrace: error: %s\n", std::string(status.message()).c_str());
  std::string hint = HintOf(status);
  if (!hint.empty()) std::fprintf(stderr, "hint: %s\n", hint.c_str());
  return IsUsageError(status) ? kExitUsage : kExitRuntime;
}

}  // namespace iotrace

int main(int argc, char** argv) {
  using iotrace::kCommands;
  if (argc < 2) {
    iotrace::PrintUsage(stderr);
    return iotrace::kExitUsage;
  }
  std::string first = argv[1];
  if (first == "-h" || first == "--help" || first == "help") {
    iotrace::PrintUsage(stdout);
    return iotrace::kExitOk;
  }
  if (first == "-V" || first == "--version") {
    std::printf("iotrace %s\n", IOTRACE_VERSION);
    return iotrace::kExitOk;
  }
  for (const auto& c : kCommands) {
    if (first == c.name) {
      std::vector<std::string> args(argv + 2, argv + argc);
      return c.run(args);
    }
  }
  std::fprintf(stderr, "iotrace: error: unknown command '%s'\n", first.c_str());
  std::fprintf(stderr, "hint: run 'iotrace --help' for the list of commands\n");
  return iotrace::kExitUsage;
}
