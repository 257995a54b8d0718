// PerfDataWriter fed with real perf ring bytes from this kernel: per-CPU rings for
// block_rq_{insert,issue,complete} opened with the attr `iotrace record` uses, drained verbatim,
// around direct writes to a scratch loop device. Requires root, tracefs and losetup.
// Checks that perf script and OpenPerfData read the file alike, and that samples + silent drops
// (PERF_RECORD_LOST_SAMPLES from read() counts) account for every event the kernel counted.
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "../unit/test_files.h"
#include "gtest/gtest.h"
#include "iotrace/base/fd.h"
#include "iotrace/event/event_format.h"
#include "iotrace/formats/perf_data_reader.h"
#include "iotrace/formats/perf_data_writer.h"
#include "iotrace/formats/perf_record_parser.h"
#include "iotrace/sys/host_info.h"

namespace iotrace {
namespace {

constexpr char kTracing[] = "/sys/kernel/tracing";
constexpr const char* kEvents[] = {"block_rq_insert", "block_rq_issue", "block_rq_complete"};
constexpr size_t kRingPages = 64;

std::string Shell(const std::string& command, int* status) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  *status = ::pclose(p);
  return out;
}

uint64_t MonotonicNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// Everything the test sets up, torn down in every path.
struct LiveSetup {
  std::vector<UniqueFd> fds;  // [cpu * events + event]
  std::vector<void*> rings;   // per CPU
  size_t ring_bytes = 0;
  std::string image, device, output;
  ~LiveSetup() {
    for (void* r : rings) {
      if (r != nullptr && r != MAP_FAILED) ::munmap(r, ring_bytes);
    }
    fds.clear();
    int st;
    if (!device.empty()) Shell("losetup -d " + device + " 2>/dev/null", &st);
    if (!image.empty()) ::unlink(image.c_str());
    if (!output.empty()) ::unlink(output.c_str());
  }
};

TEST(PerfDataWriterLiveTest, RealRingBytesReadBackLikePerfScriptWithEveryEventAccounted) {
  if (geteuid() != 0) GTEST_SKIP() << "REQUIRES root (perf_event_open on tracepoints, losetup)";
  const std::string block = std::string(kTracing) + "/events/block";
  if (::access((block + "/block_rq_issue/id").c_str(), R_OK) != 0) {
    GTEST_SKIP() << "REQUIRES tracefs with block tracepoints at " << kTracing;
  }
  int st = 0;
  Shell("command -v losetup >/dev/null", &st);
  if (st != 0) GTEST_SKIP() << "REQUIRES losetup";

  // Formats and ids from tracefs.
  TracingMetadata meta;
  auto page = ReadFileToString(std::string(kTracing) + "/events/header_page");
  auto event = ReadFileToString(std::string(kTracing) + "/events/header_event");
  ASSERT_TRUE(page.ok() && event.ok());
  meta.header_page = *page;
  meta.header_event = *event;
  std::vector<EventFormat> formats;
  for (const char* name : kEvents) {
    auto text = ReadFileToString(block + "/" + name + "/format");
    ASSERT_TRUE(text.ok()) << text.status();
    meta.event_formats.push_back({"block", *text});
    auto f = ParseEventFormat("block", *text);
    ASSERT_TRUE(f.ok()) << f.status();
    formats.push_back(*f);
  }

  LiveSetup s;
  const int cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  const size_t nev = std::size(kEvents);
  const long page_size = sysconf(_SC_PAGESIZE);
  s.ring_bytes = (1 + kRingPages) * page_size;
  std::vector<PerfEventSpec> specs(nev);
  for (int cpu = 0; cpu < cpus; ++cpu) {
    for (size_t e = 0; e < nev; ++e) {
      perf_event_attr a{};
      a.type = PERF_TYPE_TRACEPOINT;
      a.size = sizeof(a);
      a.config = formats[e].id;
      a.sample_period = 1;
      a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                      PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;
      a.read_format = PERF_FORMAT_ID | PERF_FORMAT_LOST;
      a.disabled = 1;
      a.sample_id_all = 1;
      a.use_clockid = 1;
      a.clockid = CLOCK_MONOTONIC;
      int fd =
          static_cast<int>(syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC));
      ASSERT_GE(fd, 0) << "perf_event_open " << kEvents[e] << " cpu " << cpu << ": "
                       << strerror(errno);
      s.fds.emplace_back(fd);
      if (e == 0) {
        void* ring = ::mmap(nullptr, s.ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        ASSERT_NE(ring, MAP_FAILED) << strerror(errno);
        s.rings.push_back(ring);
      } else {
        ASSERT_EQ(ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, s.fds[cpu * nev].get()), 0)
            << strerror(errno);
      }
      uint64_t id = 0;
      ASSERT_EQ(ioctl(fd, PERF_EVENT_IOC_ID, &id), 0);
      specs[e].attr = a;
      specs[e].name = std::string("block:") + kEvents[e];
      specs[e].ids.push_back(id);
    }
  }

