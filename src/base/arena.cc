#include "iotrace/base/arena.h"

#include <sys/mman.h>

namespace iotrace {

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

std::shared_ptr<PopulatedArena> PopulatedArena::Create(size_t bytes, bool populate) {
  std::shared_ptr<PopulatedArena> arena(new PopulatedArena());
  if (bytes == 0 || IOTRACE_ASAN) return arena;  // holds nothing: the heap serves every allocation
  absl::StatusOr<UniqueMapping> memory = MapHugeAnonymous(bytes);
  if (!memory.ok()) return arena;
  // One call for every page (a kernel before 5.14 says EINVAL: the pages fault in as touched).
  arena->populated_ =
      populate && ::madvise(memory->addr(), memory->size(), MADV_POPULATE_WRITE) == 0;
  arena->begin_ = arena->next_ = reinterpret_cast<uintptr_t>(memory->addr());
  arena->end_ = arena->begin_ + memory->size();
  arena->memory_ = *std::move(memory);
  return arena;
}

}  // namespace iotrace
