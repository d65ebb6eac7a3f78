// Byte shuffling of record vectors (docs/trace-format.md, "Record vectors").
//
// Records are stored in blocks of kShuffleBlock records; inside a block,
// byte 0 of every record comes first, then byte 1 of every record, and so
// on (the last block may be shorter). After delta coding most high bytes are
// zero, so shuffled vectors turn into long runs that zstd compresses several
// times faster and smaller than interleaved structs (docs/performance.md).
//
// SSE2 (baseline x86-64) transposes 16 records x 16 bytes at a time, AVX2
// (chosen at run time) two such blocks at once; other targets use the
// scalar loop. All three produce the same bytes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#define GPUSCOPE_SHUFFLE_AVX2 1
#endif

#include "cpu_features.h"

namespace gpuscope::container {

inline constexpr size_t kShuffleBlock = 256;

namespace detail {

inline void shuffle_scalar(const uint8_t* in, size_t first, size_t n, size_t size, uint8_t* out) {
  for (size_t i = first; i < n; ++i)
    for (size_t b = 0; b < size; ++b) out[b * n + i] = in[i * size + b];
}

inline void unshuffle_scalar(const uint8_t* in, size_t first, size_t n, size_t size, uint8_t* out) {
  for (size_t i = first; i < n; ++i)
    for (size_t b = 0; b < size; ++b) out[i * size + b] = in[b * n + i];
}

#if defined(__SSE2__)
// One round maps element (register r, byte c) to (r<<1|c>>3, c<<1|r>>3): a
// rotation of the 8-bit index (r,c); four rounds rotate it by four, which is
// the transpose of the 16x16 byte matrix.
inline __attribute__((always_inline)) void interleave_round(const __m128i* a, __m128i* b) {
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    b[2 * i] = _mm_unpacklo_epi8(a[i], a[i + 8]);
    b[2 * i + 1] = _mm_unpackhi_epi8(a[i], a[i + 8]);
  }
}

inline __attribute__((always_inline)) void transpose16x16(__m128i* a) {
  __m128i b[16];
  interleave_round(a, b);
  interleave_round(b, a);
  interleave_round(a, b);
  interleave_round(b, a);
}

// Records [first, ...) of one block in groups of 16; returns where it
// stopped. `size` is a multiple of 8.
inline size_t shuffle_sse2(const uint8_t* in, size_t first, size_t n, size_t size, uint8_t* out) {
  size_t i = first;
  for (; i + 16 <= n; i += 16) {
    for (size_t c = 0; c < size; c += 16) {
      const bool half = size - c == 8;  // an 8-byte tail column group
      __m128i a[16];
#pragma GCC unroll 16
      for (int k = 0; k < 16; ++k) {
        const auto* p = reinterpret_cast<const __m128i*>(in + (i + k) * size + c);
        a[k] = half ? _mm_loadl_epi64(p) : _mm_loadu_si128(p);
      }
      transpose16x16(a);
      const int rows = half ? 8 : 16;
      for (int j = 0; j < rows; ++j) _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (c + j) * n + i), a[j]);
    }
  }
  return i;
}

inline size_t unshuffle_sse2(const uint8_t* in, size_t first, size_t n, size_t size, uint8_t* out) {
  size_t i = first;
  for (; i + 16 <= n; i += 16) {
    for (size_t c = 0; c < size; c += 16) {
      const bool half = size - c == 8;
      const int rows = half ? 8 : 16;
      __m128i a[16];
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j)
        a[j] = j < rows ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + (c + j) * n + i))
                        : _mm_setzero_si128();
      transpose16x16(a);
      for (int k = 0; k < 16; ++k) {
        auto* p = reinterpret_cast<__m128i*>(out + (i + k) * size + c);
        if (half) _mm_storel_epi64(p, a[k]);
        else _mm_storeu_si128(p, a[k]);
      }
    }
  }
  return i;
}
#endif

#if defined(GPUSCOPE_SHUFFLE_AVX2)
// The same transpose on 256-bit registers: unpack works within each 128-bit
// lane, so the low lanes transpose records i..i+15 while the high lanes
// transpose records i+16..i+31, and each output row is 32 contiguous bytes.
#define GPUSCOPE_AVX2_FN __attribute__((target("avx2"), always_inline)) inline
GPUSCOPE_AVX2_FN void interleave_round_avx2(const __m256i* a, __m256i* b) {
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    b[2 * i] = _mm256_unpacklo_epi8(a[i], a[i + 8]);
    b[2 * i + 1] = _mm256_unpackhi_epi8(a[i], a[i + 8]);
  }
}

GPUSCOPE_AVX2_FN void transpose16x16_twice(__m256i* a) {
  __m256i b[16];
  interleave_round_avx2(a, b);
  interleave_round_avx2(b, a);
  interleave_round_avx2(a, b);
  interleave_round_avx2(b, a);
}

GPUSCOPE_AVX2_FN __m128i load_group(const uint8_t* p, bool half) {
  return half ? _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)) : _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// Records [0, ...) of one block in groups of 32; returns where it stopped.
