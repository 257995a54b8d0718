// Function symbols of an ELF executable or shared library and the file offset of an address,
// which is what a uprobe takes. A small parser of its own (ELF32/ELF64, little endian): every
// header, table and string is read through bounds-checked loads; nothing in the file is trusted.
#ifndef IOTRACE_SYS_ELF_SYMBOLS_H_
#define IOTRACE_SYS_ELF_SYMBOLS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace iotrace {

struct ElfSymbol {
  std::string name;
  uint64_t value = 0;   // st_value: the virtual address (executables, shared objects)
  uint64_t size = 0;    // st_size (0 when the file does not say)
  uint8_t type = 0;     // STT_FUNC, STT_OBJECT, STT_GNU_IFUNC, ...
  uint8_t bind = 0;     // STB_GLOBAL, STB_LOCAL, STB_WEAK
  bool from_dynsym = false;
};

struct ElfLoadSegment {
  uint64_t vaddr = 0;
  uint64_t offset = 0;
  uint64_t filesz = 0;
  uint32_t flags = 0;  // PF_X | PF_W | PF_R
};

class ElfSymbols {
 public:
  // Reads `path` whole and parses it.
  static absl::StatusOr<ElfSymbols> Open(const std::string& path);
  // Parses bytes in memory; `name` is used in messages.
  static absl::StatusOr<ElfSymbols> Parse(std::string bytes, const std::string& name);

  // Defined symbols of .symtab and .dynsym (a name in both appears once, the .symtab one).
  const std::vector<ElfSymbol>& symbols() const { return symbols_; }
  const std::vector<ElfLoadSegment>& segments() const { return segments_; }
  bool is_64bit() const { return is_64bit_; }
  uint16_t elf_type() const { return elf_type_; }  // ET_EXEC, ET_DYN, ...

  // The defined function (or ifunc/untyped) symbol `name`; NotFound suggests close names.
  // A name bound to several different addresses is an error (ambiguous).
  absl::StatusOr<ElfSymbol> FindFunction(std::string_view name) const;
  // The file offset of a virtual address, through the PT_LOAD segment whose file-backed part
  // holds it; OutOfRange when none does.
  absl::StatusOr<uint64_t> FileOffsetOf(uint64_t vaddr) const;
  // SYMBOL+OFFSET -> file offset, with OFFSET inside the symbol's size (when it has one).
  absl::StatusOr<uint64_t> SymbolFileOffset(std::string_view symbol, uint64_t offset) const;

 private:
  ElfSymbols() = default;
  std::string name_;
  bool is_64bit_ = true;
  uint16_t elf_type_ = 0;
  std::vector<ElfSymbol> symbols_;
  std::vector<ElfLoadSegment> segments_;
};

}  // namespace iotrace

#endif  // IOTRACE_SYS_ELF_SYMBOLS_H_
