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

}  // namespace
}  // namespace iotrace