  // A scratch loop device with mq-deadline, so that inserts happen.
  std::string image_path = test::TestTmpDir() + "/perfdata-live-XXXXXX";
  char* image = image_path.data();
  int ifd = mkstemp(image);
  ASSERT_GE(ifd, 0);
  ::close(ifd);
  s.image = image;
  ASSERT_EQ(::truncate(image, 32 << 20), 0);
  s.device = Shell(std::string("losetup -f --show ") + image, &st);
  while (!s.device.empty() && s.device.back() == '\n') s.device.pop_back();
  ASSERT_EQ(st, 0) << "losetup failed";
  const std::string dev_name = s.device.substr(s.device.rfind('/') + 1);
  Shell("echo mq-deadline > /sys/block/" + dev_name + "/queue/scheduler", &st);
  auto dev_numbers = ReadFileToString("/sys/block/" + dev_name + "/dev");
  ASSERT_TRUE(dev_numbers.ok());
  const uint32_t minor =
      static_cast<uint32_t>(std::stoul(dev_numbers->substr(dev_numbers->find(':') + 1)));

  s.output = test::TmpPath("perfdata-live", ".data");
  auto writer = PerfDataWriter::Create(s.output, specs, meta, ThisMachine({"live"}));
  ASSERT_TRUE(writer.ok()) << writer.status();

  for (const UniqueFd& fd : s.fds) ASSERT_EQ(ioctl(fd.get(), PERF_EVENT_IOC_ENABLE, 0), 0);
  Shell("dd if=/dev/zero of=" + s.device + " bs=4k count=64 oflag=direct status=none", &st);
  ASSERT_EQ(st, 0);
  for (const UniqueFd& fd : s.fds) ASSERT_EQ(ioctl(fd.get(), PERF_EVENT_IOC_DISABLE, 0), 0);

  // Drain each ring verbatim (at most two pieces), counting samples per (event, cpu) with the
  // record parser, as the recorder does to find silent drops.
  std::vector<PerfAttrInfo> infos;
  for (const PerfEventSpec& spec : specs) infos.push_back({spec.attr, spec.ids});
  auto parser = PerfRecordParser::Create(infos);
  ASSERT_TRUE(parser.ok()) << parser.status();
  std::map<std::pair<int, int>, uint64_t> ring_samples;  // (event, cpu) -> samples
  for (int cpu = 0; cpu < cpus; ++cpu) {
    auto* mp = static_cast<perf_event_mmap_page*>(s.rings[cpu]);
    const uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
    const uint64_t tail = mp->data_tail;
    const uint8_t* data = static_cast<const uint8_t*>(s.rings[cpu]) + mp->data_offset;
    const uint64_t size = mp->data_size;
    const uint64_t at = tail % size;
    const uint64_t len = head - tail;
    const uint64_t first = std::min(len, size - at);
    ByteView a(data + at, first), b(data, len - first);
    ASSERT_TRUE((*writer)->AppendData(a, b).ok());
    std::string copy(reinterpret_cast<const char*>(a.data), a.size);
    copy.append(reinterpret_cast<const char*>(b.data), b.size);
    for (size_t pos = 0; pos + 8 <= copy.size();) {
      perf::EventHeader h;
      std::memcpy(&h, copy.data() + pos, 8);
      ASSERT_GE(h.size, 8);
      PerfRecord rec;
      if (parser->Parse(ByteView(copy.data() + pos, h.size), &rec) == PerfProblem::kNone &&
          rec.kind == PerfRecord::Kind::kEvent) {
        for (size_t e = 0; e < nev; ++e) {
          if (rec.event.type == formats[e].id) ++ring_samples[{int(e), int(rec.event.cpu)}];
        }
      }
      pos += h.size;
    }
    __atomic_store_n(&mp->data_tail, head, __ATOMIC_RELEASE);
  }
  ASSERT_TRUE((*writer)->AppendFinishedRound().ok());

