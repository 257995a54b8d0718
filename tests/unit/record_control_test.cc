// `iotrace record --control`: the channel spec, the commands, line cutting, and a real FIFO pair.
#include "iotrace/capture/record_control.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/base/status.h"
#include "test_files.h"

namespace iotrace {
namespace {

TEST(ControlSpecTest, FifoAndFdFormsWithAndWithoutAck) {
  auto s = ParseControlSpec("fifo:/run/ctl,/run/ack");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->fifo);
  EXPECT_EQ(s->ctl_path, "/run/ctl");
  EXPECT_EQ(s->ack_path, "/run/ack");
  s = ParseControlSpec("fifo:ctl");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->ctl_path, "ctl");
  EXPECT_EQ(s->ack_path, "");
  s = ParseControlSpec("fd:10,11");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->fifo);
  EXPECT_EQ(s->ctl_fd, 10);
  EXPECT_EQ(s->ack_fd, 11);
  s = ParseControlSpec("fd:7");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->ctl_fd, 7);
  EXPECT_EQ(s->ack_fd, -1);
}

TEST(ControlSpecTest, BadSpecsSayWhatIsExpected) {
  struct Case {
    const char* spec;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{{"/run/ctl", "expected fifo: or fd:"},
                                         {"fifo:", "one or two names"},
                                         {"fifo:a,b,c", "one or two names"},
                                         {"fifo:a,", "one or two names"},
                                         {"fd:x", "'x' is not a file descriptor number"},
                                         {"fd:3,-1", "'-1' is not a file descriptor number"}}) {
    auto s = ParseControlSpec(c.spec);
    ASSERT_FALSE(s.ok()) << c.spec;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << c.spec;
    EXPECT_NE(s.status().message().find(c.message), std::string::npos) << s.status();
    EXPECT_NE(s.status().message().find(c.spec), std::string::npos) << s.status();
    EXPECT_NE(HintOf(s.status()).find("fifo:CTL[,ACK]"), std::string::npos);
  }
}

TEST(ControlCommandTest, PerfsCommandsWithBlanksAroundAndNothingElse) {
  EXPECT_EQ(ParseControlCommand("enable"), ControlCommand::kEnable);
  EXPECT_EQ(ParseControlCommand("  disable\r"), ControlCommand::kDisable);
  EXPECT_EQ(ParseControlCommand("stop"), ControlCommand::kStop);
  EXPECT_EQ(ParseControlCommand("ping "), ControlCommand::kPing);
  EXPECT_EQ(ParseControlCommand("enable block:block_rq_issue"), ControlCommand::kUnknown);
  EXPECT_EQ(ParseControlCommand("snapshot"), ControlCommand::kUnknown);
  EXPECT_EQ(ParseControlCommand("Enable"), ControlCommand::kUnknown);
}

TEST(ControlLineBufferTest, LinesEndAtNewlineOrNulAndMaySpanReads) {
  ControlLineBuffer b;
  std::vector<std::string> lines;
  b.Append("ena", &lines);
  EXPECT_TRUE(lines.empty());
  b.Append("ble\ndis", &lines);
  EXPECT_EQ(lines, (std::vector<std::string>{"enable"}));
  b.Append(std::string("able\0\n\n  \nstop\n", 16), &lines);
  EXPECT_EQ(lines, (std::vector<std::string>{"enable", "disable", "stop"}));
}

TEST(ControlLineBufferTest, AnEndlessLineIsCutNotGrown) {
  ControlLineBuffer b;
  std::vector<std::string> lines;
  for (int i = 0; i < 1000; ++i) b.Append(std::string(1000, 'x'), &lines);
  b.Append("\nping\n", &lines);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].size(), 256u);
  EXPECT_EQ(lines[1], "ping");
}

class ControlChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::MakeTempDir("iotrace_control_");
    ASSERT_FALSE(dir_.empty()) << "mkdtemp in " << test::TestTmpDir();
    ctl_ = dir_ + "/ctl";
    ack_ = dir_ + "/ack";
    ASSERT_EQ(mkfifo(ctl_.c_str(), 0600), 0);
    ASSERT_EQ(mkfifo(ack_.c_str(), 0600), 0);
  }
  void TearDown() override {
    unlink(ctl_.c_str());
    unlink(ack_.c_str());
    rmdir(dir_.c_str());
  }
  std::string dir_, ctl_, ack_;
};

TEST_F(ControlChannelTest, FifosOpenWithoutAClientAndCarryCommandsAndAcks) {
  auto spec = ParseControlSpec("fifo:" + ctl_ + "," + ack_);
  ASSERT_TRUE(spec.ok());
  // Opening must not wait for the client (it may open its ends later).
  auto ch = ControlChannel::Open(*spec);
  ASSERT_TRUE(ch.ok()) << ch.status();
  int w = open(ctl_.c_str(), O_WRONLY | O_NONBLOCK);
  int r = open(ack_.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(w, 0);
  ASSERT_GE(r, 0);
  std::vector<std::string> lines;
  auto open_now = ch->Read(&lines);
  ASSERT_TRUE(open_now.ok());
  EXPECT_TRUE(*open_now);
  EXPECT_TRUE(lines.empty());
  ASSERT_EQ(write(w, "enable\npi", 9), 9);
  ASSERT_TRUE(ch->Read(&lines).ok());
  EXPECT_EQ(lines, (std::vector<std::string>{"enable"}));
  ch->Ack();
  ASSERT_EQ(write(w, "ng\n", 3), 3);
  // The client going away is no end of a FIFO channel: a new client can come.
  close(w);
  open_now = ch->Read(&lines);
  ASSERT_TRUE(open_now.ok());
  EXPECT_TRUE(*open_now);
  EXPECT_EQ(lines, (std::vector<std::string>{"enable", "ping"}));
  ch->Ack();
  char buf[16] = {};
  EXPECT_EQ(read(r, buf, sizeof(buf)), 8);
  EXPECT_EQ(std::string(buf), "ack\nack\n");
  close(r);
  // Nobody reads the acks now: answering must neither block nor fail.
  for (int i = 0; i < 20000; ++i) ch->Ack();
}

TEST_F(ControlChannelTest, MissingPathsAndNonFifosAreNamed) {
  auto ch = ControlChannel::Open(*ParseControlSpec("fifo:" + dir_ + "/nope"));
  ASSERT_FALSE(ch.ok());
  EXPECT_NE(ch.status().message().find(dir_ + "/nope"), std::string::npos) << ch.status();
  std::string plain = dir_ + "/plain";
  close(open(plain.c_str(), O_CREAT | O_WRONLY, 0600));
  ch = ControlChannel::Open(*ParseControlSpec("fifo:" + ctl_ + "," + plain));
  unlink(plain.c_str());
  ASSERT_FALSE(ch.ok());
  EXPECT_NE(ch.status().message().find("is not a FIFO"), std::string::npos) << ch.status();
  EXPECT_NE(HintOf(ch.status()).find("mkfifo " + plain), std::string::npos);
  ch = ControlChannel::Open(*ParseControlSpec("fd:987"));
  ASSERT_FALSE(ch.ok());
  EXPECT_NE(ch.status().message().find("987"), std::string::npos) << ch.status();
}

TEST(ControlChannelFdTest, AnFdChannelEndsWhenTheClientClosesIt) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  auto ch = ControlChannel::Open(*ParseControlSpec("fd:" + std::to_string(p[0])));
  ASSERT_TRUE(ch.ok()) << ch.status();
  close(p[0]);  // the channel holds its own copy
  ASSERT_EQ(write(p[1], "stop\n", 5), 5);
  close(p[1]);
  std::vector<std::string> lines;
  auto open_now = ch->Read(&lines);
  ASSERT_TRUE(open_now.ok());
  EXPECT_FALSE(*open_now);
  EXPECT_EQ(lines, (std::vector<std::string>{"stop"}));
  ch->Ack();  // no ack channel: nothing to do
}

}  // namespace
}  // namespace iotrace
