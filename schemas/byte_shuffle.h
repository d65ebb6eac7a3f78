// Byte shuffling of record vectors (docs/trace-format.md, "Record vectors").
//
// Records are stored in blocks of kShuffleBlock records; inside a block,
// byte 0 of every record comes first, then byte 1 of every record, and so
// on (the last block may be shorter). After delta coding most high bytes are
// zero, so shuffled vectors turn into long runs that zstd compresses several
// times faster and smaller than interleaved structs (docs/performance.md).
//
// SSE2 (baseline x86-64) transposes 16 records x 16 bytes at a time; other
// targets use the scalar loop, which produces the same bytes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

// Records [0, n - n % 16) of one block; `size` is a multiple of 8.
inline void shuffle_sse2(const uint8_t* in, size_t n, size_t size, uint8_t* out) {
  for (size_t i = 0; i + 16 <= n; i += 16) {
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
}

inline void unshuffle_sse2(const uint8_t* in, size_t n, size_t size, uint8_t* out) {
  for (size_t i = 0; i + 16 <= n; i += 16) {
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
}
#endif

// One block of n records.
inline void shuffle_block(const uint8_t* in, size_t n, size_t size, uint8_t* out) {
#if defined(__SSE2__)
  shuffle_sse2(in, n, size, out);
  shuffle_scalar(in, n - n % 16, n, size, out);
#else
  shuffle_scalar(in, 0, n, size, out);
#endif
}

inline void unshuffle_block(const uint8_t* in, size_t n, size_t size, uint8_t* out) {
#if defined(__SSE2__)
  unshuffle_sse2(in, n, size, out);
  unshuffle_scalar(in, n - n % 16, n, size, out);
#else
  unshuffle_scalar(in, 0, n, size, out);
#endif
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

inline void unshuffle_records(const uint8_t* in, size_t count, size_t record_size, uint8_t* out) {
  for (size_t first = 0; first < count; first += kShuffleBlock) {
    const size_t n = std::min(kShuffleBlock, count - first);
    detail::unshuffle_block(in + first * record_size, n, record_size, out + first * record_size);
  }
}

}  // namespace gpuscope::container
