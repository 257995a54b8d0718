// record --switch-output / --switch-max-files / --max-size: the values as perf spells them, the
// names of the files (perf's OUTPUT.YYYYMMDDHHMMSSCC), which files are removed past the
// maximum, when a switch is due and when --max-size is reached; the optional value of
// --switch-output on the command line; a file's share of the kernel's per-CPU loss counters.
#include "iotrace/capture/record_rotation.h"

#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/base/status.h"
#include "iotrace/capture/record.h"
#include "iotrace/cli/flags.h"
#include "iotrace/event/cpu_buffer_stats.h"

namespace iotrace {
namespace {

using Kind = SwitchOutputMode::Kind;

TEST(SwitchOutputTest, PerfSpellings) {
  auto bare = ParseSwitchOutput("");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->kind, Kind::kSignal);
  EXPECT_EQ(ParseSwitchOutput("signal")->kind, Kind::kSignal);

  auto size = ParseSwitchOutput("100M");
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(size->kind, Kind::kSize);
  EXPECT_EQ(size->bytes, 100ull << 20);
  EXPECT_EQ(ParseSwitchOutput("4096B")->bytes, 4096u);
  EXPECT_EQ(ParseSwitchOutput("3K")->bytes, 3072u);
  EXPECT_EQ(ParseSwitchOutput("2G")->bytes, 2ull << 30);

