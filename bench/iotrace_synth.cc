// iotrace_synth: writes a synthetic recording of a big machine (bench/synth_recording.h) and,
// beside it, PATH.expected.json: the counts a correct `iotrace report` of it shows.
//
//   iotrace_synth -o PATH [--format perf|trace.dat] [--cpus N] [--devices N] [--in-flight N]
//                 [--events N] [--seed N] [--step-ns N] [--skew-ns N] [--wake-bytes N]
//                 [--drain-ns N] [--flush-ns N] [--formats DIR]
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#include "synth_recording.h"

namespace {

int Usage(const char* why) {
  std::fprintf(stderr,
               "iotrace_synth: %s\nusage: iotrace_synth -o PATH [--format perf|trace.dat] "
               "[--cpus N] [--devices N] [--in-flight N] [--events N] [--seed N] "
               "[--step-ns N] [--skew-ns N] [--wake-bytes N] [--drain-ns N] [--flush-ns N] "
               "[--formats DIR]\n",
               why);
  return 2;
}

bool ParseCount(const char* text, uint64_t* out) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);  // 1e8 as well as 100000000
  if (end == text || *end != '\0' || v < 0 || v > 1e15) return false;
  *out = static_cast<uint64_t>(v);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  iotrace::bench::SynthOptions o;
  o.formats_dir = IOTRACE_FIXTURES "/formats/6.18";
  std::string path;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) return Usage("a flag without its value");
    const char* value = argv[++i];
    uint64_t n = 0;
    if (flag == "-o") {
      path = value;
    } else if (flag == "--format") {
      const std::string_view f = value;
      if (f != "perf" && f != "trace.dat") return Usage("--format: perf or trace.dat");
      o.trace_dat = f == "trace.dat";
    } else if (flag == "--formats") {
      o.formats_dir = value;
    } else if (!ParseCount(value, &n)) {
      return Usage("expected a count");
    } else if (flag == "--cpus") {
      o.cpus = static_cast<uint32_t>(n);
    } else if (flag == "--devices") {
      o.devices = static_cast<uint32_t>(n);
    } else if (flag == "--in-flight") {
      o.in_flight = n;
    } else if (flag == "--events") {
      o.events = n;
    } else if (flag == "--seed") {
      o.seed = static_cast<uint32_t>(n);
    } else if (flag == "--step-ns") {
      o.step_ns = n;
    } else if (flag == "--skew-ns") {
      o.skew_ns = n;
    } else if (flag == "--wake-bytes") {
      o.wake_bytes = n;
    } else if (flag == "--drain-ns") {
      o.drain_ns = n;
    } else if (flag == "--flush-ns") {
      o.flush_interval_ns = n;
    } else {
      return Usage("unknown flag");
    }
  }
  if (path.empty()) return Usage("-o PATH is required");
  if (o.cpus > 4096 || o.devices > (1u << 20)) return Usage("too many CPUs or devices");
  iotrace::bench::SynthExpected expected;
  absl::Status st = iotrace::bench::WriteSynthRecording(path, o, &expected);
  if (!st.ok()) {
    std::fprintf(stderr, "iotrace_synth: %s: %s\n", path.c_str(), st.ToString().c_str());
    return 1;
  }
  std::ofstream json(path + ".expected.json");
  json << iotrace::bench::SynthExpectedJson(o, expected);
  json.close();
  if (!json) {
    std::fprintf(stderr, "iotrace_synth: cannot write %s.expected.json\n", path.c_str());
    return 1;
  }
  return 0;
}
