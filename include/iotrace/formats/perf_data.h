// perf.data (PERFILE2) on-disk layout shared by the writer and the reader: the file header, its
// sections, record headers and types, header feature ids, and the sample_id trailer that
// sample_id_all appends to non-sample records. Sources: tools/perf/util/header.{h,c},
// tools/perf/Documentation/perf.data-file-format.txt, include/uapi/linux/perf_event.h.
#ifndef IOTRACE_FORMATS_PERF_DATA_H_
#define IOTRACE_FORMATS_PERF_DATA_H_

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "iotrace/base/bytes.h"

namespace iotrace::perf {

// "PERFILE2" read as a little-endian u64; a big-endian writer's file shows the swapped value.
inline constexpr uint64_t kMagic = 0x32454c4946524550ULL;
inline constexpr uint64_t kMagicSwapped = 0x50455246494c4532ULL;

struct FileSection {
  uint64_t offset = 0;
  uint64_t size = 0;
};

// struct perf_file_header (tools/perf/util/header.h). `attr_size` is the size of one entry of
// the attrs section: perf writes sizeof(struct perf_file_attr), i.e. the attr plus its ids
// section, and readers must use the value in the file (other perf versions write other sizes).
struct FileHeader {
  uint64_t magic = kMagic;
  uint64_t size = sizeof(FileHeader);
  uint64_t attr_size = 0;
  FileSection attrs;
  FileSection data;
  FileSection event_types;    // ignored by perf since 2012, written as zeros
  uint64_t features[4] = {};  // bitmap of Feature bits (HEADER_FEAT_BITS = 256)
};
static_assert(sizeof(FileHeader) == 104);

// iotrace record's perf.data keeps, right before the data section, what finishing it writes:
// kRecoveryMagic, the final FileHeader (its data size 0), the feature section table, and the
// table's size (u64), ending at the data offset. A recording killed before it finished has
// only its header of "no data, no features" at the front; RecoverPerfData (perf_data_recover.h)
// finishes it from this block and turns the magic into kRecoveredMagic, by which a reader knows
// the file did not end as recorded.
inline constexpr char kRecoveryMagic[16] = {'i', 'o', 't', 'r', 'a', 'c', 'e', '-',
                                             'f', 'i', 'n', 'i', 's', 'h', '\0', '\0'};
inline constexpr char kRecoveredMagic[16] = {'i', 'o', 't', 'r', 'a', 'c', 'e', '-',
                                              'r', 'e', 'c', 'o', 'v', 'e', 'r', 'd'};
inline constexpr uint64_t RecoveryBlockSize(uint64_t table_bytes) {
  return sizeof(kRecoveryMagic) + sizeof(FileHeader) + table_bytes + sizeof(uint64_t);
}
// Files from perf before 2.6.37 end the header before the feature bitmap.
inline constexpr uint64_t kFileHeaderSizeNoFeatures = 72;
// Pipe-mode files ("perf record -o -") have only magic + size; attrs and features travel as
// records inside the data instead.
inline constexpr uint64_t kPipeHeaderSize = 16;

// One entry of the attrs section as this build writes it.
struct FileAttr {
  perf_event_attr attr;
  FileSection ids;  // u64 event ids (PERF_EVENT_IOC_ID) that belong to this attr
};
static_assert(sizeof(FileAttr) == sizeof(perf_event_attr) + sizeof(FileSection));

struct EventHeader {
  uint32_t type = 0;
  uint16_t misc = 0;
  uint16_t size = 0;  // whole record including this header
};
static_assert(sizeof(EventHeader) == 8);

// Record types: the kernel's (include/uapi/linux/perf_event.h) and those perf adds in files
// (tools/lib/perf/include/perf/event.h, enum perf_user_event_type).
enum RecordType : uint32_t {
  kRecordMmap = 1,
  kRecordLost = 2,
  kRecordComm = 3,
  kRecordExit = 4,
  kRecordThrottle = 5,
  kRecordUnthrottle = 6,
  kRecordFork = 7,
  kRecordRead = 8,
  kRecordSample = 9,
  kRecordMmap2 = 10,
  kRecordAux = 11,
  kRecordItraceStart = 12,
  kRecordLostSamples = 13,
  kRecordSwitch = 14,
  kRecordSwitchCpuWide = 15,
  kRecordNamespaces = 16,
  kRecordKsymbol = 17,
  kRecordBpfEvent = 18,
  kRecordCgroup = 19,
  kRecordHeaderAttr = 64,
  kRecordHeaderEventType = 65,
  kRecordHeaderTracingData = 66,
  kRecordHeaderBuildId = 67,
  kRecordFinishedRound = 68,
  kRecordIdIndex = 69,
  kRecordAuxtraceInfo = 70,
  kRecordAuxtrace = 71,  // followed by `size` bytes of AUX data not counted in header.size
  kRecordAuxtraceError = 72,
  kRecordThreadMap = 73,
  kRecordCpuMap = 74,
  kRecordStatConfig = 75,
  kRecordStat = 76,
  kRecordStatRound = 77,
  kRecordEventUpdate = 78,
  kRecordTimeConv = 79,
  kRecordHeaderFeature = 80,
  kRecordCompressed = 81,
  kRecordFinishedInit = 82,
  kRecordCompressed2 = 83,  // perf 2025: aligned, with the size of its zstd bytes
};

// PERF_RECORD_MISC_COMM_EXEC: the COMM record comes from an exec.
inline constexpr uint16_t kMiscCommExec = 1 << 13;

// Header features (enum in tools/perf/util/header.h); bit N of FileHeader::features.
enum Feature : int {
  kFeatTracingData = 1,
  kFeatBuildId = 2,
  kFeatHostname = 3,
  kFeatOsRelease = 4,
  kFeatVersion = 5,
  kFeatArch = 6,
  kFeatNrCpus = 7,
  kFeatCpuDesc = 8,
  kFeatCpuId = 9,
  kFeatTotalMem = 10,
  kFeatCmdline = 11,
  kFeatEventDesc = 12,
  kFeatCpuTopology = 13,
  kFeatNumaTopology = 14,
  kFeatBranchStack = 15,
  kFeatPmuMappings = 16,
  kFeatGroupDesc = 17,
  kFeatAuxtrace = 18,
  kFeatStat = 19,
  kFeatCache = 20,
  kFeatSampleTime = 21,
  kFeatMemTopology = 22,
  kFeatClockId = 23,  // u64 clock resolution in ns (not the clock id)
  kFeatDirFormat = 24,
  kFeatBpfProgInfo = 25,
  kFeatBpfBtf = 26,
  kFeatCompressed = 27,
  kFeatCpuPmuCaps = 28,
  kFeatClockData = 29,  // u32 version (1), u32 clockid, u64 wall-clock ns, u64 clockid ns
  kFeatHybridTopology = 30,
  kFeatPmuCaps = 31,
  kFeatBits = 256,
};

// perf pads feature strings: u32 length (incl. NUL, rounded up to 64) then the padded bytes.
inline constexpr uint32_t kNameAlign = 64;

// "hostname", "os_release", ... ; "feature_N" for ids this code does not know.
std::string FeatureName(int feature);

// The fields a non-sample record's sample_id trailer can carry (sample_id_all). Which ones are
// present depends on the attr's sample_type: TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER, in that
// order (kernel/events/core.c, __perf_event_header__init_id).
struct SampleId {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t time = 0;
  uint64_t id = 0;
  uint64_t stream_id = 0;
  uint32_t cpu = 0;
};

// Bytes of the sample_id trailer for `sample_type`.
size_t SampleIdSize(uint64_t sample_type);
// Appends the trailer for `sample_type` to `out`.
void AppendSampleId(uint64_t sample_type, const SampleId& id, std::string* out);

// Bytes of a PERF_SAMPLE_READ value for `read_format` when it is not a group read.
size_t ReadValueSize(uint64_t read_format);

// perf's id_pos: index (in u64 words after the record header) of the event id inside a sample,
// or -1 when the sample carries none (tools/perf/util/evsel.c, evsel__calc_id_pos).
int SampleIdPos(uint64_t sample_type);
// perf's is_pos: index counted back from the end (1 = last u64) of the event id inside a
// non-sample record's trailer, or -1 when there is none.
int TrailerIdPos(uint64_t sample_type);

// Rounds up to a multiple of 8, the alignment of every record in a perf ring.
inline constexpr uint64_t Align8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

// Whether bit `feature` (Feature) of the header's feature bitmap is set.
inline bool HasFeature(const FileHeader& h, int feature) {
  return (h.features[feature / 64] >> (feature % 64) & 1) != 0;
}

// A recording that never finished: perf record and iotrace record write the header first with
// a data size of 0, and again with the sizes at the end; killed in between, the file's records
// run from the data offset to its end. iotrace's first header has no feature bits; perf's has
// those it meant to write, but no feature table follows. (A finished recording that holds no
// record has a data size of 0 too: its feature table lies at the data offset, every section it
// names in the file and clear of the table: after it as perf writes them, before the data as
// iotrace does.) `file` is the whole file, `hsize` its header's size.
bool NeverFinished(ByteView file, const FileHeader& h, uint64_t hsize);

}  // namespace iotrace::perf

#endif  // IOTRACE_FORMATS_PERF_DATA_H_
