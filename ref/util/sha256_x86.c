/* sha256_x86.c: SHA-256's compression on the x86 SHA extensions
 * (sha256rnds2, sha256msg1, sha256msg2), which hash about 4.5 times as
 * fast as sha256.c's portable rounds on this project's machine: the run
 * header's hash of a 2.48 GB file 8.6 s -> 1.9 s, an 8B-shaped score from a
 * cold cache 93 s -> 66 s (docs/runs/2026-12-06-sha256-speed.txt,
 * 2026-12-06-8b-check.txt).
 *
 * The extensions keep the eight working words as two vectors, ABEF and
 * CDGH (A in the top lane); sha256rnds2 runs two rounds on the low two
 * words of message plus constants, so each group of four words is two
 * calls, the second on the words moved down. The schedule's next four words
 * are msg2(msg1(W[g-4], W[g-3]) + W[g-2..g-1] shifted by one word, W[g-1]):
 * FIPS 180-4's W[t] = σ1(W[t-2]) + W[t-7] + σ0(W[t-15]) + W[t-16], four at
 * a time. The digest is the same bits either way (tests/test_oracle.c). */
#include "ref/util/sha256.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>

bool sha256_hardware_available(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || (c & bit_SSE4_1) == 0 || (c & bit_SSSE3) == 0)
        return false;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_SHA) != 0;
}

__attribute__((target("sha,sse4.1"))) void
sha256_blocks_hardware(uint32_t h[8], const uint8_t *data, size_t blocks) {
    /* each 32-bit word's bytes reversed: the message is big-endian */
    const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    /* h's A B C D, E F G H into ABEF and CDGH, A and C in the top lanes */
    __m128i abcd = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)h), 0xB1);       /* B A D C */
    __m128i efgh = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(h + 4)), 0x1B); /* HGFE */
    __m128i abef = _mm_alignr_epi8(abcd, efgh, 8);
    __m128i cdgh = _mm_blend_epi16(efgh, abcd, 0xF0);
    for (size_t n = 0; n < blocks; n++, data += 64) {
        __m128i abef_in = abef, cdgh_in = cdgh, w[4];
        for (int i = 0; i < 4; i++)
            w[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 16 * i)), swap);
        for (int g = 0; g < 16; g++) {
            /* w[g % 4] holds W[g-4]; w[(g+1) % 4] W[g-3]; ... w[(g+3) % 4] W[g-1] */
            if (g >= 4) {
                __m128i back7 = _mm_alignr_epi8(w[(g + 3) & 3], w[(g + 2) & 3], 4);
                w[g & 3] = _mm_sha256msg2_epu32(
                    _mm_add_epi32(_mm_sha256msg1_epu32(w[g & 3], w[(g + 1) & 3]), back7),
                    w[(g + 3) & 3]);
            }
            __m128i wk = _mm_add_epi32(
                w[g & 3], _mm_loadu_si128((const __m128i *)(sha256_round_constants + 4 * g)));
            /* two rounds make the old ABEF the new CDGH: after the first
             * call cdgh holds ABEF and abef CDGH, after the second each its
             * own again */
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
        }
        abef = _mm_add_epi32(abef, abef_in);
        cdgh = _mm_add_epi32(cdgh, cdgh_in);
    }
    __m128i feba = _mm_shuffle_epi32(abef, 0x1B); /* A B E F in lanes 0..3 */
    __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1); /* G H C D */
    _mm_storeu_si128((__m128i *)h, _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128((__m128i *)(h + 4), _mm_alignr_epi8(dchg, feba, 8));
}
#else
bool sha256_hardware_available(void) {
    return false;
}

void sha256_blocks_hardware(uint32_t h[8], const uint8_t *data, size_t blocks) {
    (void)h, (void)data, (void)blocks; /* never called: not available */
}
#endif
