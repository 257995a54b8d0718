#include "iotrace/sys/elf_symbols.h"

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "iotrace/base/status.h"

// A function of this test binary whose bytes we find again through the ELF file.
extern "C" __attribute__((noinline, used)) int IotraceElfTestTarget(int x) {
  __asm__ volatile("" ::: "memory");
  return x * 3 + 1;
}

namespace iotrace {
namespace {

std::string SelfExe() {
  std::ifstream in("/proc/self/exe", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ElfSymbolsTest, SymbolFileOffsetPointsAtTheFunctionsBytesInThisBinary) {
  auto elf = ElfSymbols::Open("/proc/self/exe");
  ASSERT_TRUE(elf.ok()) << elf.status();
  EXPECT_TRUE(elf->is_64bit() || sizeof(void*) == 4);
  auto sym = elf->FindFunction("IotraceElfTestTarget");
  ASSERT_TRUE(sym.ok()) << sym.status();
  EXPECT_EQ(sym->type, STT_FUNC);
  ASSERT_GT(sym->size, 0u);
  auto offset = elf->SymbolFileOffset("IotraceElfTestTarget", 0);
  ASSERT_TRUE(offset.ok()) << offset.status();
  std::string file = SelfExe();
  const size_t n = std::min<uint64_t>(sym->size, 16);
  ASSERT_LE(*offset + n, file.size());
  // The code the CPU runs is the code at that file offset: what a uprobe there would hit.
  const void* in_memory = reinterpret_cast<const void*>(&IotraceElfTestTarget);
  EXPECT_EQ(std::memcmp(file.data() + *offset, in_memory, n), 0);
  EXPECT_EQ(IotraceElfTestTarget(2), 7);
  // An offset inside the function moves the file offset by as much.
  auto inside = elf->SymbolFileOffset("IotraceElfTestTarget", 1);
  ASSERT_TRUE(inside.ok());
  EXPECT_EQ(*inside, *offset + 1);
  auto past = elf->SymbolFileOffset("IotraceElfTestTarget", sym->size);
  EXPECT_EQ(past.status().code(), absl::StatusCode::kOutOfRange);
}

// A hand-built ELF64: two PT_LOAD segments with different vaddr->offset deltas, a symtab with
// functions, data, an undefined symbol and a name bound to two addresses.
class HandBuiltElf : public ::testing::Test {
 protected:
  static constexpr uint64_t kSymtabOff = 0x200, kStrtabOff = 0x300, kShOff = 0x400;

  void SetUp() override {
    bytes_.assign(0x1100, '\0');
    Elf64_Ehdr eh{};
    std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_EXEC;
    eh.e_machine = EM_X86_64;
    eh.e_version = EV_CURRENT;
    eh.e_phoff = sizeof(Elf64_Ehdr);
    eh.e_shoff = kShOff;
    eh.e_ehsize = sizeof(Elf64_Ehdr);
    eh.e_phentsize = sizeof(Elf64_Phdr);
    eh.e_phnum = 2;
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = 3;
    Put(0, eh);
    Elf64_Phdr text{PT_LOAD, PF_R | PF_X, 0, 0x400000, 0x400000, 0x1000, 0x1000, 0x1000};
    Elf64_Phdr data{PT_LOAD, PF_R | PF_W, 0x1000, 0x601000, 0x601000, 0x100, 0x200, 0x1000};
    Put(eh.e_phoff, text);
    Put(eh.e_phoff + sizeof(Elf64_Phdr), data);
    const char strtab[] = "\0foo\0bar\0table\0dup\0ext\0";
    std::memcpy(&bytes_[kStrtabOff], strtab, sizeof(strtab));
    Elf64_Sym syms[] = {
        {},
        {1, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), 0, 1, 0x400100, 0x20},   // foo
        {5, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), 0, 2, 0x601010, 0x10},   // bar
        {9, ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT), 0, 2, 0x601080, 8},    // table
        {15, ELF64_ST_INFO(STB_LOCAL, STT_FUNC), 0, 1, 0x400200, 0x10},   // dup
        {15, ELF64_ST_INFO(STB_LOCAL, STT_FUNC), 0, 1, 0x400300, 0x10},   // dup again
        {19, ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), 0, SHN_UNDEF, 0, 0},    // ext (undefined)
    };
    std::memcpy(&bytes_[kSymtabOff], syms, sizeof(syms));
    Elf64_Shdr null_sh{};
    Elf64_Shdr symtab{};
    symtab.sh_type = SHT_SYMTAB;
    symtab.sh_offset = kSymtabOff;
    symtab.sh_size = sizeof(syms);
    symtab.sh_link = 2;
    symtab.sh_entsize = sizeof(Elf64_Sym);
    Elf64_Shdr strsec{};
    strsec.sh_type = SHT_STRTAB;
    strsec.sh_offset = kStrtabOff;
    strsec.sh_size = sizeof(strtab);
    Put(kShOff, null_sh);
    Put(kShOff + sizeof(Elf64_Shdr), symtab);
    Put(kShOff + 2 * sizeof(Elf64_Shdr), strsec);
  }
  template <typename T>
  void Put(uint64_t at, const T& v) {
    std::memcpy(&bytes_[at], &v, sizeof(v));
  }
  std::string bytes_;
};

