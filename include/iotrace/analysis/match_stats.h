// What pairing counts: the phases of a request (btt's names), the states a request is tracked
// in, why an issue had no insert, and the matcher's counters. Plain types, for the matcher that
// fills them and the report model that shows them (report.h).
#ifndef IOTRACE_ANALYSIS_MATCH_STATS_H_
#define IOTRACE_ANALYSIS_MATCH_STATS_H_

#include <array>
#include <cstdint>
#include <string_view>

#include "iotrace/event/block_event.h"

namespace iotrace {

enum class Phase : uint8_t {
  kI2D,  // insert -> issue: time in the queue / I/O scheduler
  kD2C,  // issue -> complete: time at the device
  kI2C,  // insert -> complete
  kQ2D,  // bio queued -> issue
  kQ2C,  // bio queued -> complete
};
inline constexpr int kPhaseCount = 5;
std::string_view PhaseName(Phase phase);  // "I2D", ...
bool ParsePhase(std::string_view name, Phase* phase);
inline constexpr uint8_t PhaseBit(Phase phase) { return uint8_t{1} << static_cast<int>(phase); }

// Why an issue had no insert before it.
enum class NoInsertReason : uint8_t {
  kInsertNotRecorded,  // the file has no block_rq_insert events at all
  kNoInsertOnDevice,   // the device showed no insert at all: scheduler none or bypass
  kFlush,              // flush requests, issued by the flush machinery
  kInsertMissing,      // the device has inserts, this request's was not seen (lost, started
                       // before the recording, direct issue, or front-merged)
};
inline constexpr int kNoInsertReasonCount = 4;
std::string_view NoInsertReasonName(NoInsertReason reason);

// Where a tracked request is in its life.
enum class RequestState : uint8_t {
  kQueued,    // only its bio was seen (block_bio_queue)
  kInserted,  // inserted, not issued yet
  kIssued,    // issued to the driver, not (fully) completed yet
  kRequeued,  // given back by the driver, waiting to be issued again
};
inline constexpr int kRequestStateCount = 4;
// "queued", "inserted", "issued", "requeued".
std::string_view RequestStateName(RequestState state);

struct MatchStats {  // uint64_t counters only (AddCounters)
  std::array<uint64_t, kPhaseCount> paired{};
  std::array<uint64_t, kNoInsertReasonCount> issues_without_insert{};  // final after Finish()
  uint64_t completes_without_issue = 0;
  // Zero-length completions by the flush machinery: empty preflush requests ended after their
  // flush, requests ended after their post-flush (their data completed before).
  uint64_t flush_sequence_completions = 0;
  uint64_t flushes = 0;            // flush requests completed and paired
  uint64_t requeues = 0;           // requeues of an issued request
  uint64_t requeues_unmatched = 0; // requeue of a request not seen issued
  uint64_t merges = 0;             // block_rq_merge that removed a tracked request
  uint64_t merges_before_insert = 0;  // block_rq_merge of a request merged while being inserted
                                      // (its bio was seen queued, the request never inserted)
  uint64_t merges_unmatched = 0;   // block_rq_merge of a request not tracked at all (also what
                                   // merges before insert look like without block_bio_queue)
  uint64_t bio_front_merges = 0;
  uint64_t bio_back_merges = 0;
  uint64_t partial_completions = 0;
  uint64_t collisions = 0;         // insert/issue on a key held by a live request
  // Issued requests kept apart when another request came to their sector while they were in
  // flight (a read and a write of one block, two reads of it): a completion goes to the request
  // of its size and op, the latest issued first. Not collisions: nothing is given up.
  uint64_t overlapping = 0;
  uint64_t bio_queue_on_live = 0;  // block_bio_queue on a key held by a live request
  uint64_t completion_errors = 0;  // completions with error != 0 (still sampled)
  uint64_t negative_latency = 0;   // phases dropped because the end preceded the start
  std::array<uint64_t, kRequestStateCount> expired{};           // idle past expiry_ns
  std::array<uint64_t, kRequestStateCount> evicted{};           // table or flush FIFO full
  std::array<uint64_t, kRequestStateCount> collided{};          // given up at a collision
  std::array<uint64_t, kRequestStateCount> in_flight_at_end{};  // left when the file ended
  // Of those, the issued (or requeued) ones last active before Finish's `stale_before`:
  // requests that should have completed long before the file ended (their completion was most
  // likely lost). Only the issued and requeued counts can be non-zero.
  std::array<uint64_t, kRequestStateCount> stale_at_end{};
  // Flushes given up when the events passed the end of a gap in the data (DropFlushes): they
  // pair in FIFO order, so one whose issue or completion fell in the gap would shift the
  // pairing of every later flush.
  std::array<uint64_t, kRequestStateCount> flushes_at_gap{};
  // Requests given up (expired, evicted, collided) or left stale at the end with a gap in the
  // data between their last event and then: most likely their next event lay in the gap.
  // Counted here instead of above; their samples would cross the gap anyway.
  std::array<uint64_t, kRequestStateCount> across_gap{};
};

struct DeviceMatchStats {
  uint32_t dev = 0;
  std::array<uint64_t, kBlockEventKindCount> events{};
  uint64_t issues_without_insert = 0;  // flushes not included
  // The device's share of MatchStats' counters of the same names (live --listen exports them
  // per device): completions and requeues of requests not seen issued, and requests given up
  // (expired, evicted and collided, over every state, across_gap included).
  uint64_t completes_without_issue = 0;
  uint64_t requeues_unmatched = 0;
  uint64_t expired = 0;
  uint64_t evicted = 0;
  uint64_t collided = 0;
  uint64_t tracked = 0;  // requests tracked when devices() was called (a gauge, not a counter)
  NoInsertReason no_insert_reason = NoInsertReason::kInsertMissing;  // after Finish()
};

}  // namespace iotrace

#endif  // IOTRACE_ANALYSIS_MATCH_STATS_H_
