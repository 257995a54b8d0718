// PerfDataWriter: file creation rules, and a valid file in every stop case (full disk at any
// byte, filesystems without fallocate, short writes, EINTR, I/O errors).
#include "iotrace/formats/perf_data_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "iotrace/formats/perf_data_reader.h"
#include "iotrace/formats/trace_reader.h"
#include "iotrace/formats/trace_reader_open.h"
#include "perf_data_test_builder.h"
#include "test_files.h"

namespace iotrace {
namespace {

using test::Slurp;
using test::CollectingSink;
using test::PerfRecordBuilder;
using test::SampleFields;

std::string TempPath(const std::string& name) {
  return test::ScratchPath("iotrace-perfdata-w", name);
}

uint64_t FileSize(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// A disk on which only bytes below `capacity` can be written (writes reaching past it are
// short, then fail with ENOSPC; fallocate past it fails with ENOSPC), optionally without
// fallocate, with short writes, EINTR every few calls, or EIO at one call.
class FakeDiskIo : public PerfFileIo {
 public:
  uint64_t capacity = UINT64_MAX;
  bool fallocate_supported = true;
  size_t max_write = SIZE_MAX;
  int eintr_every = 0;
  int eio_at_write = -1;  // 0-based index of the pwritev call that fails with EIO

  ssize_t PWriteV(int fd, const struct iovec* iov, int iovcnt, off_t offset) override {
    const int call = writes_++;
    if (eintr_every > 0 && ++calls_ % eintr_every == 0) {
      errno = EINTR;
      return -1;
    }
    if (call == eio_at_write) {
      errno = EIO;
      return -1;
    }
    size_t total = 0;
    for (int i = 0; i < iovcnt; ++i) total += iov[i].iov_len;
    const uint64_t off = static_cast<uint64_t>(offset);
    if (off >= capacity) {
      errno = ENOSPC;
      return -1;
    }
    size_t n = std::min<uint64_t>({total, capacity - off, max_write});
    struct iovec cut[2];
    int cnt = 0;
    size_t left = n;
    for (int i = 0; i < iovcnt && left > 0; ++i) {
      cut[cnt] = iov[i];
      cut[cnt].iov_len = std::min(left, iov[i].iov_len);
      left -= cut[cnt].iov_len;
      ++cnt;
    }
    return ::pwritev(fd, cut, cnt, offset);
  }
  int Fallocate(int fd, int mode, off_t offset, off_t len) override {
    if (eintr_every > 0 && ++calls_ % eintr_every == 0) {
      errno = EINTR;
      return -1;
    }
    if (!fallocate_supported) {
      errno = EOPNOTSUPP;
      return -1;
    }
    if (static_cast<uint64_t>(offset + len) > capacity) {
      errno = ENOSPC;
      return -1;
    }
    return ::fallocate(fd, mode, offset, len);
  }

 private:
  int calls_ = 0;
  int writes_ = 0;
};

// One call a recorder makes on the writer, and the sample times it adds.
struct Append {
  enum Kind { kData, kRound, kLostSamples, kComm } kind;
  std::string bytes;  // kData
  size_t split = 0;   // kData: bytes before the ring's wrap point
  std::vector<uint64_t> sample_times;
  uint64_t time = 0;  // kLostSamples: when the drop was noticed
};

class PerfDataWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setup_ = test::LoadBlockSetup();
    ASSERT_GE(setup_.formats.size(), 2u);
    specs_ = test::BlockSpecs(setup_, 2);
    // A recording: per-CPU chunks of 1-3 samples, round marks, lost samples, comms.
    uint64_t t = 1000;
    for (int i = 0; i < 14; ++i) {
      for (uint32_t cpu = 0; cpu < 2; ++cpu) {
        Append a{Append::kData};
        PerfRecordBuilder b;
        for (int k = 0; k <= (i + cpu) % 3; ++k) {
          SampleFields s;
          s.id = test::SyntheticId(k & 1, cpu, 2);
          s.time = t + cpu * 5 + k * 10;
          s.cpu = cpu;
          s.pid = s.tid = 10 + cpu;
          test::BlockRq rq;
          rq.sector = t;
          s.raw = test::EncodeBlockRq(setup_.formats[k & 1], rq);
          b.AddSample(specs_[0].attr, s);
          a.sample_times.push_back(s.time);
        }
        a.bytes = b.bytes();
        a.split = (i % 2) ? a.bytes.size() / 2 : a.bytes.size();
        appends_.push_back(a);
      }
      t += 100;
      Append mark{i % 4 == 1 ? Append::kLostSamples : i % 4 == 3 ? Append::kComm : Append::kRound};
      mark.time = t - 1;
      appends_.push_back(mark);
    }
  }
  void TearDown() override {
    for (const std::string& p : paths_) ::unlink(p.c_str());
  }
  std::string Path(const std::string& name) {
    paths_.push_back(TempPath(name));
    ::unlink(paths_.back().c_str());
    return paths_.back();
  }

