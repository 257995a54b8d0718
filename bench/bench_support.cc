#include "bench_support.h"

#include <cstring>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"

namespace iotrace::bench {
namespace {
bool g_smoke = false;
}  // namespace

bool Smoke() { return g_smoke; }

}  // namespace iotrace::bench

int main(int argc, char** argv) {
  std::vector<char*> args;
  static char min_time[] = "--benchmark_min_time=0.01";
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--iotrace_smoke") == 0) {
      iotrace::bench::g_smoke = true;
      args.push_back(min_time);
    } else {
      args.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
