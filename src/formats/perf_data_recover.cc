#include "iotrace/formats/perf_data_recover.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_format.h"
#include "iotrace/base/fd.h"
#include "iotrace/base/status.h"
#include "iotrace/formats/perf_data.h"

namespace iotrace {
namespace {

bool PRead(int fd, void* buf, size_t n, uint64_t offset) {
  return PreadUpTo(fd, buf, n, offset) == n;
}

absl::Status PWrite(int fd, const void* buf, size_t n, uint64_t offset, const std::string& path) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pwrite(fd, static_cast<const char*>(buf) + done, n - done,
                         static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return ErrnoError(r < 0 ? errno : EIO, "write", path);
    done += static_cast<size_t>(r);
  }
  return absl::OkStatus();
}

// The recovery block ending at `data_offset`: its start, the final header and the table.
struct Block {
  uint64_t start = 0;
  char magic[16] = {};
  perf::FileHeader header;
  std::string table;
};

bool ReadBlock(int fd, uint64_t data_offset, Block* b) {
  uint64_t table_size = 0;
  if (data_offset < perf::RecoveryBlockSize(0) ||
      !PRead(fd, &table_size, sizeof(table_size), data_offset - sizeof(table_size)) ||
      table_size > 16 * 256 || table_size % 16 != 0 ||
      data_offset < sizeof(perf::FileHeader) + perf::RecoveryBlockSize(table_size)) {
    return false;
  }
  b->start = data_offset - perf::RecoveryBlockSize(table_size);
  b->table.resize(table_size);
  if (!PRead(fd, b->magic, sizeof(b->magic), b->start) ||
      !PRead(fd, &b->header, sizeof(b->header), b->start + sizeof(b->magic)) ||
      !PRead(fd, b->table.data(), table_size, b->start + sizeof(b->magic) + sizeof(b->header))) {
    return false;
  }
  return std::memcmp(b->magic, perf::kRecoveryMagic, sizeof(b->magic)) == 0 ||
         std::memcmp(b->magic, perf::kRecoveredMagic, sizeof(b->magic)) == 0;
}

absl::Status NotOurs(const std::string& path, const std::string& why) {
  return WithHint(absl::InvalidArgumentError(absl::StrFormat("recover %s: %s", path, why)),
                  "recover finishes perf.data and trace.dat files of an iotrace record that was "
                  "killed; perf's own files it does not know");
}

}  // namespace

bool PerfDataWasRecovered(ByteView file, uint64_t data_offset) {
  uint64_t table_size = 0;
  if (data_offset > file.size || data_offset < perf::RecoveryBlockSize(0) ||
      !LoadAt(file, data_offset - sizeof(table_size), &table_size) || table_size > 16 * 256 ||
      data_offset < perf::RecoveryBlockSize(table_size)) {
    return false;
  }
  const uint64_t start = data_offset - perf::RecoveryBlockSize(table_size);
  return std::memcmp(file.data + start, perf::kRecoveredMagic, sizeof(perf::kRecoveredMagic)) == 0;
}

absl::StatusOr<PerfDataRecovery> RecoverPerfData(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(errno, "open", path);
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return ErrnoError(errno, "stat", path);
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  perf::FileHeader h;
  if (!PRead(fd.get(), &h, sizeof(h), 0) || h.magic != perf::kMagic ||
      h.size != sizeof(perf::FileHeader)) {
    return NotOurs(path, "not a perf.data file of iotrace record");
  }
  PerfDataRecovery out;
  bool any_feature = false;
  for (uint64_t word : h.features) any_feature |= word != 0;
  if (h.data.size == 0 && any_feature && file_size > sizeof(h)) {
    // perf's first header (the feature bits it means to write): finished with no records, or
    // killed (perf::NeverFinished, which needs the file's bytes).
    void* addr = ::mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
    if (addr == MAP_FAILED) return ErrnoError(errno, "mmap", path);
    UniqueMapping map(addr, file_size);
    if (perf::NeverFinished(ByteView(addr, file_size), h, sizeof(h))) {
      return NotOurs(path,
                     "perf record did not finish it, and only iotrace record's recordings "
                     "can be finished (iotrace report reads it as it is)");
    }
  }
  if (h.data.size != 0 || any_feature) {
    out.was_complete = true;
    return out;
  }
  Block b;
  if (h.data.offset > file_size || !ReadBlock(fd.get(), h.data.offset, &b)) {
    return NotOurs(path, "it has no iotrace recovery block (written by perf, or by an older "
                         "iotrace)");
  }
  if (b.header.data.offset != h.data.offset) return NotOurs(path, "its recovery block is damaged");
  // The records as written, up to the last whole one: a kill can cut the last write anywhere.
  uint64_t at = h.data.offset;
  while (at + sizeof(perf::EventHeader) <= file_size) {
    perf::EventHeader e;
    if (!PRead(fd.get(), &e, sizeof(e), at) || e.size < sizeof(e) || e.size % 8 != 0 ||
        at + e.size > file_size) {
      break;
    }
    at += e.size;
    ++out.records;
  }
  out.data_bytes = at - h.data.offset;
  out.bytes_cut = file_size - at;
  // The table after the data, then the header that names both, as PerfDataWriter::Finish does;
  // the block is marked last, so a kill in between leaves a file that recover takes up again.
  IOTRACE_RETURN_IF_ERROR(PWrite(fd.get(), b.table.data(), b.table.size(), at, path));
  if (::ftruncate(fd.get(), static_cast<off_t>(at + b.table.size())) != 0) {
    return ErrnoError(errno, "truncate", path);
  }
  if (::fdatasync(fd.get()) != 0) return ErrnoError(errno, "sync", path);
  b.header.data.size = out.data_bytes;
  IOTRACE_RETURN_IF_ERROR(PWrite(fd.get(), &b.header, sizeof(b.header), 0, path));
  IOTRACE_RETURN_IF_ERROR(
      PWrite(fd.get(), perf::kRecoveredMagic, sizeof(perf::kRecoveredMagic), b.start, path));
  if (::fdatasync(fd.get()) != 0) return ErrnoError(errno, "sync", path);
  return out;
}

}  // namespace iotrace
