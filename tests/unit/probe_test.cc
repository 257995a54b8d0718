#include "iotrace/sys/probe.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "iotrace/base/status.h"
#include "test_files.h"

namespace iotrace {
namespace {

namespace fs = std::filesystem;

ProbeDefinition ParseOk(const std::string& text) {
  auto def = ParseProbeDefinition(text);
  EXPECT_TRUE(def.ok()) << text << ": " << def.status();
  return def.ok() ? *def : ProbeDefinition();
}

// The message of a rejected definition ("" when it was accepted).
std::string Rejection(const std::string& text) {
  auto def = ParseProbeDefinition(text);
  if (def.ok()) return "";
  EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument) << def.status();
  return std::string(def.status().message());
}

TEST(ProbeDefinitionTest, ParsesKprobeWithGroupOffsetAndTypedArgs) {
  ProbeDefinition d = ParseOk("p:mygrp/myev vfs_read+0x10 fd=%di:s32 buf=+0(%si):string");
  EXPECT_EQ(d.type, ProbeType::kKprobe);
  EXPECT_EQ(d.group, "mygrp");
  EXPECT_EQ(d.event, "myev");
  EXPECT_EQ(d.symbol, "vfs_read");
  EXPECT_EQ(d.offset, 0x10u);
  ASSERT_EQ(d.args.size(), 2u);
  EXPECT_EQ(d.args[0].name, "fd");
  EXPECT_EQ(d.args[0].fetch, "%di");
  EXPECT_EQ(d.args[0].type, "s32");
  EXPECT_EQ(d.args[1].fetch, "+0(%si)");
  EXPECT_EQ(d.args[1].type, "string");
  EXPECT_EQ(d.FetchArgs(), "fd=%di:s32 buf=+0(%si):string");
  EXPECT_EQ(d.KernelPlace(), "vfs_read+16");
}

TEST(ProbeDefinitionTest, ParsesKprobeWithoutNameModuleAndAddressForms) {
  ProbeDefinition bare = ParseOk("p vfs_read");
  EXPECT_TRUE(bare.group.empty());
  EXPECT_TRUE(bare.event.empty());
  EXPECT_EQ(DefaultProbeEvent(bare), "p_vfs_read_0");

  ProbeDefinition mod = ParseOk("p:ev ext4:ext4_sync_file+8");
  EXPECT_EQ(mod.module, "ext4");
  EXPECT_EQ(mod.symbol, "ext4_sync_file");
  EXPECT_EQ(mod.offset, 8u);
  EXPECT_EQ(mod.group, "");
  EXPECT_EQ(mod.event, "ev");
  EXPECT_EQ(mod.KernelPlace(), "ext4:ext4_sync_file+8");

  ProbeDefinition addr = ParseOk("p:at 0xffffffff816d80f4");
  EXPECT_TRUE(addr.has_address);
  EXPECT_EQ(addr.address, 0xffffffff816d80f4u);
  EXPECT_EQ(addr.KernelPlace(), "0xffffffff816d80f4");

  ProbeDefinition only_group = ParseOk("p:grp/ vfs_write");
  EXPECT_EQ(only_group.group, "grp");
  EXPECT_TRUE(only_group.event.empty());
}

TEST(ProbeDefinitionTest, ParsesReturnProbesWithMaxactiveAndPercentReturn) {
  ProbeDefinition r = ParseOk("r16:ret vfs_read ret=$retval:s64");
  EXPECT_EQ(r.type, ProbeType::kKretprobe);
  EXPECT_EQ(r.maxactive, 16u);
  EXPECT_TRUE(r.IsReturn());
  EXPECT_EQ(DefaultProbeEvent(ParseOk("r vfs_read")), "r_vfs_read_0");

  ProbeDefinition pr = ParseOk("p:ret2 vfs_read%return ret=$retval");
  EXPECT_EQ(pr.type, ProbeType::kKretprobe);
  EXPECT_EQ(pr.symbol, "vfs_read");

  ProbeDefinition ur = ParseOk("r:uret /usr/bin/true:main ret=$retval:x32");
  EXPECT_EQ(ur.type, ProbeType::kUretprobe);
}

TEST(ProbeDefinitionTest, ParsesUprobeBySymbolAndByFileOffset) {
  ProbeDefinition u = ParseOk("p:up /usr/lib/x86_64-linux-gnu/libc.so.6:malloc+4 size=%di:u64");
  EXPECT_EQ(u.type, ProbeType::kUprobe);
  EXPECT_EQ(u.path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ(u.symbol, "malloc");
  EXPECT_EQ(u.offset, 4u);
  EXPECT_FALSE(u.IsKernel());

  ProbeDefinition off = ParseOk("p /tmp/a-b.c/prog:0x11c0");
  EXPECT_TRUE(off.symbol.empty());
  EXPECT_EQ(off.offset, 0x11c0u);
  EXPECT_EQ(off.path, "/tmp/a-b.c/prog");
  EXPECT_EQ(DefaultProbeEvent(off), "p_prog_0x11c0");
  // The kernel's rule: the base name up to its first '.', '-' or '_'.
  EXPECT_EQ(DefaultProbeEvent(ParseOk("p /opt/my-tool.bin:do_work")), "p_my_do_work");
  EXPECT_EQ(DefaultProbeEvent(ParseOk("r /bin/ls:main+2")), "r_ls_main_2");
}

TEST(ProbeDefinitionTest, NamesBareFetchArgsLikeTheKernel) {
  ProbeDefinition d = ParseOk("p:x /bin/ls:main %di v=%si %dx");
  ASSERT_EQ(d.args.size(), 3u);
  EXPECT_EQ(d.args[0].name, "arg1");
  EXPECT_EQ(d.args[1].name, "v");
  EXPECT_EQ(d.args[2].name, "arg3");
}

TEST(ProbeDefinitionTest, AcceptsEveryFetchArgForm) {
  for (const char* arg :
       {"a=%ax", "a=%r15", "a=@0x1000", "a=$stack", "a=$stack3", "a=$comm", "a=$comm:string",
        "a=+8(%sp):u64", "a=-8(+0(%sp)):s16", "a=+u8(%di):u32", "a=\\7", "a=\\-3",
        "a=\\\"text\":string", "a=+0(%di):ustring", "a=%di:b4@2/32", "a=+0(%di):x8[4]",
        "a=%di:char", "a=@+0x10"}) {
    EXPECT_EQ(Rejection(std::string("p:x /bin/ls:main ") + arg), "") << arg;
  }
  for (const char* arg : {"a=$arg1", "a=@jiffies", "a=@jiffies+8", "a=%di:symbol",
                          "a=%di:%pd", "a=file->f_mode", "a=%di:symstr"}) {
    EXPECT_EQ(Rejection(std::string("p:x vfs_read ") + arg), "") << arg;
  }
  EXPECT_EQ(Rejection("r:x vfs_read a=$retval a2=$arg2"), "");
}

TEST(ProbeDefinitionTest, RejectsBadHeadsWithTheReason) {
  EXPECT_NE(Rejection(""), "");
  EXPECT_NE(Rejection("p:x").find("place"), std::string::npos);
  EXPECT_NE(Rejection("q:x vfs_read").find("unknown probe kind 'q'"), std::string::npos);
  EXPECT_NE(Rejection("e:x sched.sched_switch").find("not supported"), std::string::npos);
  EXPECT_NE(Rejection("-:grp/x vfs_read").find("iotrace reset"), std::string::npos);
  EXPECT_NE(Rejection("p5:x vfs_read").find("unknown probe kind 'p5'"), std::string::npos);
  EXPECT_NE(Rejection("r0:x vfs_read").find("MAXACTIVE"), std::string::npos);
  EXPECT_NE(Rejection("r5000:x vfs_read").find("MAXACTIVE"), std::string::npos);
  EXPECT_NE(Rejection("r5:x /bin/ls:main").find("kretprobes only"), std::string::npos);
  EXPECT_NE(Rejection("p:1bad vfs_read").find("event name '1bad'"), std::string::npos);
  EXPECT_NE(Rejection("p:my-grp/ev vfs_read").find("group 'my-grp'"), std::string::npos);
  EXPECT_NE(Rejection("p:" + std::string(64, 'a') + " vfs_read").find("event name"),
            std::string::npos);
  EXPECT_EQ(Rejection("p:" + std::string(63, 'a') + " vfs_read"), "");
  EXPECT_NE(Rejection("p: vfs_read").find("nothing after ':'"), std::string::npos);
}

TEST(ProbeDefinitionTest, RejectsBadPlaces) {
  EXPECT_NE(Rejection("r:x vfs_read+4").find("no +OFFS"), std::string::npos);
  EXPECT_NE(Rejection("r:x vfs_read%return").find("not both"), std::string::npos);
  EXPECT_NE(Rejection("p:x vfs_read+zz").find("bad kernel symbol"), std::string::npos);
  EXPECT_NE(Rejection("p:x 0xzz").find("bad address"), std::string::npos);
  EXPECT_NE(Rejection("p:x /bin/ls").find("uprobe place"), std::string::npos);
  EXPECT_NE(Rejection("p:x /bin/ls:").find("uprobe place"), std::string::npos);
  EXPECT_NE(Rejection("p:x /bin/ls:0x12q").find("bad file offset"), std::string::npos);
  EXPECT_NE(Rejection("p:x /bin/ls:ma-in").find("bad symbol"), std::string::npos);
  EXPECT_NE(Rejection("p:x /bin/ls:0x10(0x20)").find("REF_CTR_OFFSET"), std::string::npos);
}

TEST(ProbeDefinitionTest, RejectsBadArgumentsWithTheReason) {
  const std::string u = "p:x /bin/ls:main ";
  EXPECT_NE(Rejection(u + "1a=%di").find("argument name '1a'"), std::string::npos);
  EXPECT_NE(Rejection(u + "a-b=%di").find("argument name 'a-b'"), std::string::npos);
  EXPECT_NE(Rejection(u + "a=%di b=%si a=%dx").find("used twice"), std::string::npos);
  EXPECT_NE(Rejection(u + "common_pid=%di").find("reserved"), std::string::npos);
  EXPECT_NE(Rejection(u + "__probe_ip=%di").find("reserved"), std::string::npos);
  EXPECT_NE(Rejection(u + "a=%di:u128").find("unknown type"), std::string::npos);
  EXPECT_NE(Rejection(u + "a=%di:s64:u8").find("unknown type"), std::string::npos);
  EXPECT_NE(Rejection(u + "a=%di:string").find("read from memory"), std::string::npos);
  EXPECT_NE(Rejection(u + "a=%di:x8[2]").find("read from memory"), std::string::npos);
  EXPECT_NE(Rejection(u + "a=+0(%di):u8[65]").find("array length"), std::string::npos);
  EXPECT_NE(Rejection(u + "a=%di:b9@0/8").find("container"), std::string::npos);
  EXPECT_NE(Rejection(u + "a=%di:b4@2").find("bitfield"), std::string::npos);
  EXPECT_NE(Rejection(u + "a=%di:symbol").find("kprobes only"), std::string::npos);
  EXPECT_NE(Rejection(u + "a=$arg1").find("kprobes only"), std::string::npos);
  EXPECT_NE(Rejection(u + "a=@jiffies").find("kprobes only"), std::string::npos);
  EXPECT_NE(Rejection(u + "a=$retval").find("return probes"), std::string::npos);
  EXPECT_NE(Rejection(u + "a=$foo").find("unknown variable"), std::string::npos);
  EXPECT_NE(Rejection(u + "a=+8%sp").find("dereference"), std::string::npos);
  EXPECT_NE(Rejection(u + "a=+8(%zz)").find("unknown register"), std::string::npos);
  EXPECT_NE(Rejection(u + "a=\\\"open").find("unterminated"), std::string::npos);
  EXPECT_NE(Rejection(u + "a=").find("empty"), std::string::npos);
  EXPECT_NE(Rejection(u + "a=file->f_mode").find("unknown form"), std::string::npos);
  EXPECT_NE(Rejection("p:x vfs_read a=@+0x10").find("uprobes only"), std::string::npos);
  EXPECT_NE(Rejection("p:x vfs_read a=$arg0").find("$arg1"), std::string::npos);
#if defined(__x86_64__)
  EXPECT_NE(Rejection(u + "a=%rdi").find("unknown register"), std::string::npos);
#endif
}

TEST(ProbeDefinitionTest, RejectionMessageQuotesTheDefinitionAndGivesTheSyntax) {
  auto def = ParseProbeDefinition("p:x vfs_read a=%di:u128");
  ASSERT_FALSE(def.ok());
  EXPECT_NE(def.status().message().find("'p:x vfs_read a=%di:u128'"), std::string::npos);
  EXPECT_NE(HintOf(def.status()).find("SYMBOL[+OFFS]"), std::string::npos);
}

TEST(ProbeNameTest, FollowsTheKernelsIdentifierRule) {
  EXPECT_TRUE(IsGoodProbeName("a"));
  EXPECT_TRUE(IsGoodProbeName("_x9"));
  EXPECT_FALSE(IsGoodProbeName(""));
  EXPECT_FALSE(IsGoodProbeName("9x"));
  EXPECT_FALSE(IsGoodProbeName("a.b"));
  EXPECT_FALSE(IsGoodProbeName(std::string(64, 'a')));
  EXPECT_EQ(DefaultProbeGroup(), "iotrace_" + std::to_string(getpid()));
}

class ProbeKallsymsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto k = Kallsyms::Load(std::string(IOTRACE_FIXTURES) + "/kallsyms/kallsyms.txt");
    ASSERT_TRUE(k.ok()) << k.status();
    kallsyms_ = std::move(*k);
    auto t = LoadTraceableFunctions(std::string(IOTRACE_FIXTURES) +
                                    "/kallsyms/available_filter_functions");
    ASSERT_TRUE(t.ok()) << t.status();
    traceable_ = std::move(*t);
  }
  absl::Status Check(const std::string& text, bool with_traceable = true) {
    auto def = ParseProbeDefinition(text);
    if (!def.ok()) return def.status();
    return ValidateKprobeTarget(*def, kallsyms_, with_traceable ? &traceable_ : nullptr);
  }
  Kallsyms kallsyms_;
  absl::flat_hash_set<std::string> traceable_;
};

