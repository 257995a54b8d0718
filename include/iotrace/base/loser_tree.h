// The k-way merge of streams that are each in time order (trace.dat's per-CPU streams, the live
// engine's per-CPU buffers, several files read as one): a loser (tournament) tree over the
// streams' current (time, stream) keys, whose top is the earliest; ties go to the lower stream.
//
// Why not a binary heap: a heap's sift compares two children a level and reads whatever the
// entries point to; here a replay is one comparison a level on keys held in the tree itself (one
// array of 16-byte keys, 4 KiB at 256 streams), so the merge touches a stream's own data only
// when it wins. At 256 streams, 8 comparisons a record against up to 16. A key is one 128-bit
// integer, time above stream, so that a match is one compare and two conditional moves: as a
// struct compared field by field, GCC 12 made each level two branches, mispredicted about half
// the time since which stream wins is random. The price: the next winner is known only when the
// new key has gone through every level, so a merge that waits on a cache miss for each new key
// waits for them one after another (a heap's predicted branches run ahead): the callers ask for
// each stream's next record ahead (live_merger.h).
#ifndef IOTRACE_BASE_LOSER_TREE_H_
#define IOTRACE_BASE_LOSER_TREE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace iotrace {

class LoserTree {
 public:
  // Starts a merge of `streams` streams, none of them with a record yet (Set, then Build).
  void Reset(size_t streams) {
    size_ = 1;
    while (size_ < streams) size_ *= 2;
    keys_.assign(2 * size_, kEndedKey);
    winner_ = kEndedKey;
  }
  // Stream `stream`'s first record is at `ts` (before Build).
  void Set(uint32_t stream, uint64_t ts) { keys_[size_ + stream] = MakeKey(ts, stream); }
  // Plays the first tournament from the keys Set since Reset.
  void Build() { winner_ = Play(1); }

  bool empty() const { return winner_ == kEndedKey; }
  // The stream holding the earliest record, and that record's time (not empty()).
  uint32_t top() const { return static_cast<uint32_t>(winner_); }
  uint64_t top_ts() const { return static_cast<uint64_t>(winner_ >> 64); }

  // The top stream moved on to a record at `ts` (not before its previous one; not empty()).
  void ReplaceTop(uint64_t ts) { Replay(MakeKey(ts, top())); }
  // The top stream has ended (not empty()).
  void PopTop() { Replay(kEndedKey); }

  // Calls fn(stream) for each stream not ended, in no order: every stream's key is in the tree
  // once, as the winner or the loser of one match.
  template <typename Fn>
  void ForEachStream(Fn fn) const {
    if (!empty()) fn(top());
    for (size_t node = 1; node < size_; ++node) {
      if (keys_[node] != kEndedKey) fn(static_cast<uint32_t>(keys_[node]));
    }
  }

 private:
  // (ts, stream) in time order, ties to the lower stream. An ended stream's key, all ones, is
  // above every real one, even one at time ~0 (a stream is 32 bits of the lower 64).
  using Key = unsigned __int128;
  static constexpr Key kEndedKey = ~Key{0};
  static Key MakeKey(uint64_t ts, uint32_t stream) { return Key{ts} << 64 | stream; }
  // The winner of the subtree at `node`, its matches' losers stored on the way (depth first:
  // log2(streams) deep, and no scratch array to allocate).
  Key Play(size_t node) {
    if (node >= size_) return keys_[node];
    const Key a = Play(2 * node), b = Play(2 * node + 1);
    const bool b_wins = b < a;
    keys_[node] = b_wins ? a : b;
    return b_wins ? b : a;
  }

  // `k` is the top stream's new key: the matches on the path from its leaf to the root are
  // played again, each against the loser stored there (one comparison a level).
  void Replay(Key k) {
    Key* const t = keys_.data();
    for (size_t node = (size_ + top()) / 2; node >= 1; node /= 2) {
      // Selects, not a branch (see the top of this file).
      const Key stored = t[node];
      const bool stored_wins = stored < k;
      t[node] = stored_wins ? k : stored;
      k = stored_wins ? stored : k;
    }
    winner_ = k;
  }

  size_t size_ = 1;        // leaves: the streams rounded up to a power of two
  std::vector<Key> keys_;  // [1, size_): each match's loser; [size_, 2 size_): leaves, for Build
  Key winner_ = kEndedKey;
};

}  // namespace iotrace

#endif  // IOTRACE_BASE_LOSER_TREE_H_
