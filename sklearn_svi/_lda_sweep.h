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
 * multiply-adds that keep the processor's arithmetic units busy.
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

/* The sum of the lanes of s, always in the same order. */
#define SKLEARN_SVI_TOTAL_OF_8(s) \
    (((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7])))
#if SKLEARN_SVI_DOUBLE_LANES == 8
#define SKLEARN_SVI_TOTAL_double(s) SKLEARN_SVI_TOTAL_OF_8(s)
#elif SKLEARN_SVI_DOUBLE_LANES == 4
#define SKLEARN_SVI_TOTAL_double(s) ((s[0] + s[2]) + (s[1] + s[3]))
#else
#error "SKLEARN_SVI_DOUBLE_LANES must be 4 or 8."
#endif
#define SKLEARN_SVI_TOTAL_float(s) SKLEARN_SVI_TOTAL_OF_8(s)

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
    ratio[0] = counts[0] / (SKLEARN_SVI_TOTAL_##T(s0) + eps);                  \
    ratio[1] = counts[1] / (SKLEARN_SVI_TOTAL_##T(s1) + eps);                  \
    ratio[2] = counts[2] / (SKLEARN_SVI_TOTAL_##T(s2) + eps);                  \
    ratio[3] = counts[3] / (SKLEARN_SVI_TOTAL_##T(s3) + eps);                  \
    ratio[4] = counts[4] / (SKLEARN_SVI_TOTAL_##T(s4) + eps);                  \
    ratio[5] = counts[5] / (SKLEARN_SVI_TOTAL_##T(s5) + eps);                  \
    ratio[6] = counts[6] / (SKLEARN_SVI_TOTAL_##T(s6) + eps);                  \
    ratio[7] = counts[7] / (SKLEARN_SVI_TOTAL_##T(s7) + eps);                  \
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
