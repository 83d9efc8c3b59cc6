/* The C helpers of the compiled LDA local step (_kernel.pxi): a vectorisable
   exp, an atomic counter, the processor's subnormal mode, and the counter-based
   random numbers of the documents' starts. */

#ifndef SKLEARN_SVI_KERNEL_H
#define SKLEARN_SVI_KERNEL_H

#include <stdint.h>
#include <string.h>

/* exp(a) for a in [-708, 709] (clamped outside), relative error below
   4e-16, written so that compilers vectorise loops calling it: a = n ln2
   + r by rounding with the 1.5 * 2^52 shift (no rounding call), e^r by
   its Taylor polynomial to degree 13 (|r| <= ln2 / 2), 2^n by building
   the exponent bits. */
static inline double sklearn_svi_exp(double a)
{
    const double shift = 6755399441055744.0;  /* 1.5 * 2^52 */
    double shifted, n, r, p, scale;
    int64_t bits;
    a = a < -708.0 ? -708.0 : (a > 709.0 ? 709.0 : a);
    shifted = a * 1.4426950408889634 + shift;
    n = shifted - shift;
    r = (a - n * 6.93147180369123816490e-01) - n * 1.90821492927058770002e-10;
    p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    memcpy(&bits, &shifted, sizeof bits);
    bits = (bits - INT64_C(0x4338000000000000) + 1023) << 52;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

#if defined(_MSC_VER)
#include <intrin.h>
#endif

/* Atomically add one to *counter and return its previous value. */
static inline Py_ssize_t sklearn_svi_claim(Py_ssize_t* counter)
{
#if defined(_MSC_VER) && defined(_WIN64)
    return (Py_ssize_t) _InterlockedExchangeAdd64((volatile __int64*) counter, 1);
#elif defined(_MSC_VER)
    return (Py_ssize_t) _InterlockedExchangeAdd((volatile long*) counter, 1);
#else
    return __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
#endif
}

#if defined(__SSE2__) || defined(_M_X64) || defined(_M_AMD64)
#include <xmmintrin.h>
/* Set the SSE control register to flush subnormal results to zero and
   read subnormal inputs as zero; return its previous value. */
static inline unsigned int sklearn_svi_flush_subnormals(void)
{
    unsigned int previous = _mm_getcsr();
    _mm_setcsr(previous | 0x8040);
    return previous;
}
static inline void sklearn_svi_restore_float_mode(unsigned int previous)
{
    _mm_setcsr(previous);
}
#else
static inline unsigned int sklearn_svi_flush_subnormals(void) { return 0; }
static inline void sklearn_svi_restore_float_mode(unsigned int previous) {}
#endif

#define SKLEARN_SVI_GOLDEN UINT64_C(0x9E3779B97F4A7C15)

/* The SplitMix64 output function: a bijection of 64-bit integers whose
   outputs for consecutive inputs pass as independent uniform bits. */
static inline uint64_t sklearn_svi_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Fold one (word, count) pair of a document into its running hash: a
   multiply and an add per word; sklearn_svi_mix of the final hash is
   the document's stream number. */
static inline uint64_t sklearn_svi_fold(uint64_t hash, int64_t word, double count)
{
    uint64_t bits;
    memcpy(&bits, &count, sizeof bits);
    return (hash ^ ((uint64_t) word + 1)) * SKLEARN_SVI_GOLDEN + bits;
}

/* Value ``counter`` of a stream, as a uniform double in (0, 1]. */
static inline double sklearn_svi_uniform(uint64_t stream, uint64_t counter)
{
    uint64_t bits = sklearn_svi_mix(stream + SKLEARN_SVI_GOLDEN * (counter + 1));
    return ((double) (bits >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

#endif
