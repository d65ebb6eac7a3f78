#include "chunk_handoff.h"

namespace gpuscope::reader {

ChunkView DecodedChunk::view() const {
  ChunkView v;
  v.offset = offset;
  v.sequence = sequence;
  v.chunk = chunk;
  records.fill_view(&v);
  return v;
}

// ~50 us of pause instructions: about a third of a chunk's visit.
bool ChunkHandoff::spin_for_empty() const {
  constexpr int kSpins = 2000;
  for (int i = 0; i < kSpins; ++i) {
    if (empty_count_.load(std::memory_order_acquire) != 0) return true;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  return false;
}

std::unique_ptr<DecodedChunk> ChunkHandoff::take_empty() {
  {
    std::lock_guard lock(mutex_);
    if (created_ < chunks_) {
      ++created_;
      return std::make_unique<DecodedChunk>();
    }
  }
  spin_for_empty();
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return stopped_ || !empty_.empty(); });
  if (stopped_) return nullptr;
  auto chunk = std::move(empty_.front());
  empty_.pop_front();
  empty_count_.store(empty_.size(), std::memory_order_release);
  return chunk;
}

void ChunkHandoff::hand_over(std::unique_ptr<DecodedChunk> chunk) {
  {
    std::lock_guard lock(mutex_);
    full_.push_back(std::move(chunk));
  }
  changed_.notify_all();
}

void ChunkHandoff::finish() {
  {
    std::lock_guard lock(mutex_);
    finished_ = true;
  }
  changed_.notify_all();
}

std::unique_ptr<DecodedChunk> ChunkHandoff::next() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return !full_.empty() || finished_; });
  if (full_.empty()) return nullptr;
  auto chunk = std::move(full_.front());
  full_.pop_front();
  return chunk;
}

void ChunkHandoff::give_back(std::unique_ptr<DecodedChunk> chunk) {
  {
    std::lock_guard lock(mutex_);
    empty_.push_back(std::move(chunk));
    empty_count_.store(empty_.size(), std::memory_order_release);
  }
  changed_.notify_all();
}

void ChunkHandoff::stop() {
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  changed_.notify_all();
}

}  // namespace gpuscope::reader
