// FlagParser in both syntaxes: getopt's (record, list, doctor, reset) and the exact words of
// report; every error it returns is a usage error.
#include "iotrace/cli/flags.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/base/status.h"

namespace iotrace {
namespace {

TEST(FlagParserTest, LongShortInlineRepeatedAndRest) {
  FlagParser p;
  std::vector<std::string> events;
  double d = 0;
  bool flag = false;
  p.Add("event", 'e', true, "E", "", [&](const std::string& v) {
    events.push_back(v);
    return absl::OkStatus();
  });
  p.Add("duration", 'd', true, "S", "", [&](const std::string& v) {
    return ParseSecondsFlag("--duration", v, &d);
  });
  p.Add("flag", 0, false, "", "", [&](const std::string&) {
    flag = true;
    return absl::OkStatus();
  });
  std::vector<std::string> rest;
  ASSERT_TRUE(p.Parse({"-e", "a", "--event=b", "-ec", "-d2.5", "--flag", "--", "dd", "-x"},
                      nullptr, &rest)
                  .ok());
  EXPECT_EQ(events, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_DOUBLE_EQ(d, 2.5);
  EXPECT_TRUE(flag);
  EXPECT_EQ(rest, (std::vector<std::string>{"dd", "-x"}));
}

TEST(FlagParserTest, ErrorsNameTheOption) {
  FlagParser p;
  double d = 0;
  p.Add("duration", 'd', true, "S", "", [&](const std::string& v) {
    return ParseSecondsFlag("--duration", v, &d);
  });
  p.Add("flag", 0, false, "", "", [](const std::string&) { return absl::OkStatus(); });
  std::vector<std::string> rest;
  absl::Status s = p.Parse({"--nope"}, nullptr, &rest);
  EXPECT_NE(s.message().find("--nope"), std::string::npos);
  s = p.Parse({"-d"}, nullptr, &rest);
  EXPECT_NE(s.message().find("needs a value"), std::string::npos);
  s = p.Parse({"-d", "-3"}, nullptr, &rest);
  EXPECT_NE(s.message().find("not a number of seconds"), std::string::npos);
  s = p.Parse({"--flag=1"}, nullptr, &rest);
  EXPECT_NE(s.message().find("takes no value"), std::string::npos);
  s = p.Parse({"stray"}, nullptr, &rest);
  EXPECT_NE(s.message().find("unexpected argument"), std::string::npos);
}

// A parser with -v (switch) and -n/--name VALUE (repeatable); records what the handlers saw.
struct Parsed {
  std::vector<std::string> names;
  int verbose = 0;
};

FlagParser MakeParser(FlagParser::Syntax syntax, Parsed* p) {
  FlagParser flags(syntax, "the hint");
  flags.Add("verbose", 'v', false, "", "", [p](const std::string&) {
    ++p->verbose;
    return absl::OkStatus();
  });
  flags.Add("name", 'n', true, "NAME", "", [p](const std::string& v) {
    if (v == "bad") return absl::InvalidArgumentError("bad name");
    p->names.push_back(v);
    return absl::OkStatus();
  });
  return flags;
}

TEST(FlagParserTest, GetoptTakesAttachedValuesAndStopsAtDoubleDash) {
  Parsed p;
  FlagParser flags = MakeParser(FlagParser::Syntax::kGetopt, &p);
  std::vector<std::string> positional, rest;
  ASSERT_TRUE(flags.Parse({"-nA", "--name=B", "-n", "C", "x", "-v", "--", "-v"}, &positional, &rest)
                  .ok());
  EXPECT_EQ(p.names, (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_EQ(p.verbose, 1);
  EXPECT_EQ(positional, std::vector<std::string>{"x"});
  EXPECT_EQ(rest, std::vector<std::string>{"-v"});

  absl::Status s = flags.Parse({"--verbose=1"}, nullptr, nullptr);
  EXPECT_EQ(s.message(), "option '--verbose' takes no value");
  EXPECT_EQ(HintOf(s), "the hint");
  EXPECT_TRUE(IsUsageError(s));
  EXPECT_EQ(flags.Parse({"--name"}, nullptr, nullptr).message(),
            "option '--name' needs a value (NAME)");
  EXPECT_EQ(flags.Parse({"--bogus=1"}, nullptr, nullptr).message(), "unknown option '--bogus'");
}

TEST(FlagParserTest, ExactWordsKnowOnlyTheWordsAdded) {
  Parsed p;
  FlagParser flags = MakeParser(FlagParser::Syntax::kExactWords, &p);
  ASSERT_TRUE(flags.Parse({"-n", "A", "--name=B", "--verbose=ignored"}, nullptr, nullptr).ok());
  EXPECT_EQ(p.names, (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(p.verbose, 1);
  for (const char* arg : {"-nA", "-n=A", "-", "--", "--bogus=1", "-vv"}) {
    absl::Status s = flags.Parse({arg, "x"}, nullptr, nullptr);
    EXPECT_EQ(s.message(), std::string("unknown option '") + arg + "'") << arg;
    EXPECT_EQ(HintOf(s), "the hint");
    EXPECT_TRUE(IsUsageError(s));
  }
  EXPECT_EQ(flags.Parse({"-n"}, nullptr, nullptr).message(), "option -n needs a value");
  EXPECT_EQ(flags.Parse({"--name="}, nullptr, nullptr).message(), "option --name: empty value");
  EXPECT_EQ(flags.Parse({"-n", ""}, nullptr, nullptr).message(), "option -n: empty value");
}

TEST(FlagParserTest, ArgumentHandlerRefusesBeforeLaterFlagsAreRead) {
  Parsed p;
  FlagParser flags = MakeParser(FlagParser::Syntax::kExactWords, &p);
  flags.SetArgumentHandler(
      [](const std::string& a) { return absl::InvalidArgumentError("no argument " + a); });
  absl::Status s = flags.Parse({"stray", "--bogus"}, nullptr, nullptr);
  EXPECT_EQ(s.message(), "no argument stray");
  EXPECT_TRUE(IsUsageError(s));
}

TEST(FlagParserTest, WhatAHandlerRefusesIsAUsageError) {
  Parsed p;
  FlagParser flags = MakeParser(FlagParser::Syntax::kGetopt, &p);
  absl::Status s = flags.Parse({"-n", "bad"}, nullptr, nullptr);
  EXPECT_EQ(s.message(), "bad name");
  EXPECT_TRUE(IsUsageError(s));
}

// The words of `text` (runs of non-spaces), in order.
std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> words;
  std::string w;
  for (char c : text + " ") {
    if (c == ' ' || c == '\n') {
      if (!w.empty()) words.push_back(w);
      w.clear();
    } else {
      w += c;
    }
  }
  return words;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  for (char c : text) {
    if (c == '\n') {
      lines.push_back(line);
      line.clear();
    } else {
      line += c;
    }
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

// Prose filled anew, a flag's text wrapped under its column with the line that continues it,
// what fits left alone, every word kept in its order.
TEST(FitHelpTest, FillsProseAndWrapsFlagTextUnderItsColumn) {
  const std::string prose(
      "Reads a file and says where the time goes, per device and op, with every event accounted "
      "for\nand nothing left out.");
  const std::string flag =
      "  -x, --example VALUE     what this option does, told at such length that the line runs "
      "well past\n                          the eightieth column, then goes on here\n";
  const std::string kept = "  -k, --kept              short\n  I2D  a list item that fits\n";
  const std::string text = "usage: tool [options]\n\n" + prose + "\n\noptions:\n" + flag + kept;
  const std::string fitted = FitHelp(text);
  EXPECT_EQ(Words(fitted), Words(text));
  const std::vector<std::string> lines = Lines(fitted);
  for (const std::string& line : lines) EXPECT_LE(line.size(), 80u) << line;
  ASSERT_GE(lines.size(), 10u);
  EXPECT_EQ(lines[0], "usage: tool [options]");
  EXPECT_EQ(lines[1], "");
  // The prose: two lines, the first as full as the width allows.
  EXPECT_EQ(lines[2],
            "Reads a file and says where the time goes, per device and op, with every event");
  EXPECT_EQ(lines[3], "accounted for and nothing left out.");
  EXPECT_EQ(lines[5], "options:");
  EXPECT_EQ(lines[6].substr(0, 26), "  -x, --example VALUE     ");
  size_t i = 7;
  for (; i < lines.size() && lines[i].rfind("                          ", 0) == 0; ++i) {
    EXPECT_NE(lines[i][26], ' ') << "a wrapped line stands under the option's text";
  }
  EXPECT_GT(i, 7u);
  ASSERT_EQ(lines.size(), i + 2);
  EXPECT_EQ(lines[i], "  -k, --kept              short");
  EXPECT_EQ(lines[i + 1], "  I2D  a list item that fits");
  // Text that fits is returned as it is; so is fitted text.
  EXPECT_EQ(FitHelp(kept), kept);
  EXPECT_EQ(FitHelp(fitted), fitted);
}

// An option whose name and value fill its column puts its text on the next line, under the
// others' (not at the indent of the name).
TEST(FitHelpTest, LongOptionNameTakesItsTextToTheNextLine) {
  FlagParser p;
  p.Add("short", 's', true, "N", "a number", [](const std::string&) { return absl::OkStatus(); });
  p.Add("control", 0, true, "fifo:CTL[,ACK]|fd:CTL[,ACK]",
        "take commands while recording, one per line, each answered on ACK when it names one, "
        "as perf record does",
        [](const std::string&) { return absl::OkStatus(); });
  const std::vector<std::string> lines = Lines(FitHelp(p.Help()));
  ASSERT_GE(lines.size(), 4u);
  EXPECT_EQ(lines[0], "  -s, --short N" + std::string(18, ' ') + "a number");
  EXPECT_EQ(lines[1], "      --control fifo:CTL[,ACK]|fd:CTL[,ACK]");
  for (size_t i = 2; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].substr(0, 33), std::string(33, ' '));
    EXPECT_NE(lines[i][33], ' ');
    EXPECT_LE(lines[i].size(), 80u);
  }
}

}  // namespace
}  // namespace iotrace
