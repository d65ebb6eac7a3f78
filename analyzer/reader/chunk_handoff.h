// Decoded chunks on their way from the thread that reads, checks and
// decodes frames to the thread that visits them (TraceReader::read with two
// threads). The reading side is most of a pass's work on a big trace
// (checksums, zstd, verification, unshuffling, delta decoding); the visitor
// (the model, an export) the rest, so the two overlap on two cores.
//
// A fixed number of chunks circulate: the reader fills an empty one, hands
// it over, and waits when all are handed over and not yet given back, so
// memory stays a few chunks whatever the trace's size.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "record_checks.h"
#include "trace_reader.h"

namespace gpuscope::reader {

struct DecodedChunk {
  uint64_t offset = 0;
  uint64_t end_offset = 0;  // just past the frame: how far the pass has come
  uint32_t sequence = 0;
  std::vector<uint64_t> storage;  // the chunk's FlatBuffer, 8-aligned; `chunk` points into it
  const fb::Chunk* chunk = nullptr;
  DecodedRecords records;

  ChunkView view() const;
};

// Where TraceReader's frame loop puts each decoded chunk: the visitor at
// once, or the handoff to the visiting thread.
struct ChunkSink {
  // The chunk outlives the reader's next frame (it is visited on another
  // thread): it takes the chunk's bytes too.
  explicit ChunkSink(bool keeps_bytes) : keeps_bytes(keeps_bytes) {}
  virtual ~ChunkSink() = default;
  const bool keeps_bytes;
  // A chunk to decode into; null: stop reading (the visitor stopped).
  virtual DecodedChunk* take() = 0;
  virtual void put(DecodedChunk* chunk) = 0;
};

class ChunkHandoff {
 public:
  explicit ChunkHandoff(size_t chunks) : chunks_(chunks) {}

  // Reader: a chunk to fill; null once the visitor has stopped.
  std::unique_ptr<DecodedChunk> take_empty();
  // Reader: hands a filled chunk over; then, at the end, finish().
  void hand_over(std::unique_ptr<DecodedChunk> chunk);
  void finish();

  // Visitor: the next chunk in file order, null after the last.
  std::unique_ptr<DecodedChunk> next();
  void give_back(std::unique_ptr<DecodedChunk> chunk);
  // Visitor: no more chunks wanted (the visitor threw); the reader stops.
  void stop();

 private:
  // The reader is usually the faster side and waits for an empty chunk at
  // every frame: it first spins a little on this count (its own core), so
  // that the visitor's give_back finds nobody asleep to wake (a futex wake
  // per chunk was ~2 % of the visiting thread, the busier one).
  bool spin_for_empty() const;
  std::atomic<size_t> empty_count_{0};  // empty_.size(), readable without the lock
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::unique_ptr<DecodedChunk>> full_, empty_;
  size_t chunks_;         // how many may exist
  size_t created_ = 0;
  bool finished_ = false;
  bool stopped_ = false;
};

}  // namespace gpuscope::reader