TEST_F(ProbeKallsymsTest, AcceptsOffsetsInsideTheFunction) {
  // vfs_read @ ...80f0, next symbol __pfx___kernel_write_iter @ ...84c0: 0x3d0 bytes.
  EXPECT_TRUE(Check("p vfs_read").ok());
  EXPECT_TRUE(Check("p vfs_read+0x3cf").ok());
  EXPECT_TRUE(Check("p:e ext4:ext4_file_read_iter+0x10").ok());
  EXPECT_TRUE(Check("p 0xffffffff816d80f4").ok());
}

TEST_F(ProbeKallsymsTest, RejectsOffsetAtOrPastTheNextSymbol) {
  absl::Status s = Check("p vfs_read+0x3d0");
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange) << s;
  EXPECT_NE(s.message().find("0x3d0 bytes long"), std::string::npos) << s;
  EXPECT_NE(s.message().find("__pfx___kernel_write_iter"), std::string::npos) << s;
  EXPECT_EQ(Check("p ksys_read+0x1000").code(), absl::StatusCode::kOutOfRange);
}

TEST_F(ProbeKallsymsTest, RejectsUnknownSymbolsWithSuggestions) {
  absl::Status s = Check("p vfs_reed");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_NE(HintOf(s).find("vfs_read"), std::string::npos) << HintOf(s);
  absl::Status m = Check("p ext4:vfs_read");
  EXPECT_EQ(m.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(m.message().find("not in module 'ext4'"), std::string::npos) << m;
}

TEST_F(ProbeKallsymsTest, RejectsDataAmbiguousAndUntraceableSymbols) {
  absl::Status data = Check("p __start_rodata");
  EXPECT_EQ(data.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(data.message().find("not a function"), std::string::npos) << data;
  absl::Status dup = Check("p x2apic_send_IPI");
  EXPECT_EQ(dup.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(dup.message().find("not unique (2 functions"), std::string::npos) << dup;
  absl::Status notrace = Check("p __kernel_read");
  EXPECT_EQ(notrace.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(notrace.message().find("available_filter_functions"), std::string::npos);
  // Without the traceable list (unreadable here), the kernel decides.
  EXPECT_TRUE(Check("p __kernel_read", /*with_traceable=*/false).ok());
  absl::Status addr = Check("p 0xffffffff82400010");
  EXPECT_EQ(addr.code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ProbeKallsymsTest, SkipsRangeChecksWhenAddressesAreHidden) {
  auto hidden =
      Kallsyms::Load(std::string(IOTRACE_FIXTURES) + "/kallsyms/kallsyms_hidden.txt");
  ASSERT_TRUE(hidden.ok());
  ASSERT_TRUE(hidden->addresses_hidden());
  auto def = ParseProbeDefinition("p vfs_read+0x5000");
  ASSERT_TRUE(def.ok());
  EXPECT_TRUE(ValidateKprobeTarget(*def, *hidden, nullptr).ok());
  // Two entries at address 0 cannot be told apart: not called ambiguous.
  auto dup = ParseProbeDefinition("p x2apic_send_IPI");
  EXPECT_TRUE(ValidateKprobeTarget(*dup, *hidden, nullptr).ok());
  auto missing = ParseProbeDefinition("p no_such_function");
  EXPECT_EQ(ValidateKprobeTarget(*missing, *hidden, nullptr).code(),
            absl::StatusCode::kNotFound);
}

TEST(ProbeSupportTest, KprobeOnKernelWithoutKprobeEventsGivesOneClearError) {
  const std::string root = test::MakeTempDir("iotrace_probes_fake_");
  ASSERT_FALSE(root.empty()) << "mkdtemp in " << test::TestTmpDir();
  std::ofstream(root + "/uprobe_events") << "";
  std::ofstream(root + "/dynamic_events") << "";
  ProbeSupport support = DetectProbeSupport(root);
  EXPECT_FALSE(support.kprobes);
  EXPECT_TRUE(support.uprobes);
  EXPECT_TRUE(support.dynamic_events);

  auto kdef = ParseProbeDefinition("p:k vfs_read");
  ASSERT_TRUE(kdef.ok());
  absl::Status s = CheckProbeSupported(*kdef, support, root);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("this kernel has no kprobe support"), std::string::npos) << s;
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << "one line: " << s;
  EXPECT_NE(HintOf(s).find("CONFIG_KPROBE_EVENTS"), std::string::npos);
  EXPECT_NE(HintOf(s).find("uprobe"), std::string::npos);

  auto udef = ParseProbeDefinition("p:u /bin/ls:main");
  ASSERT_TRUE(udef.ok());
  EXPECT_TRUE(CheckProbeSupported(*udef, support, root).ok());
  fs::remove(root + "/uprobe_events");
  absl::Status us = CheckProbeSupported(*udef, DetectProbeSupport(root), root);
  EXPECT_NE(us.message().find("no uprobe support"), std::string::npos) << us;
  fs::remove_all(root);
}

TEST(DynamicProbesTest, KprobeFailsUpFrontWithoutTouchingAFakeTracefs) {
  const std::string root = test::MakeTempDir("iotrace_probes_fake_");
  ASSERT_FALSE(root.empty()) << "mkdtemp in " << test::TestTmpDir();
  fs::create_directories(root + "/events");
  std::ofstream(root + "/uprobe_events") << "";
  DynamicProbeOptions opt;
  opt.tracefs = root;
  auto probes = DynamicProbes::Create({"p:k vfs_read"}, opt);
  ASSERT_FALSE(probes.ok());
  EXPECT_NE(probes.status().message().find("no kprobe support"), std::string::npos)
      << probes.status();
  // A syntax error is reported before anything else is looked at.
  auto bad = DynamicProbes::Create({"p:u /bin/ls:main", "p:k vfs_read a=%di:u128"}, opt);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << bad.status();
  // Nothing was written.
  std::ifstream in(root + "/uprobe_events");
  std::string contents((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(contents, "");
  fs::remove_all(root);
}

TEST(DynamicProbesTest, NoDefinitionsCreatesNothing) {
  auto probes = DynamicProbes::Create({}, DynamicProbeOptions());
  ASSERT_TRUE(probes.ok()) << probes.status();
  EXPECT_TRUE((*probes)->events().empty());
  EXPECT_TRUE((*probes)->Remove().ok());
}

TEST(UprobeTargetTest, ResolvesFileOffsetsAndRejectsMissingFiles) {
  auto def = ParseProbeDefinition("p:x /nonexistent/dir/prog:main");
  ASSERT_TRUE(def.ok());
  auto t = ResolveUprobeTarget(*def);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound) << t.status();
  EXPECT_NE(t.status().message().find("/nonexistent/dir/prog"), std::string::npos);

  // A raw file offset must lie inside the file.
  auto self = ParseProbeDefinition("p:x /proc/self/exe:0x10");
  ASSERT_TRUE(self.ok());
  auto ok = ResolveUprobeTarget(*self);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->file_offset, 0x10u);
  EXPECT_EQ(ok->path.find("/proc/"), std::string::npos) << "canonical path: " << ok->path;
  auto past = ParseProbeDefinition("p:x /proc/self/exe:0x7fffffffff");
  EXPECT_EQ(ResolveUprobeTarget(*past).status().code(), absl::StatusCode::kOutOfRange);
  auto dir = ParseProbeDefinition("p:x /tmp/:0x10");
  EXPECT_EQ(ResolveUprobeTarget(*dir).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace iotrace