  // Runs the appends until one fails; returns how many succeeded.
  size_t RunAppends(PerfDataWriter* w) {
    for (size_t i = 0; i < appends_.size(); ++i) {
      const Append& a = appends_[i];
      absl::Status s;
      switch (a.kind) {
        case Append::kData:
          s = w->AppendData(ByteView(a.bytes.data(), a.split),
                            ByteView(a.bytes.data() + a.split, a.bytes.size() - a.split));
          break;
        case Append::kRound:
          s = w->AppendFinishedRound();
          break;
        case Append::kLostSamples: {
          perf::SampleId id;
          id.id = test::SyntheticId(1, 0, 2);
          id.time = a.time;
          s = w->AppendLostSamples(1, 3, id);
          break;
        }
        case Append::kComm:
          s = w->AppendComm(10, 10, "dd", perf::SampleId());
          break;
      }
      if (!s.ok()) {
        // Nothing is accepted after a failure.
        EXPECT_FALSE(w->AppendFinishedRound().ok());
        return i;
      }
    }
    return appends_.size();
  }

  // Sample times of the first `n` appends, in time order.
  std::vector<uint64_t> TimesOf(size_t n) const {
    std::vector<uint64_t> times;
    for (size_t i = 0; i < n; ++i) {
      times.insert(times.end(), appends_[i].sample_times.begin(), appends_[i].sample_times.end());
    }
    std::stable_sort(times.begin(), times.end());
    return times;
  }

  // How many leading appends make up `data_size` bytes (-1 if none do). A file with no data
  // holds the one FINISHED_ROUND record that Finish writes.
  int AppendsInDataSize(uint64_t data_size) const {
    if (data_size == 8) return 0;
    uint64_t sum = 0;
    for (size_t i = 0; i <= appends_.size(); ++i) {
      if (sum == data_size) return static_cast<int>(i);
      if (i == appends_.size()) break;
      const Append& a = appends_[i];
      sum += a.kind == Append::kData    ? a.bytes.size()
             : a.kind == Append::kRound ? 8
             : a.kind == Append::kLostSamples
                 ? 8 + 8 + perf::SampleIdSize(test::kIotraceSampleType)
                 : 8 + 16 + perf::SampleIdSize(test::kIotraceSampleType);
    }
    return -1;
  }

  std::vector<uint64_t> ReadTimes(const std::string& path, std::string* error) {
    auto reader = OpenPerfData(path);
    if (!reader.ok()) {
      *error = std::string(reader.status().message());
      return {};
    }
    CollectingSink sink;
    absl::Status s = (*reader)->ReadAll(&sink);
    if (!s.ok()) *error = std::string(s.message());
    for (const auto& [name, count] : (*reader)->stats().problems) {
      *error += name + "=" + std::to_string(count) + " ";
    }
    std::vector<uint64_t> times;
    for (const auto& e : sink.events) times.push_back(e.ts);
    return times;
  }

