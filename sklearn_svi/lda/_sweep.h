/* One pass of the LDA local fixed point over a document's block, written
 * with GCC and Clang vector extensions.
 *
 * The block holds exp E[log beta] of the document's words, one row per
 * word, with its topics padded by zeros to a whole number of vectors
 * (SKLEARN_SVI_DOUBLE_LANES or SKLEARN_SVI_FLOAT_LANES values) and its words
 * padded by zero rows, of count 0, to a multiple of SKLEARN_SVI_WORDS. The
 * sum over topics of one word is formed lane by lane and the lanes added in
 * a fixed order: a document's result does not depend on the thread that
 * computes it. Eight words are taken at a time, eight independent chains of
 * multiply-adds that keep the processor's arithmetic units busy; the lanes
 * of their eight sums are added up by whole-vector shuffles and additions,
 * and their eight ratios come out of vector divisions.
 *
 * The functions are defined for double and float by SKLEARN_SVI_DEFINE.
 */
#ifndef SKLEARN_SVI_LDA_SWEEP_H
#define SKLEARN_SVI_LDA_SWEEP_H

#include <stddef.h>
#include <string.h>

#if !defined(__GNUC__) && !defined(__clang__)
#error "The LDA kernel of sklearn_svi needs GCC or Clang (vector extensions)."
#endif

/* Lanes of a vector: 4 doubles (one AVX2 register, two SSE2 or NEON
   registers) unless the build asks for 8 (one AVX-512 register), and 8
   floats. */
#ifndef SKLEARN_SVI_DOUBLE_LANES
#define SKLEARN_SVI_DOUBLE_LANES 4
#endif
#define SKLEARN_SVI_FLOAT_LANES 8
#define SKLEARN_SVI_WORDS 8

typedef double sklearn_svi_double_lanes
    __attribute__((vector_size(SKLEARN_SVI_DOUBLE_LANES * sizeof(double))));
typedef float sklearn_svi_float_lanes
    __attribute__((vector_size(SKLEARN_SVI_FLOAT_LANES * sizeof(float))));

/* The number of values of type T in one vector. */
#define SKLEARN_SVI_LANES(T) ((ptrdiff_t) (sizeof(sklearn_svi_##T##_lanes) / sizeof(T)))

/* One vector of values at p, which need not be aligned. */
#define SKLEARN_SVI_LOAD(lanes, p) memcpy(&(lanes), (p), sizeof(lanes))
#define SKLEARN_SVI_STORE(p, lanes) memcpy((p), &(lanes), sizeof(lanes))

/* sum += (the vector at p) * theta, with the vector `row` as scratch. */
#define SKLEARN_SVI_MULTIPLY_ADD(sum, row, p, theta) \
    (SKLEARN_SVI_LOAD(row, p), (sum) += (row) * (theta))

/* The lanes of a and b picked by constant indices, 0 to n - 1 for a's and n
   to 2n - 1 for b's; M is the integer vector type of the indices (GCC's
   form takes them as a vector). */
#ifdef __clang__
#define SKLEARN_SVI_SHUFFLE(M, a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define SKLEARN_SVI_SHUFFLE(M, a, b, ...) __builtin_shuffle(a, b, (M){__VA_ARGS__})
#endif

/* Eight-lane vectors: the lane sums of s0, ..., s7 in one vector, by adding
   neighbouring lanes of two vectors at a time: pairs of lanes, then pairs of
   pairs, then halves. */
#define SKLEARN_SVI_PAIRS_8(M, a, b)                                           \
    (SKLEARN_SVI_SHUFFLE(M, a, b, 0, 8, 2, 10, 4, 12, 6, 14)                   \
     + SKLEARN_SVI_SHUFFLE(M, a, b, 1, 9, 3, 11, 5, 13, 7, 15))