TEST_F(HandBuiltElf, MapsSymbolsThroughTheirOwnSegment) {
  auto elf = ElfSymbols::Parse(bytes_, "hand.elf");
  ASSERT_TRUE(elf.ok()) << elf.status();
  EXPECT_EQ(elf->elf_type(), ET_EXEC);
  ASSERT_EQ(elf->segments().size(), 2u);
  EXPECT_EQ(elf->symbols().size(), 5u);  // undefined and null entries left out
  EXPECT_EQ(*elf->SymbolFileOffset("foo", 0), 0x100u);
  EXPECT_EQ(*elf->SymbolFileOffset("foo", 0x1f), 0x11fu);
  EXPECT_EQ(*elf->SymbolFileOffset("bar", 4), 0x1014u);
  EXPECT_EQ(elf->SymbolFileOffset("foo", 0x20).status().code(), absl::StatusCode::kOutOfRange);
  // Past filesz (bss) has no file bytes.
  EXPECT_EQ(elf->FileOffsetOf(0x601150).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(elf->FileOffsetOf(0x500000).status().code(), absl::StatusCode::kOutOfRange);
}

TEST_F(HandBuiltElf, RejectsDataUndefinedAmbiguousAndUnknownNames) {
  auto elf = ElfSymbols::Parse(bytes_, "hand.elf");
  ASSERT_TRUE(elf.ok());
  auto table = elf->FindFunction("table");
  EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(table.status().message().find("not a function"), std::string::npos);
  auto dup = elf->FindFunction("dup");
  EXPECT_EQ(dup.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(dup.status().message().find("ambiguous"), std::string::npos);
  EXPECT_NE(dup.status().message().find("0x400200"), std::string::npos);
  EXPECT_EQ(elf->FindFunction("ext").status().code(), absl::StatusCode::kNotFound);
  auto near = elf->FindFunction("fooo");
  EXPECT_EQ(near.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(HintOf(near.status()).find("foo"), std::string::npos);
}

TEST_F(HandBuiltElf, EveryTruncationIsAnErrorOrAPartialParseNeverACrash) {
  for (size_t len = 0; len < 0x600; ++len) {
    auto elf = ElfSymbols::Parse(bytes_.substr(0, len), "cut.elf");
    if (len < sizeof(Elf64_Ehdr)) EXPECT_FALSE(elf.ok()) << len;
    // Section headers end at 0x4c0: before that, the file is too short to read them.
    if (len >= sizeof(Elf64_Ehdr) && len < kShOff + 3 * sizeof(Elf64_Shdr)) {
      EXPECT_FALSE(elf.ok()) << len;
    }
  }
}

TEST_F(HandBuiltElf, RejectsCorruptTables) {
  std::string bad_link = bytes_;
  uint32_t link = 9;
  std::memcpy(&bad_link[kShOff + sizeof(Elf64_Shdr) + offsetof(Elf64_Shdr, sh_link)], &link, 4);
  EXPECT_FALSE(ElfSymbols::Parse(bad_link, "x").ok());

  std::string bad_name = bytes_;
  uint32_t name = 0x7fff;
  std::memcpy(&bad_name[kSymtabOff + sizeof(Elf64_Sym) + offsetof(Elf64_Sym, st_name)], &name, 4);
  auto s = ElfSymbols::Parse(bad_name, "x");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("string table"), std::string::npos) << s.status();

  std::string bad_phent = bytes_;
  uint16_t small = 8;
  std::memcpy(&bad_phent[offsetof(Elf64_Ehdr, e_phentsize)], &small, 2);
  EXPECT_FALSE(ElfSymbols::Parse(bad_phent, "x").ok());

  std::string huge_symtab = bytes_;
  uint64_t size = 1ull << 40;
  std::memcpy(&huge_symtab[kShOff + sizeof(Elf64_Shdr) + offsetof(Elf64_Shdr, sh_size)], &size, 8);
  EXPECT_FALSE(ElfSymbols::Parse(huge_symtab, "x").ok());

  EXPECT_FALSE(ElfSymbols::Parse("not an elf file at all", "x").ok());
  std::string big_endian = bytes_;
  big_endian[EI_DATA] = ELFDATA2MSB;
  EXPECT_EQ(ElfSymbols::Parse(big_endian, "x").status().code(),
            absl::StatusCode::kUnimplemented);
  std::string bad_class = bytes_;
  bad_class[EI_CLASS] = 7;
  EXPECT_FALSE(ElfSymbols::Parse(bad_class, "x").ok());
}

TEST(ElfSymbolsOpenTest, MissingFileIsNotFound) {
  auto elf = ElfSymbols::Open("/nonexistent/binary");
  EXPECT_EQ(elf.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace iotrace
