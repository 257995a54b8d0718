// Walks one ftrace ring-buffer sub-buffer ("page") in place: the page header (timestamp, commit
// with its missed-events flags), then the compressed event headers, yielding each data record
// with its absolute timestamp. Never reads outside the page, never allocates.
//
// Kernel ABI (kernel/trace/ring_buffer.c, include/linux/ring_buffer.h):
//   struct buffer_data_page { u64 time_stamp; local_t commit; unsigned char data[]; }
//   commit = bytes of event data | RB_MISSED_EVENTS (1<<31) | RB_MISSED_STORED (1<<30);
//   with RB_MISSED_STORED the missed count (an unsigned long) sits at data[size].
//   struct ring_buffer_event { u32 type_len:5, time_delta:27; u32 array[]; }
//   type_len 0: data, payload length + 4 in array[0], payload from array[1];
//   1..28: data, payload of 4*type_len bytes from array[0];
//   29 padding (time_delta 0: rest of the page is empty; else array[0] = length after the header);
//   30 time extend (delta = array[0] << 27 | time_delta);
//   31 absolute time stamp (same encoding, the top 5 bits come from the current time).
// The timestamp bookkeeping follows libtraceevent's kbuffer (what trace-cmd report uses): every
// record's time_delta, padding included, advances the clock.
#ifndef IOTRACE_FORMATS_FTRACE_PAGE_H_
#define IOTRACE_FORMATS_FTRACE_PAGE_H_

#include <cstdint>
#include <cstring>
#include <string_view>

#include "absl/status/statusor.h"
#include "iotrace/base/bytes.h"

namespace iotrace {

inline constexpr uint64_t kRbMissedEvents = uint64_t{1} << 31;
inline constexpr uint64_t kRbMissedStored = uint64_t{1} << 30;
// kbuffer masks the data size with 27 bits; anything in bits 27..29 makes the commit invalid.
inline constexpr uint64_t kRbCommitSizeMask = (uint64_t{1} << 30) - 1;
inline constexpr uint32_t kRbTypeDataMax = 28;
inline constexpr uint32_t kRbTypePadding = 29;
inline constexpr uint32_t kRbTypeTimeExtend = 30;
inline constexpr uint32_t kRbTypeTimeStamp = 31;
inline constexpr uint32_t kRbTimeShift = 27;
inline constexpr uint64_t kRbTimeStampMsbMask = uint64_t{0xf8} << 56;

// Where the header fields of a sub-buffer are, from events/header_page. The sub-buffer size is
// data_offset + the data field's size: 4096 by default, larger with buffer_subbuf_size_kb.
struct FtracePageLayout {
  uint32_t timestamp_offset = 0;
  uint32_t commit_offset = 8;
  uint32_t commit_size = 8;  // the kernel's sizeof(long)
  uint32_t data_offset = 16;
  uint32_t page_size = 4096;

  uint32_t data_capacity() const { return page_size - data_offset; }
};

// Parses header_page text. When the text gives no data size, `fallback_page_size` is used.
absl::StatusOr<FtracePageLayout> ParseHeaderPage(std::string_view text,
                                                 uint32_t fallback_page_size);
// Checks that header_event describes the encoding this walker implements (type_len:5,
// time_delta:27, padding 29, time_extend 30, time_stamp 31, data max 28).
absl::Status CheckHeaderEvent(std::string_view text);

enum class FtracePageProblem : uint8_t {
  kNone = 0,
  kShortPage,      // fewer bytes than a page header
  kCommitPastEnd,  // the data size in commit is larger than the page's data area
  kEventPastEnd,   // an event header or payload runs past the data size
  kBadLength,      // a type_len 0 event whose length word is below 4
  kTimeBackwards,  // an absolute time stamp earlier than the time before it
};
inline constexpr int kFtracePageProblemCount = 6;
// A stable name for counters ("ftrace_commit_past_page_end", ...).
const char* FtracePageProblemName(FtracePageProblem problem);

struct FtraceRecord {
  uint64_t ts = 0;
  ByteView payload;  // the event's data, starting with the common header (4-byte multiple)
};

class FtracePageWalker {
 public:
  explicit FtracePageWalker(const FtracePageLayout& layout) : layout_(layout) {}

  // Starts on `page` (normally exactly layout.page_size bytes). False when the header is
  // unusable (problem() says why); Next() then yields nothing. The page must outlive the walk.
  bool Reset(ByteView page);

  // The page the walk is on grew (a memory-mapped reader sub-buffer that the kernel's writer is
  // still filling; `page` is the same bytes as at Reset): takes the data size from its commit
  // again, with acquire order, and walks on from where it stopped. True when it grew.
  bool Refresh(ByteView page);