#define SKLEARN_SVI_QUADS_8(M, a, b)                                           \
    (SKLEARN_SVI_SHUFFLE(M, a, b, 0, 1, 8, 9, 4, 5, 12, 13)                    \
     + SKLEARN_SVI_SHUFFLE(M, a, b, 2, 3, 10, 11, 6, 7, 14, 15))
#define SKLEARN_SVI_HALVES_8(M, a, b)                                          \
    (SKLEARN_SVI_SHUFFLE(M, a, b, 0, 1, 2, 3, 8, 9, 10, 11)                    \
     + SKLEARN_SVI_SHUFFLE(M, a, b, 4, 5, 6, 7, 12, 13, 14, 15))
#define SKLEARN_SVI_TOTALS_8(M, s0, s1, s2, s3, s4, s5, s6, s7)                \
    SKLEARN_SVI_HALVES_8(M,                                                    \
        SKLEARN_SVI_QUADS_8(M, SKLEARN_SVI_PAIRS_8(M, s0, s1),                 \
                            SKLEARN_SVI_PAIRS_8(M, s2, s3)),                   \
        SKLEARN_SVI_QUADS_8(M, SKLEARN_SVI_PAIRS_8(M, s4, s5),                 \
                            SKLEARN_SVI_PAIRS_8(M, s6, s7)))

/* ratio_w = n_dw / (lane sum of s_w + eps) for the eight words of a group,
   whose counts and ratios are at `counts` and `ratio`: the eight lane sums
   by shuffles, then one division of vectors. V is the vector type, M the
   type of its shuffle indices. */
#define SKLEARN_SVI_RATIOS_8(V, M, s0, s1, s2, s3, s4, s5, s6, s7, counts,    \
                             ratio, eps)                                       \
    do {                                                                       \
        V totals_ = SKLEARN_SVI_TOTALS_8(M, s0, s1, s2, s3, s4, s5, s6, s7);   \
        V counts_;                                                             \
        SKLEARN_SVI_LOAD(counts_, counts);                                     \
        counts_ = counts_ / (totals_ + (eps));                                 \
        SKLEARN_SVI_STORE(ratio, counts_);                                     \
    } while (0)

/* The same, one word after the other, each word's lanes added in a fixed
   order (N: the number of lanes, 4 or 8). */
#define SKLEARN_SVI_LANE_SUM_8(s)                                              \
    (((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7])))
