#include "iotrace/sys/elf_symbols.h"

#include <elf.h>

#include <algorithm>
#include <cstring>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "iotrace/base/bytes.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/status.h"
#include "iotrace/sys/tracefs.h"

namespace iotrace {
namespace {

struct Elf64Types {
  using Ehdr = Elf64_Ehdr;
  using Phdr = Elf64_Phdr;
  using Shdr = Elf64_Shdr;
  using Sym = Elf64_Sym;
  static uint8_t SymType(const Sym& s) { return ELF64_ST_TYPE(s.st_info); }
  static uint8_t SymBind(const Sym& s) { return ELF64_ST_BIND(s.st_info); }
};

struct Elf32Types {
  using Ehdr = Elf32_Ehdr;
  using Phdr = Elf32_Phdr;
  using Shdr = Elf32_Shdr;
  using Sym = Elf32_Sym;
  static uint8_t SymType(const Sym& s) { return ELF32_ST_TYPE(s.st_info); }
  static uint8_t SymBind(const Sym& s) { return ELF32_ST_BIND(s.st_info); }
};

absl::Status Corrupt(const std::string& name, const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrFormat("read ELF file %s: %s (file truncated or corrupt)", name, what));
}

// A NUL-terminated string at `offset` inside `table`; false when it runs past the table.
bool StringAt(ByteView table, uint64_t offset, std::string* out) {
  if (offset >= table.size) return false;
  const void* nul = std::memchr(table.data + offset, 0, table.size - offset);
  if (nul == nullptr) return false;
  out->assign(reinterpret_cast<const char*>(table.data + offset),
              static_cast<const uint8_t*>(nul) - (table.data + offset));
  return true;
}

// The bytes of a section, or an empty view when its range does not fit the file.
ByteView SectionBytes(ByteView file, uint64_t offset, uint64_t size) {
  if (!file.Contains(offset, size)) return ByteView();
  return file.Sub(static_cast<size_t>(offset), static_cast<size_t>(size));
}

bool IsFunctionLike(uint8_t type) {
  return type == STT_FUNC || type == STT_GNU_IFUNC || type == STT_NOTYPE;
}

template <typename T>
absl::Status ParseTables(ByteView file, const std::string& name, uint16_t* elf_type,
                         std::vector<ElfLoadSegment>* segments,
                         std::vector<ElfSymbol>* symbols) {
  typename T::Ehdr eh;
  if (!LoadAt(file, 0, &eh)) return Corrupt(name, "short ELF header");
  *elf_type = eh.e_type;

  // Section headers first: extended numbering keeps the real counts in section 0.
  uint64_t shnum = eh.e_shnum;
  uint64_t phnum = eh.e_phnum;
  if (eh.e_shoff != 0 && eh.e_shentsize < sizeof(typename T::Shdr)) {
    return Corrupt(name, "section header entries too small");
  }
  if (eh.e_shoff != 0 && (shnum == 0 || phnum == PN_XNUM)) {
    typename T::Shdr first;
    if (!LoadAt(file, static_cast<size_t>(eh.e_shoff), &first)) {
      return Corrupt(name, "section header 0 outside the file");
    }
    if (shnum == 0) shnum = first.sh_size;
    if (phnum == PN_XNUM) phnum = first.sh_info;
  }

  if (phnum > 0) {
    if (eh.e_phentsize < sizeof(typename T::Phdr)) {
      return Corrupt(name, "program header entries too small");
    }
    for (uint64_t i = 0; i < phnum; ++i) {
      typename T::Phdr ph;
      uint64_t at = uint64_t{eh.e_phoff} + i * eh.e_phentsize;
      if (at < eh.e_phoff || !LoadAt(file, static_cast<size_t>(at), &ph)) {
        return Corrupt(name, absl::StrFormat("program header %u outside the file", i));
      }
      if (ph.p_type != PT_LOAD) continue;
      segments->push_back({ph.p_vaddr, ph.p_offset, ph.p_filesz, ph.p_flags});
    }
  }

  if (eh.e_shoff == 0 || shnum == 0) return absl::OkStatus();  // stripped of sections
  std::vector<typename T::Shdr> sections;
  for (uint64_t i = 0; i < shnum; ++i) {
    typename T::Shdr sh;
    uint64_t at = uint64_t{eh.e_shoff} + i * eh.e_shentsize;
    if (at < eh.e_shoff || !LoadAt(file, static_cast<size_t>(at), &sh)) {
      return Corrupt(name, absl::StrFormat("section header %u outside the file", i));
    }
    sections.push_back(sh);
  }

  // .symtab before .dynsym, so that a name in both keeps its .symtab entry.
  for (uint32_t wanted : {uint32_t{SHT_SYMTAB}, uint32_t{SHT_DYNSYM}}) {
    for (const auto& sh : sections) {
      if (sh.sh_type != wanted) continue;
      uint64_t entsize = sh.sh_entsize ? sh.sh_entsize : sizeof(typename T::Sym);
      if (entsize < sizeof(typename T::Sym)) return Corrupt(name, "symbol entries too small");
      ByteView table = SectionBytes(file, sh.sh_offset, sh.sh_size);
      if (table.empty() && sh.sh_size != 0) return Corrupt(name, "symbol table outside the file");
      if (sh.sh_link >= sections.size()) return Corrupt(name, "symbol table without strings");
      const auto& strsh = sections[sh.sh_link];
      ByteView strings = SectionBytes(file, strsh.sh_offset, strsh.sh_size);
      if (strings.empty() && strsh.sh_size != 0) {
        return Corrupt(name, "symbol string table outside the file");
      }
      const bool dyn = wanted == SHT_DYNSYM;
      for (uint64_t off = 0; off + entsize <= table.size; off += entsize) {
        typename T::Sym sym;
        if (!LoadAt(table, static_cast<size_t>(off), &sym)) break;
        uint8_t type = T::SymType(sym);
        if (sym.st_shndx == SHN_UNDEF || type == STT_SECTION || type == STT_FILE ||
            type == STT_TLS) {
          continue;
        }
        ElfSymbol s;
        if (!StringAt(strings, sym.st_name, &s.name)) {
          return Corrupt(name, "symbol name outside its string table");
        }
        if (s.name.empty()) continue;
        s.value = sym.st_value;
        s.size = sym.st_size;
        s.type = type;
        s.bind = T::SymBind(sym);
        s.from_dynsym = dyn;
        if (dyn) {
          bool dup = std::any_of(symbols->begin(), symbols->end(), [&](const ElfSymbol& o) {
            return !o.from_dynsym && o.name == s.name && o.value == s.value;
          });
          if (dup) continue;
        }
        symbols->push_back(std::move(s));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ElfSymbols> ElfSymbols::Open(const std::string& path) {
  auto bytes = ReadFileToString(path);
  if (!bytes.ok()) return bytes.status();
  return Parse(std::move(*bytes), path);
}

absl::StatusOr<ElfSymbols> ElfSymbols::Parse(std::string bytes, const std::string& name) {
  ByteView file(bytes.data(), bytes.size());
  unsigned char ident[EI_NIDENT];
  if (!LoadAt(file, 0, &ident) || std::memcmp(ident, ELFMAG, SELFMAG) != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("read ELF file %s: not an ELF file (no \\x7fELF magic)", name));
  }
  if (ident[EI_DATA] != ELFDATA2LSB) {
    return absl::UnimplementedError(
        absl::StrFormat("read ELF file %s: big-endian ELF is not supported", name));
  }
  ElfSymbols out;
  out.name_ = name;
  absl::Status s;
  if (ident[EI_CLASS] == ELFCLASS64) {
    out.is_64bit_ = true;
    s = ParseTables<Elf64Types>(file, name, &out.elf_type_, &out.segments_, &out.symbols_);
  } else if (ident[EI_CLASS] == ELFCLASS32) {
    out.is_64bit_ = false;
    s = ParseTables<Elf32Types>(file, name, &out.elf_type_, &out.segments_, &out.symbols_);
  } else {
    return Corrupt(name, absl::StrFormat("unknown ELF class %d", ident[EI_CLASS]));
  }
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<ElfSymbol> ElfSymbols::FindFunction(std::string_view wanted) const {
  std::vector<const ElfSymbol*> hits;
  bool only_data = false;
  for (const ElfSymbol& s : symbols_) {
    if (s.name != wanted) continue;
    if (!IsFunctionLike(s.type)) {
      only_data = true;
      continue;
    }
    if (std::none_of(hits.begin(), hits.end(),
                     [&](const ElfSymbol* h) { return h->value == s.value; })) {
      hits.push_back(&s);
    }
  }
  if (hits.size() == 1) return *hits[0];
  if (hits.size() > 1) {
    std::vector<std::string> addrs;
    for (const ElfSymbol* h : hits) addrs.push_back(absl::StrFormat("0x%x", h->value));
    return WithHint(absl::FailedPreconditionError(absl::StrFormat(
                        "symbol '%s' is ambiguous in %s: %d functions of that name at %s",
                        wanted, name_, hits.size(), absl::StrJoin(addrs, ", "))),
                    "give the file offset instead: /path:0xOFFSET (see objdump -d)");
  }
  if (only_data) {
    return absl::InvalidArgumentError(
        absl::StrFormat("symbol '%s' in %s is not a function", wanted, name_));
  }
  std::vector<std::string> names;
  for (const ElfSymbol& s : symbols_) {
    if (IsFunctionLike(s.type)) names.push_back(s.name);
  }
  absl::Status nf = absl::NotFoundError(
      absl::StrFormat("no function '%s' in %s (%s)", wanted, name_,
                      symbols_.empty() ? "the file has no symbol table: stripped?"
                                       : "not in .symtab or .dynsym"));
  std::vector<std::string> near = SuggestNames(wanted, names);
  if (!near.empty()) return WithHint(nf, "did you mean " + absl::StrJoin(near, ", ") + "?");
  if (symbols_.empty()) return WithHint(nf, "give the file offset instead: /path:0xOFFSET");
  return nf;
}

absl::StatusOr<uint64_t> ElfSymbols::FileOffsetOf(uint64_t vaddr) const {
  for (const ElfLoadSegment& seg : segments_) {
    if (vaddr >= seg.vaddr && vaddr - seg.vaddr < seg.filesz) {
      return vaddr - seg.vaddr + seg.offset;
    }
  }
  if (segments_.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s has no loadable segments: not an executable or shared library", name_));
  }
  return absl::OutOfRangeError(
      absl::StrFormat("address 0x%x is in no loadable segment of %s", vaddr, name_));
}

absl::StatusOr<uint64_t> ElfSymbols::SymbolFileOffset(std::string_view symbol,
                                                      uint64_t offset) const {
  IOTRACE_ASSIGN_OR_RETURN(ElfSymbol sym, FindFunction(symbol));
  if (sym.size != 0 && offset >= sym.size) {
    return absl::OutOfRangeError(absl::StrFormat(
        "offset +0x%x is outside %s in %s (the function is 0x%x bytes long)", offset, symbol,
        name_, sym.size));
  }
  if (sym.value + offset < sym.value) {
    return absl::OutOfRangeError(absl::StrFormat("offset +0x%x overflows", offset));
  }
  return FileOffsetOf(sym.value + offset);
}

}  // namespace iotrace