  // Kernel counts: what the ring lacks was dropped silently.
  std::map<int, uint64_t> kernel_counts;
  for (int cpu = 0; cpu < cpus; ++cpu) {
    for (size_t e = 0; e < nev; ++e) {
      uint64_t values[3] = {};  // value, id, lost
      ASSERT_EQ(::read(s.fds[cpu * nev + e].get(), values, sizeof(values)),
                static_cast<ssize_t>(sizeof(values)));
      kernel_counts[int(e)] += values[0];
      const uint64_t seen = ring_samples[{int(e), cpu}];
      ASSERT_GE(values[0], seen);
      if (values[0] > seen) {
        perf::SampleId id;
        id.cpu = static_cast<uint32_t>(cpu);
        id.id = values[1];
        id.time = MonotonicNs();
        ASSERT_TRUE((*writer)->AppendLostSamples(e, values[0] - seen, id).ok());
      }
    }
  }
  ASSERT_TRUE((*writer)->Finish().ok());

  auto reader = OpenPerfData(s.output);
  ASSERT_TRUE(reader.ok()) << reader.status();
  class Sink : public EventSink {
   public:
    void OnEvent(const RawEvent& e) override {
      ++per_type[e.type];
      uint32_t dev = 0;
      LoadAt(e.payload, dev_offset, &dev);
      if ((dev >> 20) == 7 && (dev & 0xfffff) == minor) ++per_type_on_loop[e.type];
    }
    void OnLoss(const LossRecord& l) override {
      if (l.kind == LossRecord::Kind::kSilentDrop) drops[l.event_id] += l.count;
    }
    uint32_t minor = 0;
    uint32_t dev_offset = 8;
    std::map<uint32_t, uint64_t> per_type, per_type_on_loop;
    std::map<int32_t, uint64_t> drops;
  } sink;
  sink.minor = minor;
  ASSERT_NE(formats[1].FindField("dev"), nullptr);
  sink.dev_offset = formats[1].FindField("dev")->offset;
  ASSERT_TRUE((*reader)->ReadAll(&sink).ok());
  EXPECT_TRUE((*reader)->stats().problems.empty());

  uint64_t total = 0;
  for (size_t e = 0; e < nev; ++e) {
    const uint32_t id = formats[e].id;
    total += sink.per_type[id];
    EXPECT_EQ(sink.per_type[id] + sink.drops[int32_t(id)], kernel_counts[int(e)])
        << kEvents[e] << ": samples + silent drops must equal the kernel's count";
    std::printf("  %s: %lu samples (%lu on %s) + %lu silent drops = %lu counted by the kernel\n",
                kEvents[e], (unsigned long)sink.per_type[id],
                (unsigned long)sink.per_type_on_loop[id], s.device.c_str(),
                (unsigned long)sink.drops[int32_t(id)], (unsigned long)kernel_counts[int(e)]);
  }
  // 64 direct 4 KiB writes: each issued; completions may be dropped silently (idle CPU), but
  // then they are accounted above.
  EXPECT_GE(sink.per_type_on_loop[formats[1].id], 64u);

  const std::string script =
      Shell("perf script -i " + s.output + " -F event 2>/dev/null | grep -c 'block:'", &st);
  EXPECT_EQ(std::stoull(script), total) << "perf script and the reader disagree";
}

}  // namespace
}  // namespace iotrace