  // The next data record, or false at the end of the page or at a corrupt event (then
  // problem() is set and the rest of the page is skipped). Always inline: a caller's merge loop
  // with more around it (trace_dat_reader.cc's ranged read) got a call a record otherwise.
  [[gnu::always_inline]] inline bool Next(FtraceRecord* out);

  uint64_t page_timestamp() const { return page_ts_; }
  uint32_t data_size() const { return end_; }
  // The kernel overwrote events between the previous page of this CPU and this one.
  bool missed_events() const { return missed_; }
  // How many, when the kernel had room to store the count (else unknown).
  bool missed_count_known() const { return missed_stored_; }
  uint64_t missed_count() const { return missed_count_; }
  FtracePageProblem problem() const { return problem_; }
  uint64_t current_time() const { return ts_; }
  // Gives up on the rest of the page (no problem recorded).
  void SkipRest() { pos_ = end_; }

 private:
  bool Fail(FtracePageProblem p) {
    problem_ = p;
    pos_ = end_;
    return false;
  }

  // What Next() reads and writes comes first, in 24 bytes: a reader of many CPUs keeps each
  // walker in one cache line with its own per-record state (trace_dat_reader.cc's Cursor).
  const uint8_t* data_ = nullptr;  // start of the event data
  uint64_t ts_ = 0;
  uint32_t pos_ = 0;
  uint32_t end_ = 0;  // data size from commit (within a page's data area: below 2^32)
  FtracePageLayout layout_;
  uint64_t page_ts_ = 0;
  uint64_t missed_count_ = 0;
  bool missed_ = false;
  bool missed_stored_ = false;
  FtracePageProblem problem_ = FtracePageProblem::kNone;
};

inline bool FtracePageWalker::Next(FtraceRecord* out) {
  while (pos_ < end_) {
    if (end_ - pos_ < 4) return Fail(FtracePageProblem::kEventPastEnd);
    uint32_t header;
    std::memcpy(&header, data_ + pos_, 4);
    const uint32_t type_len = header & 31u;
    const uint32_t delta = header >> 5;
    const size_t body = pos_ + 4;
    if (type_len != 0 && type_len <= kRbTypeDataMax) {
      const size_t len = size_t{type_len} * 4;
      if (len > end_ - body) return Fail(FtracePageProblem::kEventPastEnd);
      ts_ += delta;
      out->ts = ts_;
      out->payload = ByteView(data_ + body, len);
      pos_ = static_cast<uint32_t>(body + len);
      return true;
    }
    // Every other kind carries a 32-bit word in array[0].
    if (end_ - body < 4) {
      // A null padding event (time_delta 0) may be a bare 4-byte header at the very end.
      if (type_len == kRbTypePadding && delta == 0) {
        pos_ = end_;
        return false;
      }
      return Fail(FtracePageProblem::kEventPastEnd);
    }
    uint32_t word;
    std::memcpy(&word, data_ + body, 4);
    switch (type_len) {
      case 0: {
        if (word < 4) return Fail(FtracePageProblem::kBadLength);
        const size_t len = (size_t{word} - 4 + 3) & ~size_t{3};
        const size_t start = body + 4;
        if (len > end_ - start) return Fail(FtracePageProblem::kEventPastEnd);
        ts_ += delta;
        out->ts = ts_;
        out->payload = ByteView(data_ + start, len);
        pos_ = static_cast<uint32_t>(start + len);
        return true;
      }
      case kRbTypePadding:
        if (delta == 0) {  // rb_null_event(): nothing follows on this page
          pos_ = end_;
          return false;
        }
        // A discarded event: skip it. A length past the data size just ends the page (the
        // kernel pads the tail of a page this way, up to the end of the sub-buffer).
        ts_ += delta;
        if (word > end_ - body) {
          pos_ = end_;
          return false;
        }
        pos_ = static_cast<uint32_t>(body + word);
        continue;
      case kRbTypeTimeExtend:
        ts_ += (uint64_t{word} << kRbTimeShift) | delta;
        pos_ = static_cast<uint32_t>(body + 4);
        continue;
      default: {  // kRbTypeTimeStamp
        uint64_t abs = (uint64_t{word} << kRbTimeShift) | delta;
        abs |= ts_ & kRbTimeStampMsbMask;
        if (abs < ts_) return Fail(FtracePageProblem::kTimeBackwards);
        ts_ = abs;
        pos_ = static_cast<uint32_t>(body + 4);
        continue;
      }
    }
  }
  return false;
}

}  // namespace iotrace

#endif  // IOTRACE_FORMATS_FTRACE_PAGE_H_
