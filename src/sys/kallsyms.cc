#include "iotrace/sys/kallsyms.h"

#include <algorithm>
#include <charconv>

#include "iotrace/base/fd.h"
#include "iotrace/base/text.h"

namespace iotrace {
namespace {

bool ParseHex(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 16) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 16);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// Splits on runs of spaces and tabs.
std::vector<std::string_view> Words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

}  // namespace

absl::StatusOr<Kallsyms> Kallsyms::Load(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  return Parse(*text);
}

Kallsyms Kallsyms::Parse(std::string_view text) {
  Kallsyms k;
  for (std::string_view line : SplitText(text, '\n')) {
    std::vector<std::string_view> w = Words(line);
    KernelSymbol sym;
    if (w.size() < 3 || w.size() > 4 || w[1].size() != 1 || !ParseHex(w[0], &sym.address)) {
      ++k.bad_lines_;
      continue;
    }
    sym.type = w[1][0];
    sym.name = std::string(w[2]);
    if (w.size() == 4) {
      std::string_view mod = w[3];
      if (mod.size() < 2 || mod.front() != '[' || mod.back() != ']') {
        ++k.bad_lines_;
        continue;
      }
      sym.module = std::string(mod.substr(1, mod.size() - 2));
    }
    if (sym.address != 0) k.addresses_hidden_ = false;
    k.symbols_.push_back(std::move(sym));
  }
  std::stable_sort(k.symbols_.begin(), k.symbols_.end(),
                   [](const KernelSymbol& a, const KernelSymbol& b) {
                     return a.address < b.address;
                   });
  for (uint32_t i = 0; i < k.symbols_.size(); ++i) k.by_name_[k.symbols_[i].name].push_back(i);
  return k;
}

std::vector<const KernelSymbol*> Kallsyms::Find(std::string_view name,
                                                std::string_view module) const {
  std::vector<const KernelSymbol*> out;
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return out;
  for (uint32_t i : it->second) {
    if (module.empty() || symbols_[i].module == module) out.push_back(&symbols_[i]);
  }
  return out;
}

uint64_t Kallsyms::NextAddressAfter(uint64_t address) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                             [](uint64_t a, const KernelSymbol& s) { return a < s.address; });
  return it == symbols_.end() ? 0 : it->address;
}

const KernelSymbol* Kallsyms::SymbolAt(uint64_t address) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                             [](uint64_t a, const KernelSymbol& s) { return a < s.address; });
  if (it == symbols_.begin()) return nullptr;
  return &*(it - 1);
}

std::vector<std::string> Kallsyms::TextNames() const {
  std::vector<std::string> out;
  out.reserve(symbols_.size());
  for (const KernelSymbol& s : symbols_) {
    if (s.IsText()) out.push_back(s.name);
  }
  return out;
}

absl::flat_hash_set<std::string> ParseTraceableFunctions(std::string_view text) {
  absl::flat_hash_set<std::string> out;
  for (std::string_view line : SplitText(text, '\n')) {
    line = TrimText(line);
    size_t space = line.find_first_of(" \t");
    if (space != std::string_view::npos) line = line.substr(0, space);
    if (!line.empty()) out.insert(std::string(line));
  }
  return out;
}

absl::StatusOr<absl::flat_hash_set<std::string>> LoadTraceableFunctions(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  return ParseTraceableFunctions(*text);
}

}  // namespace iotrace