  auto time = ParseSwitchOutput("2s");
  ASSERT_TRUE(time.ok());
  EXPECT_EQ(time->kind, Kind::kTime);
  EXPECT_EQ(time->ns, 2000000000ull);
  // Lower-case m is minutes, as with perf; upper-case M is MiB.
  EXPECT_EQ(ParseSwitchOutput("5m")->ns, 300ull * 1000000000);
  EXPECT_EQ(ParseSwitchOutput("1h")->ns, 3600ull * 1000000000);
  EXPECT_EQ(ParseSwitchOutput("1d")->ns, 86400ull * 1000000000);
}

TEST(SwitchOutputTest, RefusesWhatPerfRefuses) {
  for (const char* bad : {"2", "s", "0s", "0M", "-1s", "+2s", "1.5s", "2 s", "2x", "10k",
                          "signals", "99999999999999999999G", "1ms"}) {
    auto m = ParseSwitchOutput(bad);
    EXPECT_FALSE(m.ok()) << bad;
    if (!m.ok()) {
      EXPECT_TRUE(IsUsageError(m.status())) << bad;
    }
  }
}

TEST(MaxSizeTest, Units) {
  EXPECT_EQ(*ParseByteSize("--max-size", "10M"), 10ull << 20);
  EXPECT_EQ(*ParseByteSize("--max-size", "1G"), 1ull << 30);
  auto bad = ParseByteSize("--max-size", "10");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--max-size '10'"), std::string::npos);
  EXPECT_FALSE(ParseByteSize("--max-size", "2s").ok());
  EXPECT_FALSE(ParseByteSize("--max-size", "0K").ok());
}

// 2026-12-05 23:46:42.5 UTC as nanoseconds since the epoch.
constexpr int64_t kWhen = 1796514402500000000;

class LocalTimeUtc : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tz = std::getenv("TZ");
    had_tz_ = tz != nullptr;
    if (had_tz_) old_tz_ = tz;
    setenv("TZ", "UTC", 1);
    tzset();
  }
  void TearDown() override {
    if (had_tz_) {
      setenv("TZ", old_tz_.c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }

 private:
  bool had_tz_ = false;
  std::string old_tz_;
};

TEST_F(LocalTimeUtc, NamesAsPerf) {
  // perf.data.2015122622314468: the date, the time and hundredths of a second.
  EXPECT_EQ(SwitchedOutputName("run.dat", kWhen), "run.dat.2026120523464250");
  EXPECT_EQ(SwitchedOutputName("/x/p.data", kWhen + 9990000), "/x/p.data.2026120523464250");
  EXPECT_EQ(SwitchedOutputName("p", kWhen + 10000000), "p.2026120523464251");
}

TEST_F(LocalTimeUtc, NamesNeverRepeat) {
  OutputRotation r("o", *ParseSwitchOutput("signal"), 0, 0);
  EXPECT_EQ(r.Open(kWhen, 0), "o.2026120523464250");
  // Two switches in the same hundredth, then the clock set back: each name is later.
  EXPECT_EQ(r.Open(kWhen + 1000, 1), "o.2026120523464251");
  EXPECT_EQ(r.Open(kWhen - 5000000000, 2), "o.2026120523464252");
  EXPECT_EQ(r.Open(kWhen + 100000000, 3), "o.2026120523464260");
  EXPECT_EQ(r.files_made(), 4u);
  EXPECT_EQ(r.first_name(), "o.2026120523464250");
  EXPECT_EQ(r.last_name(), "o.2026120523464260");
}

TEST_F(LocalTimeUtc, MaxFilesRemovesTheOldestOnceFinished) {
  // As record runs it: a file opened, later finished (the ftrace backend finishes one while the
  // next is written, so up to two are open).
  OutputRotation r("o", *ParseSwitchOutput("2s"), 3, 0);
  std::vector<std::string> names;
  names.push_back(r.Open(kWhen, 0));
  std::vector<std::string> removed;
  for (int i = 1; i <= 6; ++i) {
    names.push_back(r.Open(kWhen + i * 2000000000ll, i * 2000000000ull));
    if (i >= 2) {
      // The file before the previous one is finished once the next switch comes.
      for (const std::string& n : r.Finished(names[i - 2], 100)) removed.push_back(n);
      // Finished files and the two open: never more than 3 once one could go.
      EXPECT_LE(r.files_on_disk(), 3u) << i;
    }
  }
  for (int i = 5; i <= 6; ++i) {
    for (const std::string& n : r.Finished(names[i], 100)) removed.push_back(n);
  }
  ASSERT_EQ(r.files_made(), 7u);
  // 7 made, 3 left: the 4 oldest removed, oldest first.
  EXPECT_EQ(removed, std::vector<std::string>(names.begin(), names.begin() + 4));
  EXPECT_EQ(r.files_on_disk(), 3u);
  EXPECT_EQ(r.DiskBytes(0), 300u);
  EXPECT_EQ(r.bytes_written(), 700u);
}

TEST(OutputRotationTest, WithoutMaxFilesNothingIsRemovedAndNoNamesAreHeld) {
  OutputRotation r("o", *ParseSwitchOutput("1M"), 0, 0);
  for (int i = 0; i < 1000; ++i) {
    const std::string n = r.Open(kWhen + i * 20000000ll, i);
    EXPECT_TRUE(r.Finished(n, 10).empty());
  }
  EXPECT_EQ(r.files_on_disk(), 1000u);
  EXPECT_EQ(r.DiskBytes(5), 10005u);
}

TEST(OutputRotationTest, WhenASwitchIsDue) {
  OutputRotation t("o", *ParseSwitchOutput("2s"), 0, 0);
  t.Open(kWhen, 1000);
  EXPECT_FALSE(t.Due(1000 + 1999999999, 1ull << 40, true));
  EXPECT_TRUE(t.Due(1000 + 2000000000, 0, false));

  OutputRotation z("o", *ParseSwitchOutput("1K"), 0, 0);
  z.Open(kWhen, 0);
  EXPECT_FALSE(z.Due(1ull << 50, 1023, true));
  EXPECT_TRUE(z.Due(0, 1024, false));

  OutputRotation s("o", *ParseSwitchOutput("signal"), 0, 0);
  s.Open(kWhen, 0);
  EXPECT_FALSE(s.Due(1ull << 50, 1ull << 40, false));
  EXPECT_TRUE(s.Due(0, 0, true));

  OutputRotation off("o", SwitchOutputMode{}, 0, 100);
  EXPECT_FALSE(off.Due(1ull << 50, 1ull << 40, true));
}

TEST(OutputRotationTest, MaxSizeCountsTheFilesStillOnDisk) {
  OutputRotation r("o", *ParseSwitchOutput("1s"), 2, 1000);
  std::string a = r.Open(kWhen, 0);
  EXPECT_FALSE(r.OverMaxSize(999));
  EXPECT_TRUE(r.OverMaxSize(1000));
  std::string b = r.Open(kWhen + 1000000000, 1);
  EXPECT_TRUE(r.Finished(a, 600).empty());
  EXPECT_FALSE(r.OverMaxSize(399));
  EXPECT_TRUE(r.OverMaxSize(400));
  r.Open(kWhen + 2000000000, 2);
  // b finished: a goes (2 files at most), and its bytes leave the count.
  EXPECT_EQ(r.Finished(b, 300), std::vector<std::string>{a});
  EXPECT_FALSE(r.OverMaxSize(699));
  EXPECT_TRUE(r.OverMaxSize(700));
}

TEST(RecordOptionsRotationTest, Checks) {
  RecordOptions o;
  o.switch_max_files = 3;
  EXPECT_FALSE(ValidateRecordOptions(o).ok());  // no --switch-output
  o.switch_output = *ParseSwitchOutput("2s");
  EXPECT_TRUE(ValidateRecordOptions(o).ok());
  o.output = "-";
  EXPECT_FALSE(ValidateRecordOptions(o).ok());  // a stream is one file
  o.switch_output = SwitchOutputMode{};
  o.switch_max_files = 0;
  o.max_size = 1 << 20;
  EXPECT_FALSE(ValidateRecordOptions(o).ok());
}

TEST(FlagParserOptionalTest, SwitchOutputValueIsOptional) {
  auto parse = [](std::vector<std::string> args, std::string* got, std::vector<std::string>* rest) {
    FlagParser p;
    *got = "(unset)";
    p.AddOptionalValue(
        "switch-output", "signal|SIZE|TIME", "",
        [](const std::string& v) { return ParseSwitchOutput(v).ok(); },
        [got](const std::string& v) {
          *got = v;
          return ParseSwitchOutput(v).status();
        });
    p.Add("duration", 'd', true, "S", "", [](const std::string&) { return absl::OkStatus(); });
    return p.Parse(args, nullptr, rest);
  };
  std::string got;
  std::vector<std::string> rest;
  ASSERT_TRUE(parse({"--switch-output=2s"}, &got, &rest).ok());
  EXPECT_EQ(got, "2s");
  ASSERT_TRUE(parse({"--switch-output", "100M", "-d", "3"}, &got, &rest).ok());
  EXPECT_EQ(got, "100M");
  // Bare: the next argument is not a value of it (an option, "--", or nothing at all).
  ASSERT_TRUE(parse({"--switch-output", "-d", "3"}, &got, &rest).ok());
  EXPECT_EQ(got, "");
  ASSERT_TRUE(parse({"--switch-output", "--", "fio", "2s"}, &got, &rest).ok());
  EXPECT_EQ(got, "");
  EXPECT_EQ(rest, (std::vector<std::string>{"fio", "2s"}));
  ASSERT_TRUE(parse({"--switch-output"}, &got, &rest).ok());
  EXPECT_EQ(got, "");
  // A bad value given with '=' is refused, as a usage error.
  absl::Status bad = parse({"--switch-output=2q"}, &got, &rest);
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(IsUsageError(bad));
  FlagParser help;
  help.AddOptionalValue("switch-output", "signal|SIZE|TIME", "h",
                        [](const std::string&) { return false; },
                        [](const std::string&) { return absl::OkStatus(); });
  EXPECT_NE(help.Help().find("--switch-output[=signal|SIZE|TIME]"), std::string::npos);
}

TEST(RecordSummaryRotationTest, FilesKeptBytesAndRate) {
  RecordSummary s;
  s.backend = Backend::kFtrace;
  s.seconds = 10;
  s.rotated = true;
  s.files_made = 6;
  s.files_on_disk = 3;
  s.first_output = "r.dat.2026120523464250";
  s.output = "r.dat.2026120523465250";
  s.output_bytes = 30 << 20;
  s.bytes_written = 60 << 20;
  s.stop_reason = "--max-size";
  EXPECT_NE(FormatRecordSummary(s).find(
                "into 6 files, r.dat.2026120523464250 .. r.dat.2026120523465250 (3 on disk: "
                "30.0 MiB; 60.0 MiB written, 6.0 MiB/s), stopped by --max-size\n"),
            std::string::npos)
      << FormatRecordSummary(s);
  RecordSummary one;
  one.output = "one.data";
  one.seconds = 2;
  one.output_bytes = 4 << 20;
  EXPECT_NE(FormatRecordSummary(one).find("into one.data (4.0 MiB, 2.0 MiB/s)"),
            std::string::npos)
      << FormatRecordSummary(one);
}

TEST(CpuBufferStatsSinceTest, GrowingCountersBecomeTheFileShare) {
  const char* base_text =
      "entries: 5\noverrun: 10\ncommit overrun: 1\nbytes: 400\noldest event ts: 1.0\n"
      "now ts: 2.0\ndropped events: 3\nread events: 100\n";
  const char* now_text =
      "entries: 7\noverrun: 25\ncommit overrun: 1\nbytes: 500\noldest event ts: 3.0\n"
      "now ts: 4.0\ndropped events: 4\nread events: 180\n";
  const CpuBufferStats base = ParseCpuBufferStats(base_text);
  const CpuBufferStats now = ParseCpuBufferStats(now_text);
  const std::string share = CpuBufferStatsSince(now, base);
  EXPECT_EQ(share,
            "entries: 7\noverrun: 15\ncommit overrun: 0\nbytes: 500\noldest event ts: 3.0\n"
            "now ts: 4.0\ndropped events: 1\nread events: 80\n");
  const CpuBufferStats parsed = ParseCpuBufferStats(share);
  EXPECT_EQ(parsed.overrun, 15u);
  EXPECT_EQ(parsed.dropped_events, 1u);
  EXPECT_EQ(parsed.known_counters, now.known_counters);
}

}  // namespace
}  // namespace iotrace
