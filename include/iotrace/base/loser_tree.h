// The k-way merge of streams that are each in time order (trace.dat's per-CPU streams, the live
// engine's per-CPU buffers, several files read as one): a loser (tournament) tree over the
// streams' current (time, stream) keys, whose top is the earliest; ties go to the lower stream.
//
// Why not a binary heap: a heap's sift compares two children a level and reads whatever the
// entries point to; here a replay is one comparison a level on keys held in the tree itself (one
// array of 8-byte keys, 4 KiB at 256 streams), so the merge touches a stream's own data only
// when it wins. At 256 streams, 8 comparisons a record against up to 16. A key is one 64-bit
// integer, time above stream, so that a match is one compare and two conditional moves: as a
// struct compared field by field, GCC 12 made each level two branches, mispredicted about half
// the time since which stream wins is random. The price: the next winner is known only when the
// new key has gone through every level, so a merge that waits on a cache miss for each new key
// waits for them one after another (a heap's predicted branches run ahead): the callers ask for
// each stream's next record ahead (live_merger.h, trace_dat_reader.cc).
//
// The time in a key is relative to a base (the earliest time of the streams when the tree was
// built), in the 64 bits less those of the stream: 56 at 256 streams (2.3 years of nanoseconds),
// 48 at 65536. A later time beyond that is held at the largest value, above every exact one,
// and when the top is such a time every stream's is: the keys are then made again from the
// earliest (Rebase), as they are for a time before the base (a caller that breaks the order).
// So the order is always that of the (time, stream) pairs. (Keys of 128 bits, time and stream
// whole, needed no base but twice the instructions a level: trace.dat's merge, 300 k events,
// callgrind, 256 CPUs: 259 -> 184 instructions a record; 2 CPUs: 112 -> 114.)
#ifndef IOTRACE_BASE_LOSER_TREE_H_
#define IOTRACE_BASE_LOSER_TREE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace iotrace {

class LoserTree {
 public:
  // Starts a merge of `streams` streams, none of them with a record yet (Set, then Build).
  void Reset(size_t streams) {
    size_ = 1;
    bits_ = 0;
    while (size_ < streams) {
      size_ *= 2;
      ++bits_;
    }
    held_ = (~uint64_t{0} >> bits_) - 1;  // so that every key is below kEndedKey
    keys_.assign(3 * size_, kEndedKey);
    winner_ = kEndedKey;
  }
  // Stream `stream`'s first record is at `ts` (before Build).
  void Set(uint32_t stream, uint64_t ts) {
    keys_[2 * size_ + stream] = ts;
    keys_[size_ + stream] = 0;  // set: its key is made in Build, once the base is known
  }
  // Plays the first tournament from the keys Set since Reset.
  void Build() {
    base_ = ~uint64_t{0};
    for (size_t s = 0; s < size_; ++s) {
      if (keys_[size_ + s] != kEndedKey) base_ = std::min(base_, keys_[2 * size_ + s]);
    }
    for (size_t s = 0; s < size_; ++s) {
      if (keys_[size_ + s] != kEndedKey) keys_[size_ + s] = MakeKey(keys_[2 * size_ + s], s);
    }
    winner_ = Play(1);
  }

  bool empty() const { return winner_ == kEndedKey; }
  // The stream holding the earliest record, and that record's time (not empty()). The top's
  // key is never a held one (see Rebase).
  uint32_t top() const { return static_cast<uint32_t>(winner_ & (size_ - 1)); }
  uint64_t top_ts() const { return base_ + (winner_ >> bits_); }

  // The top stream moved on to a record at `ts` (not before its previous one; not empty()).
  void ReplaceTop(uint64_t ts) {
    const uint64_t rel = ts - base_;
    // (ts >= base_: a time far enough below a high base wraps to a small difference.)
    if (rel < held_ && ts >= base_) [[likely]] {
      Replay(rel << bits_ | top());
    } else {
      ReplaceTopFar(ts);
    }
  }
  // The top stream has ended (not empty()).
  void PopTop() {
    Replay(kEndedKey);
    if (winner_ >> bits_ == held_) Rebase();  // (an ended top's is one more)
  }