  test::BlockSetup setup_;
  std::vector<PerfEventSpec> specs_;
  std::vector<Append> appends_;
  std::vector<std::string> paths_;
};

TEST_F(PerfDataWriterTest, CreatesAFileOnlyItsOwnerCanRead) {
  std::string path = Path("mode");
  {
    std::ofstream pre(path);
    pre << "old contents";
  }
  ::chmod(path.c_str(), 0644);
  auto w = PerfDataWriter::Create(path, specs_, setup_.meta, test::TestHost());
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE((*w)->Finish().ok());
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(Slurp(path).substr(0, 8), "PERFILE2");

  std::string fresh = Path("fresh");
  auto w2 = PerfDataWriter::Create(fresh, specs_, setup_.meta, test::TestHost());
  ASSERT_TRUE(w2.ok()) << w2.status();
  ASSERT_EQ(::stat(fresh.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(PerfDataWriterTest, FollowsASymlinkOntoItsOwnFile) {
  std::string target = Path("own-target");
  std::string link = Path("own-link");
  { std::ofstream(target) << "x"; }
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  auto w = PerfDataWriter::Create(link, specs_, setup_.meta, test::TestHost());
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE((*w)->Finish().ok());
  EXPECT_EQ(Slurp(target).substr(0, 8), "PERFILE2");
  struct stat st;
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

TEST_F(PerfDataWriterTest, RefusesToCreateThroughADanglingSymlink) {
  std::string target = Path("dangling-target");
  std::string link = Path("dangling-link");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  auto w = PerfDataWriter::Create(link, specs_, setup_.meta, test::TestHost());
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(::access(target.c_str(), F_OK), 0);
}

TEST_F(PerfDataWriterTest, RefusesASymlinkOntoAnotherOwnersFile) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make a file owned by another user";
  std::string target = Path("other-target");
  std::string link = Path("other-link");
  { std::ofstream(target) << "precious"; }
  ASSERT_EQ(::chown(target.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  auto w = PerfDataWriter::Create(link, specs_, setup_.meta, test::TestHost());
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(w.status().message().find("owned by uid 65534"), std::string::npos) << w.status();
  EXPECT_EQ(Slurp(target), "precious");
}

TEST_F(PerfDataWriterTest, RefusesADirectory) {
  auto w = PerfDataWriter::Create("/tmp", specs_, setup_.meta, test::TestHost());
  EXPECT_FALSE(w.ok());
}

TEST_F(PerfDataWriterTest, RejectsEventsWithoutNamesIdsOrACommonIdPlace) {
  std::string path = Path("bad-specs");
  auto no_events = PerfDataWriter::Create(path, {}, setup_.meta, test::TestHost());
  EXPECT_FALSE(no_events.ok());
  auto specs = specs_;
  specs[1].ids.clear();
  EXPECT_FALSE(PerfDataWriter::Create(path, specs, setup_.meta, test::TestHost()).ok());
  specs = specs_;
  specs[1].attr.sample_type &= ~uint64_t{PERF_SAMPLE_IDENTIFIER};
  EXPECT_FALSE(PerfDataWriter::Create(path, specs, setup_.meta, test::TestHost()).ok());
}

TEST_F(PerfDataWriterTest, DestructorFinishesTheFile) {
  std::string path = Path("dtor");
  {
    auto w = PerfDataWriter::Create(path, specs_, setup_.meta, test::TestHost());
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_EQ(RunAppends(w->get()), appends_.size());
  }
  std::string error;
  EXPECT_EQ(ReadTimes(path, &error), TimesOf(appends_.size()));
  EXPECT_EQ(error, "");
}

// Pipe mode (record -o -): the same records as a stream on a descriptor, which the readers
// take as perf's own pipe-mode stream; the descriptor stays open, and a reader that went away
// stops the appends with an error instead of a signal.
TEST_F(PerfDataWriterTest, StreamModeWritesPerfsPipeFormat) {
  const std::string path = Path("stream");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  PerfWriterOptions o;
  o.stream_fd = fd;
  {
    auto w = PerfDataWriter::Create("-", specs_, setup_.meta, test::TestHost(), o);
    ASSERT_TRUE(w.ok()) << w.status();
    EXPECT_TRUE((*w)->stream());
    EXPECT_EQ(RunAppends(w->get()), appends_.size());
    ASSERT_TRUE((*w)->Finish().ok());
    EXPECT_EQ(FileSize(path), (*w)->data_offset() + (*w)->data_size());
  }
  EXPECT_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC) << "the stream's descriptor is the caller's";
  ::close(fd);
  const std::string bytes = Slurp(path);
  uint64_t magic = 0, size = 0;
  std::memcpy(&magic, bytes.data(), 8);
  std::memcpy(&size, bytes.data() + 8, 8);
  EXPECT_EQ(magic, perf::kMagic);
  EXPECT_EQ(size, perf::kPipeHeaderSize);
  auto reader = OpenTraceReader(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  CollectingSink sink;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  std::vector<uint64_t> times;
  for (const auto& e : sink.events) times.push_back(e.ts);
  EXPECT_EQ(times, TimesOf(appends_.size()));

  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  ::close(p[0]);  // nobody reads
  signal(SIGPIPE, SIG_IGN);
  o.stream_fd = p[1];
  auto broken = PerfDataWriter::Create("-", specs_, setup_.meta, test::TestHost(), o);
  EXPECT_FALSE(broken.ok());
  EXPECT_NE(std::string(broken.status().message()).find("Broken pipe"), std::string::npos)
      << broken.status();
  signal(SIGPIPE, SIG_DFL);
  ::close(p[1]);
}

TEST_F(PerfDataWriterTest, FinishIsIdempotentAndEndsAppends) {
  std::string path = Path("finish");
  auto w = PerfDataWriter::Create(path, specs_, setup_.meta, test::TestHost());
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(RunAppends(w->get()), appends_.size());
  const uint64_t size = (*w)->data_size();
  ASSERT_TRUE((*w)->Finish().ok());
  ASSERT_TRUE((*w)->Finish().ok());
  EXPECT_EQ((*w)->AppendData(ByteView("12345678", 8)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*w)->bytes_refused(), 8u);
  EXPECT_EQ((*w)->data_size(), size);
  EXPECT_FALSE((*w)->disk_full());
}

TEST_F(PerfDataWriterTest, ShortWritesAndEintrGiveTheSameFile) {
  std::string plain = Path("plain");
  std::string choppy = Path("choppy");
  {
    auto w = PerfDataWriter::Create(plain, specs_, setup_.meta, test::TestHost());
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_EQ(RunAppends(w->get()), appends_.size());
    ASSERT_TRUE((*w)->Finish().ok());
  }
  FakeDiskIo io;
  io.max_write = 7;
  io.eintr_every = 3;
  PerfWriterOptions options;
  options.io = &io;
  options.reserve_step = 100;  // many reserve steps, some hit by EINTR
  {
    auto w = PerfDataWriter::Create(choppy, specs_, setup_.meta, test::TestHost(), options);
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_EQ(RunAppends(w->get()), appends_.size());
    ASSERT_TRUE((*w)->Finish().ok());
  }
  std::string a = Slurp(plain), b = Slurp(choppy);
  ASSERT_GT(a.size(), 1000u);
  EXPECT_TRUE(a == b) << "files differ: " << a.size() << " vs " << b.size() << " bytes";
}

TEST_F(PerfDataWriterTest, AnIoErrorStopsAppendsAndKeepsAValidFile) {
  for (int fail_at : {1, 2, 5, 17}) {  // call 0 writes the prefix
    SCOPED_TRACE(fail_at);
    std::string path = Path("eio" + std::to_string(fail_at));
    FakeDiskIo io;
    io.eio_at_write = fail_at;
    PerfWriterOptions options;
    options.io = &io;
    auto w = PerfDataWriter::Create(path, specs_, setup_.meta, test::TestHost(), options);
    ASSERT_TRUE(w.ok()) << w.status();
    size_t ok = RunAppends(w->get());
    EXPECT_EQ(ok, static_cast<size_t>(fail_at - 1));
    EXPECT_FALSE((*w)->disk_full());
    ASSERT_TRUE((*w)->Finish().ok());
    std::string error;
    EXPECT_EQ(ReadTimes(path, &error), TimesOf(ok));
    EXPECT_EQ(error, "");
  }
}

// The heart of the disk-full contract: whatever byte the disk fills at, Finish() leaves a file
// that opens and holds exactly the appends that were accepted.
TEST_F(PerfDataWriterTest, DiskFullAtEveryByteKeepsEverythingWrittenBefore) {
  std::string path = Path("full");
  uint64_t full_size, prefix;
  {
    auto w = PerfDataWriter::Create(path, specs_, setup_.meta, test::TestHost());
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_EQ(RunAppends(w->get()), appends_.size());
    prefix = (*w)->data_offset();
    ASSERT_TRUE((*w)->Finish().ok());
    full_size = FileSize(path);
  }
  {
    auto e = PerfDataWriter::Create(path, specs_, setup_.meta, test::TestHost());
    ASSERT_TRUE(e.ok() && (*e)->Finish().ok());
  }
  const uint64_t empty_size = FileSize(path);  // prefix + round mark + feature table
  ASSERT_GT(empty_size, prefix + 8);
  const uint64_t table = empty_size - prefix - 8;

  for (uint64_t step : {uint64_t{64}, uint64_t{8} << 20}) {
    for (uint64_t capacity = prefix - 3; capacity <= full_size + 3; ++capacity) {
      SCOPED_TRACE(testing::Message() << "capacity " << capacity << " step " << step);
      FakeDiskIo io;
      io.capacity = capacity;
      PerfWriterOptions options;
      options.io = &io;
      options.reserve_step = step;
      ::unlink(path.c_str());
      auto w = PerfDataWriter::Create(path, specs_, setup_.meta, test::TestHost(), options);
      if (capacity < empty_size) {
        ASSERT_FALSE(w.ok());
        EXPECT_EQ(w.status().code(), absl::StatusCode::kResourceExhausted) << w.status();
        EXPECT_NE(::access(path.c_str(), F_OK), 0) << "a failed Create leaves no file";
        continue;
      }
      ASSERT_TRUE(w.ok()) << w.status();
      const size_t ok = RunAppends(w->get());
      EXPECT_EQ((*w)->disk_full(), ok < appends_.size());
      ASSERT_TRUE((*w)->Finish().ok());
      EXPECT_EQ(AppendsInDataSize((*w)->data_size()), static_cast<int>(ok));
      EXPECT_EQ(FileSize(path), prefix + (*w)->data_size() + table);
      std::string error;
      ASSERT_EQ(ReadTimes(path, &error), TimesOf(ok));
      ASSERT_EQ(error, "");
      if (capacity >= full_size) EXPECT_EQ(ok, appends_.size());
    }
  }
}

TEST_F(PerfDataWriterTest, DiskFullWithoutFallocateCutsBackToWholeAppends) {
  std::string path = Path("full-nofalloc");
  uint64_t full_size, empty_size, prefix;
  {
    auto w = PerfDataWriter::Create(path, specs_, setup_.meta, test::TestHost());
    ASSERT_TRUE(w.ok());
    ASSERT_EQ(RunAppends(w->get()), appends_.size());
    prefix = (*w)->data_offset();
    ASSERT_TRUE((*w)->Finish().ok());
    full_size = FileSize(path);
    auto e = PerfDataWriter::Create(path, specs_, setup_.meta, test::TestHost());
    ASSERT_TRUE(e.ok() && (*e)->Finish().ok());
    empty_size = FileSize(path);
  }
  for (uint64_t capacity = prefix; capacity <= full_size + 3; ++capacity) {
    SCOPED_TRACE(testing::Message() << "capacity " << capacity);
    FakeDiskIo io;
    io.capacity = capacity;
    io.fallocate_supported = false;
    PerfWriterOptions options;
    options.io = &io;
    ::unlink(path.c_str());
    auto w = PerfDataWriter::Create(path, specs_, setup_.meta, test::TestHost(), options);
    ASSERT_TRUE(w.ok()) << w.status();  // without fallocate nothing is reserved up front
    const size_t accepted = RunAppends(w->get());
    absl::Status finish = (*w)->Finish();
    if (capacity < empty_size) {
      // Not even an empty file fits: Finish says so.
      EXPECT_FALSE(finish.ok());
      continue;
    }
    ASSERT_TRUE(finish.ok()) << finish;
    const int kept = AppendsInDataSize((*w)->data_size());
    ASSERT_GE(kept, 0) << "the data does not end on an append boundary";
    EXPECT_LE(static_cast<size_t>(kept), accepted);
    EXPECT_EQ((*w)->disk_full(), static_cast<size_t>(kept) < appends_.size());
    std::string error;
    ASSERT_EQ(ReadTimes(path, &error), TimesOf(kept));
    ASSERT_EQ(error, "");
  }
}

}  // namespace
}  // namespace iotrace