#define SKLEARN_SVI_LANE_SUM_4(s) ((s[0] + s[2]) + (s[1] + s[3]))
#define SKLEARN_SVI_RATIOS_BY_WORD(N, s0, s1, s2, s3, s4, s5, s6, s7, counts,  \
                                   ratio, eps)                                 \
    do {                                                                       \
        (ratio)[0] = (counts)[0] / (SKLEARN_SVI_LANE_SUM_##N(s0) + (eps));     \
        (ratio)[1] = (counts)[1] / (SKLEARN_SVI_LANE_SUM_##N(s1) + (eps));     \
        (ratio)[2] = (counts)[2] / (SKLEARN_SVI_LANE_SUM_##N(s2) + (eps));     \
        (ratio)[3] = (counts)[3] / (SKLEARN_SVI_LANE_SUM_##N(s3) + (eps));     \
        (ratio)[4] = (counts)[4] / (SKLEARN_SVI_LANE_SUM_##N(s4) + (eps));     \
        (ratio)[5] = (counts)[5] / (SKLEARN_SVI_LANE_SUM_##N(s5) + (eps));     \
        (ratio)[6] = (counts)[6] / (SKLEARN_SVI_LANE_SUM_##N(s6) + (eps));     \
        (ratio)[7] = (counts)[7] / (SKLEARN_SVI_LANE_SUM_##N(s7) + (eps));     \
    } while (0)

typedef long long sklearn_svi_double_indices
    __attribute__((vector_size(SKLEARN_SVI_DOUBLE_LANES * sizeof(long long))));
typedef int sklearn_svi_float_indices
    __attribute__((vector_size(SKLEARN_SVI_FLOAT_LANES * sizeof(int))));

/* The shuffles pay where an eight-lane vector is one register (AVX for
   floats, AVX-512 for doubles): the local step ran 10% faster. Split over
   two registers, or over the halves of an AVX register for four doubles,
   lanes are slow to cross (20 to 30% slower), and the words are summed one
   by one. */
#if SKLEARN_SVI_DOUBLE_LANES == 8
#define SKLEARN_SVI_RATIOS_double(V, M, ...) SKLEARN_SVI_RATIOS_8(V, M, __VA_ARGS__)
#elif SKLEARN_SVI_DOUBLE_LANES == 4
#define SKLEARN_SVI_RATIOS_double(V, M, ...) SKLEARN_SVI_RATIOS_BY_WORD(4, __VA_ARGS__)
#else
#error "SKLEARN_SVI_DOUBLE_LANES must be 4 or 8."
#endif
#if defined(__AVX__)
#define SKLEARN_SVI_RATIOS_float(V, M, ...) SKLEARN_SVI_RATIOS_8(V, M, __VA_ARGS__)
#else
#define SKLEARN_SVI_RATIOS_float(V, M, ...) SKLEARN_SVI_RATIOS_BY_WORD(8, __VA_ARGS__)
#endif

/* Ask the processor for the cache lines of the `bytes` bytes at p, ahead of
   their use: rows gathered from all over an array are otherwise fetched one
   cache miss after the other. */
static inline void sklearn_svi_prefetch(const void *p, size_t bytes)
{
    const char *line = (const char *) p;
    const char *end = line + bytes;
    for (; line < end; line += 64)
        __builtin_prefetch(line);
    __builtin_prefetch(end - 1);
}

#define SKLEARN_SVI_DEFINE(T, V)                                               \
/* ratio_w = n_dw / (sum_k exp E[log theta_k] exp E[log beta_kw] + eps) for    \
   the eight rows at `rows`: their sums are independent chains, so the         \
   processor overlaps them. */                                                 \
static inline void sklearn_svi_group_ratio_##T(                                \
    const T *rows, const T *exp_theta, const T *counts, T *ratio,              \
    ptrdiff_t n_padded, T eps)                                                 \
{                                                                              \
    V s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0}, s4 = {0}, s5 = {0}, s6 = {0},    \
      s7 = {0}, theta, row;                                                    \
    ptrdiff_t k;                                                               \
    for (k = 0; k < n_padded; k += SKLEARN_SVI_LANES(T)) {                     \
        SKLEARN_SVI_LOAD(theta, exp_theta + k);                                \
        SKLEARN_SVI_MULTIPLY_ADD(s0, row, rows + k, theta);                    \
        SKLEARN_SVI_MULTIPLY_ADD(s1, row, rows + n_padded + k, theta);         \
        SKLEARN_SVI_MULTIPLY_ADD(s2, row, rows + 2 * n_padded + k, theta);     \
        SKLEARN_SVI_MULTIPLY_ADD(s3, row, rows + 3 * n_padded + k, theta);     \
        SKLEARN_SVI_MULTIPLY_ADD(s4, row, rows + 4 * n_padded + k, theta);     \
        SKLEARN_SVI_MULTIPLY_ADD(s5, row, rows + 5 * n_padded + k, theta);     \
        SKLEARN_SVI_MULTIPLY_ADD(s6, row, rows + 6 * n_padded + k, theta);     \
        SKLEARN_SVI_MULTIPLY_ADD(s7, row, rows + 7 * n_padded + k, theta);     \
    }                                                                          \
    SKLEARN_SVI_RATIOS_##T(V, sklearn_svi_##T##_indices, s0, s1, s2, s3, s4,  \
                           s5, s6, s7, counts, ratio, eps);                    \
}                                                                              \
                                                                               \
/* ratio_w alone for the n_rows rows of the block. */                          \
static inline void sklearn_svi_count_ratio_##T(                                \
    const T *block, const T *exp_theta, const T *counts, T *ratio,             \
    ptrdiff_t n_rows, ptrdiff_t n_padded, T eps)                               \
{                                                                              \
    ptrdiff_t j;                                                               \
    for (j = 0; j < n_rows; j += SKLEARN_SVI_WORDS)                            \
        sklearn_svi_group_ratio_##T(block + j * n_padded, exp_theta,           \
                                    counts + j, ratio + j, n_padded, eps);     \
}                                                                              \
                                                                               \
/* One iteration's pass over the block of n_rows rows: the ratios of each      \
   group of words, then, while their rows are still in the first-level         \
   cache, topic_sum_k = sum_w ratio_w exp E[log beta_kw]. The block is read    \
   once per iteration. The group's ratios are copied to local variables:       \
   the compiler must otherwise reload them after every store to topic_sum. */  \
static inline void sklearn_svi_sweep_##T(                                      \
    const T *block, const T *exp_theta, const T *counts, T *ratio,             \
    T *topic_sum, ptrdiff_t n_rows, ptrdiff_t n_padded, T eps)                 \
{                                                                              \
    V sum, r0, r1, r2, r3, r4, r5, r6, r7;                                     \
    T w0, w1, w2, w3, w4, w5, w6, w7;                                          \
    const T *rows;                                                             \
    ptrdiff_t j, k;                                                            \
    memset(topic_sum, 0, n_padded * sizeof(T));                                \
    for (j = 0; j < n_rows; j += SKLEARN_SVI_WORDS) {                          \
        rows = block + j * n_padded;                                           \
        sklearn_svi_group_ratio_##T(rows, exp_theta, counts + j, ratio + j,    \
                                    n_padded, eps);                            \
        w0 = ratio[j];                                                         \
        w1 = ratio[j + 1];                                                     \
        w2 = ratio[j + 2];                                                     \
        w3 = ratio[j + 3];                                                     \
        w4 = ratio[j + 4];                                                     \
        w5 = ratio[j + 5];                                                     \
        w6 = ratio[j + 6];                                                     \
        w7 = ratio[j + 7];                                                     \
        for (k = 0; k < n_padded; k += SKLEARN_SVI_LANES(T)) {                 \
            SKLEARN_SVI_LOAD(sum, topic_sum + k);                              \
            SKLEARN_SVI_LOAD(r0, rows + k);                                    \
            SKLEARN_SVI_LOAD(r1, rows + n_padded + k);                         \
            SKLEARN_SVI_LOAD(r2, rows + 2 * n_padded + k);                     \
            SKLEARN_SVI_LOAD(r3, rows + 3 * n_padded + k);                     \
            SKLEARN_SVI_LOAD(r4, rows + 4 * n_padded + k);                     \
            SKLEARN_SVI_LOAD(r5, rows + 5 * n_padded + k);                     \
            SKLEARN_SVI_LOAD(r6, rows + 6 * n_padded + k);                     \
            SKLEARN_SVI_LOAD(r7, rows + 7 * n_padded + k);                     \
            sum += w0 * r0;                                                    \
            sum += w1 * r1;                                                    \
            sum += w2 * r2;                                                    \
            sum += w3 * r3;                                                    \
            sum += w4 * r4;                                                    \
            sum += w5 * r5;                                                    \
            sum += w6 * r6;                                                    \
            sum += w7 * r7;                                                    \
            SKLEARN_SVI_STORE(topic_sum + k, sum);                             \
        }                                                                      \
    }                                                                          \
}

SKLEARN_SVI_DEFINE(double, sklearn_svi_double_lanes)
SKLEARN_SVI_DEFINE(float, sklearn_svi_float_lanes)

#undef SKLEARN_SVI_DEFINE

#endif