  // Calls fn(stream) for each stream not ended, in no order: every stream's key is in the tree
  // once, as the winner or the loser of one match.
  template <typename Fn>
  void ForEachStream(Fn fn) const {
    ForEachKey([&](uint64_t key) { fn(static_cast<uint32_t>(key & (size_ - 1))); });
  }

 private:
  // (time - base, stream) in time order, ties to the lower stream; a time at held_ or beyond
  // is held at held_, its whole value kept apart. An ended stream's key, all ones, is above
  // every other.
  static constexpr uint64_t kEndedKey = ~uint64_t{0};
  // Calls fn(key) for the key of each stream not ended: the winner's and the stored losers'.
  template <typename Fn>
  void ForEachKey(Fn fn) const {
    if (!empty()) fn(winner_);
    for (size_t node = 1; node < size_; ++node) {
      if (keys_[node] != kEndedKey) fn(keys_[node]);
    }
  }
  // Keys made from a stream's whole time (its time kept apart when it is held).
  uint64_t MakeKey(uint64_t ts, uint64_t stream) {
    const uint64_t rel = ts - base_;
    if (rel < held_) return rel << bits_ | stream;
    keys_[2 * size_ + stream] = ts;
    return held_ << bits_ | stream;
  }
  // A time at held_ or more past the base, or before it (a caller that broke the order).
  void ReplaceTopFar(uint64_t ts) {
    Replay(MakeKey(ts, top()));
    if (ts < base_ || winner_ >> bits_ == held_) Rebase();
  }
  // The top is held (so every other stream is) or a time came before the base: the keys are
  // made again from the earliest whole time of the streams not ended.
  void Rebase() {
    uint64_t* const whole = keys_.data() + 2 * size_;
    // Every stream's key is the winner's or one match's loser: the leaves are free to use.
    uint64_t base = ~uint64_t{0};
    ForEachKey([&](uint64_t key) {
      const uint64_t s = key & (size_ - 1);
      if (key >> bits_ != held_) whole[s] = base_ + (key >> bits_);
      base = std::min(base, whole[s]);
    });
    std::fill(keys_.begin() + static_cast<std::ptrdiff_t>(size_),
              keys_.begin() + static_cast<std::ptrdiff_t>(2 * size_), kEndedKey);
    ForEachKey([&](uint64_t key) { keys_[size_ + (key & (size_ - 1))] = key; });
    base_ = base;
    for (size_t s = 0; s < size_; ++s) {
      if (keys_[size_ + s] != kEndedKey) keys_[size_ + s] = MakeKey(whole[s], s);
    }
    winner_ = Play(1);
  }
  // The winner of the subtree at `node`, its matches' losers stored on the way (depth first:
  // log2(streams) deep, and no scratch array to allocate).
  uint64_t Play(size_t node) {
    if (node >= size_) return keys_[node];
    const uint64_t a = Play(2 * node), b = Play(2 * node + 1);
    const bool b_wins = b < a;
    keys_[node] = b_wins ? a : b;
    return b_wins ? b : a;
  }

  // `k` is the top stream's new key: the matches on the path from its leaf to the root are
  // played again, each against the loser stored there (one comparison a level).
  void Replay(uint64_t k) {
    uint64_t* const t = keys_.data();
    for (size_t node = (size_ + top()) / 2; node >= 1; node /= 2) {
      // Selects, not a branch (see the top of this file).
      const uint64_t stored = t[node];
      const bool stored_wins = stored < k;
      t[node] = stored_wins ? k : stored;
      k = stored_wins ? stored : k;
    }
    winner_ = k;
  }

  size_t size_ = 1;     // leaves: the streams rounded up to a power of two
  uint32_t bits_ = 0;   // log2(size_): the stream's bits in a key
  uint64_t held_ = 0;   // the time - base_ a key holds times at and beyond
  uint64_t base_ = 0;   // the time a key's is relative to
  // [1, size_): each match's loser; [size_, 2 size_): leaves; [2 size_, 3 size_): each stream's
  // whole time where its key is held (and at Set), one allocation.
  std::vector<uint64_t> keys_;
  uint64_t winner_ = kEndedKey;
};

}  // namespace iotrace

#endif  // IOTRACE_BASE_LOSER_TREE_H_
