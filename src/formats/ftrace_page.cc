#include "iotrace/formats/ftrace_page.h"

#include <algorithm>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace iotrace {
namespace {

struct HeaderField {
  bool found = false;
  uint32_t offset = 0;
  uint32_t size = 0;
};

// Reads "key:NUMBER;" out of a header_page line.
bool NumberAfter(absl::string_view line, absl::string_view key, uint32_t* out) {
  size_t pos = line.find(key);
  if (pos == absl::string_view::npos) return false;
  absl::string_view rest = line.substr(pos + key.size());
  size_t end = rest.find(';');
  if (end == absl::string_view::npos) return false;
  return absl::SimpleAtoi(absl::StripAsciiWhitespace(rest.substr(0, end)), out);
}

}  // namespace

absl::StatusOr<FtracePageLayout> ParseHeaderPage(std::string_view text,
                                                 uint32_t fallback_page_size) {
  HeaderField timestamp, commit, data;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    size_t field = line.find("field:");
    if (field == absl::string_view::npos) continue;
    absl::string_view decl = line.substr(field + 6);
    size_t semi = decl.find(';');
    if (semi == absl::string_view::npos) continue;
    decl = absl::StripAsciiWhitespace(decl.substr(0, semi));
    size_t space = decl.find_last_of(" \t");
    absl::string_view name = space == absl::string_view::npos ? decl : decl.substr(space + 1);
    HeaderField* target = nullptr;
    if (name == "timestamp")
      target = &timestamp;
    else if (name == "commit")
      target = &commit;
    else if (name == "data")
      target = &data;
    if (target == nullptr) continue;
    uint32_t offset = 0, size = 0;
    if (!NumberAfter(line, "offset:", &offset) || !NumberAfter(line, "size:", &size)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("parse header_page: field %s has no offset or size", std::string(name)));
    }
    *target = {true, offset, size};
  }
  if (!timestamp.found || !commit.found || !data.found) {
    return absl::InvalidArgumentError("parse header_page: timestamp, commit or data field missing");
  }
  FtracePageLayout layout;
  layout.timestamp_offset = timestamp.offset;
  layout.commit_offset = commit.offset;
  layout.commit_size = commit.size;
  layout.data_offset = data.offset;
  if (timestamp.size != 8 || (commit.size != 4 && commit.size != 8)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("parse header_page: unexpected sizes (timestamp %u, commit %u bytes)",
                        timestamp.size, commit.size));
  }
  uint64_t page_size = data.size != 0 ? uint64_t{data.offset} + data.size : fallback_page_size;
  if (uint64_t{timestamp.offset} + 8 > data.offset ||
      uint64_t{commit.offset} + commit.size > data.offset ||
      page_size <= data.offset || page_size > (uint64_t{1} << 27)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("parse header_page: inconsistent layout (data at %u, page of %u bytes)",
                        data.offset, page_size));
  }
  layout.page_size = static_cast<uint32_t>(page_size);
  return layout;
}

absl::Status CheckHeaderEvent(std::string_view text) {
  // The kernel prints these lines in ring_buffer_print_entry_header(); compare ignoring spaces.
  std::string squeezed;
  for (char c : text) {
    if (c != ' ' && c != '\t') squeezed.push_back(c);
  }
  const char* required[] = {"type_len:5bits", "time_delta:27bits", "padding:type==29",
                            "time_extend:type==30", "datamaxtype_len==28"};
  for (const char* r : required) {
    if (!absl::StrContains(squeezed, r)) {
      return absl::UnimplementedError(absl::StrFormat(
          "header_event describes an unknown ring-buffer event encoding (no \"%s\")", r));
    }
  }
  // Kernels before 5.x had no time_stamp line; when it is present it must say 31.
  if (absl::StrContains(squeezed, "time_stamp:") &&
      !absl::StrContains(squeezed, "time_stamp:type==31")) {
    return absl::UnimplementedError("header_event: time_stamp type is not 31");
  }
  return absl::OkStatus();
}

const char* FtracePageProblemName(FtracePageProblem problem) {
  switch (problem) {
    case FtracePageProblem::kNone:
      return "none";
    case FtracePageProblem::kShortPage:
      return "ftrace_short_page";
    case FtracePageProblem::kCommitPastEnd:
      return "ftrace_commit_past_page_end";
    case FtracePageProblem::kEventPastEnd:
      return "ftrace_event_past_page_end";
    case FtracePageProblem::kBadLength:
      return "ftrace_bad_event_length";
    case FtracePageProblem::kTimeBackwards:
      return "ftrace_time_backwards";
  }
  return "ftrace_unknown_problem";
}

bool FtracePageWalker::Reset(ByteView page) {
  data_ = nullptr;
  pos_ = end_ = 0;
  ts_ = page_ts_ = 0;
  missed_ = missed_stored_ = false;
  missed_count_ = 0;
  problem_ = FtracePageProblem::kNone;
  if (page.size < layout_.data_offset) {
    problem_ = FtracePageProblem::kShortPage;
    return false;
  }
  uint64_t commit = 0;
  LoadAt(page, layout_.timestamp_offset, &page_ts_);
  LoadUnsigned(page, layout_.commit_offset, layout_.commit_size, &commit);
  ts_ = page_ts_;
  const size_t capacity = std::min<size_t>(page.size, layout_.page_size) - layout_.data_offset;
  const uint64_t size = commit & kRbCommitSizeMask;
  if (size > capacity) {
    problem_ = FtracePageProblem::kCommitPastEnd;
    return false;
  }
  data_ = page.data + layout_.data_offset;
  end_ = static_cast<uint32_t>(size);
  missed_ = (commit & kRbMissedEvents) != 0;
  if (missed_ && (commit & kRbMissedStored) != 0) {
    // The count is an unsigned long (commit_size bytes) right after the data.
    uint64_t count = 0;
    if (LoadUnsigned(ByteView(data_, capacity), end_, layout_.commit_size, &count)) {
      missed_stored_ = true;
      missed_count_ = count;
    }
  }
  return true;
}

bool FtracePageWalker::Refresh(ByteView page) {
  if (data_ == nullptr || problem_ != FtracePageProblem::kNone) return false;
  if (page.size < layout_.commit_offset + layout_.commit_size) return false;
  const uint8_t* at = page.data + layout_.commit_offset;
  uint64_t commit;
  if (layout_.commit_size == 8 && reinterpret_cast<uintptr_t>(at) % 8 == 0) {
    commit = __atomic_load_n(reinterpret_cast<const uint64_t*>(at), __ATOMIC_ACQUIRE);
  } else if (layout_.commit_size == 4 && reinterpret_cast<uintptr_t>(at) % 4 == 0) {
    commit = __atomic_load_n(reinterpret_cast<const uint32_t*>(at), __ATOMIC_ACQUIRE);
  } else {
    return false;
  }
  const size_t capacity = std::min<size_t>(page.size, layout_.page_size) - layout_.data_offset;
  const uint64_t size = commit & kRbCommitSizeMask;
  if (size <= end_ || size > capacity) return false;
  end_ = static_cast<uint32_t>(size);
  return true;
}

}  // namespace iotrace