__attribute__((target("avx2"))) inline size_t shuffle_avx2(const uint8_t* in, size_t n, size_t size, uint8_t* out) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (size_t c = 0; c < size; c += 16) {
      const bool half = size - c == 8;
      __m256i a[16];
#pragma GCC unroll 16
      for (size_t k = 0; k < 16; ++k)
        a[k] = _mm256_inserti128_si256(_mm256_castsi128_si256(load_group(in + (i + k) * size + c, half)),
                                       load_group(in + (i + 16 + k) * size + c, half), 1);
      transpose16x16_twice(a);
      const size_t rows = half ? 8 : 16;
      for (size_t j = 0; j < rows; ++j) _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (c + j) * n + i), a[j]);
    }
  }
  return i;
}

// Streaming (for records another core reads next): each group of 32
// records is transposed into an L1-resident stage and written out with
// non-temporal stores, whole lines at a time. Unshuffling in place stored
// 16-byte pieces at the record stride into lines the reading core had
// just read, each store waiting to take its line back: the reading
// thread ran at ~1.8 GB/s there against ~20 GB/s alone (docs/performance.md).
inline constexpr size_t kMaxStagedRecord = 64;

template <bool kStreaming>
__attribute__((target("avx2"))) inline size_t unshuffle_avx2(const uint8_t* in, size_t n, size_t size, uint8_t* dst) {
  size_t i = 0;
  alignas(32) uint8_t stage[kStreaming ? 32 * kMaxStagedRecord : 32];
  for (; i + 32 <= n; i += 32) {
    // Where the transpose writes this group's 32 records: the output
    // itself, or the stage.
    uint8_t* group = kStreaming ? stage : dst + i * size;
    for (size_t c = 0; c < size; c += 16) {
      const bool half = size - c == 8;
      const size_t rows = half ? 8 : 16;
      __m256i a[16];
#pragma GCC unroll 16
      for (size_t j = 0; j < 16; ++j)
        a[j] = j < rows ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + (c + j) * n + i))
                        : _mm256_setzero_si256();
      transpose16x16_twice(a);
      for (size_t k = 0; k < 16; ++k) {
        auto* lo = reinterpret_cast<__m128i*>(group + k * size + c);
        auto* hi = reinterpret_cast<__m128i*>(group + (16 + k) * size + c);
        if (half) {
          _mm_storel_epi64(lo, _mm256_castsi256_si128(a[k]));
          _mm_storel_epi64(hi, _mm256_extracti128_si256(a[k], 1));
        } else {
          _mm_storeu_si128(lo, _mm256_castsi256_si128(a[k]));
          _mm_storeu_si128(hi, _mm256_extracti128_si256(a[k], 1));
        }
      }
    }
    if constexpr (kStreaming)
      for (size_t b = 0; b < 32 * size; b += 16)
        _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i * size + b),
                         _mm_load_si128(reinterpret_cast<const __m128i*>(stage + b)));
  }
  return i;
}
#undef GPUSCOPE_AVX2_FN

inline bool has_avx2() noexcept {
  static const bool yes = cpu_has_avx2();  // asked per block: once is enough
  return yes;
}
#endif

// One block of n records: the widest transpose first, the rest narrower.
inline void shuffle_block(const uint8_t* in, size_t n, size_t size, uint8_t* out) {
  size_t done = 0;
#if defined(GPUSCOPE_SHUFFLE_AVX2)
  if (has_avx2()) done = shuffle_avx2(in, n, size, out);
#endif
#if defined(__SSE2__)
  done = shuffle_sse2(in, done, n, size, out);
#endif
  shuffle_scalar(in, done, n, size, out);
}

inline void unshuffle_block(const uint8_t* in, size_t n, size_t size, uint8_t* out, bool streaming) {
  size_t done = 0;
#if defined(GPUSCOPE_SHUFFLE_AVX2)
  if (has_avx2()) done = streaming ? unshuffle_avx2<true>(in, n, size, out) : unshuffle_avx2<false>(in, n, size, out);
#endif
#if defined(__SSE2__)
  done = unshuffle_sse2(in, done, n, size, out);
#endif
  unshuffle_scalar(in, done, n, size, out);
}

}  // namespace detail

// `count` records of `record_size` bytes (a multiple of 8) from `in` to `out`
// (count * record_size bytes each; the two must not overlap).
inline void shuffle_records(const uint8_t* in, size_t count, size_t record_size, uint8_t* out) {
  for (size_t first = 0; first < count; first += kShuffleBlock) {
    const size_t n = std::min(kShuffleBlock, count - first);
    detail::shuffle_block(in + first * record_size, n, record_size, out + first * record_size);
  }
}

// `streaming`: the records are read next on another core, so the AVX2
// path writes them around this core's cache (the stores are fenced before
// returning). Used where the output is 16-byte aligned and the records are
// at most kMaxStagedRecord bytes; otherwise the ordinary stores.
inline void unshuffle_records(const uint8_t* in, size_t count, size_t record_size, uint8_t* out,
                              bool streaming = false) {
#if defined(GPUSCOPE_SHUFFLE_AVX2)
  streaming = streaming && record_size <= detail::kMaxStagedRecord && reinterpret_cast<uintptr_t>(out) % 16 == 0;
#else
  streaming = false;
#endif
  for (size_t first = 0; first < count; first += kShuffleBlock) {
    const size_t n = std::min(kShuffleBlock, count - first);
    detail::unshuffle_block(in + first * record_size, n, record_size, out + first * record_size, streaming);
  }
#if defined(GPUSCOPE_SHUFFLE_AVX2)
  if (streaming) _mm_sfence();
#endif
}

}  // namespace gpuscope::container
