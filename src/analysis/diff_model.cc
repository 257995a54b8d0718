// The names the diff model prints.
#include "iotrace/analysis/diff_model.h"

#include <string_view>

namespace iotrace {
namespace {

constexpr std::string_view kStatNames[] = {"p50", "p90", "p99", "p99.9", "max", "mean"};
constexpr std::string_view kVerdictSymbols[] = {"~", "+", "-", "A only", "B only"};
constexpr std::string_view kVerdictNames[] = {"same", "slower", "faster", "a_only", "b_only"};

}  // namespace

std::string_view DiffStatName(DiffStatKind kind) { return kStatNames[static_cast<int>(kind)]; }

std::string_view DiffVerdictSymbol(DiffVerdict v) { return kVerdictSymbols[static_cast<int>(v)]; }

std::string_view DiffVerdictName(DiffVerdict v) { return kVerdictNames[static_cast<int>(v)]; }

}  // namespace iotrace
