# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled per-document fixed point of the LDA local step.

For one document d with word counts n_dw the local step of Hoffman et al.
(2013, Fig. 6) iterates

    phi_dwk  ∝ exp(E[log theta_dk] + E[log beta_kw])
    gamma_dk = alpha + sum_w n_dw phi_dwk

until the mean absolute change of gamma_d falls below a tolerance. Written
with exp E[log theta] and exp E[log beta], one iteration is two matrix-vector
products with the document's K x n_words block of exp E[log beta]:

    norm_w   = sum_k exp E[log theta_dk] exp E[log beta_kw]
    gamma_dk = alpha + exp E[log theta_dk] sum_w (n_dw / norm_w) exp E[log beta_kw]

The block is gathered once per document into a contiguous buffer, word by
word, its rows padded to whole vectors (_sweep.h). Each iteration reads
the block once, eight words at a time: their eight normalisers are
independent sums the processor overlaps, and their rows, still in the
first-level cache, are then added to the topic sums. The loops release the
GIL: the threads of a minibatch claim its documents from a shared
counter, long ones one at a time and short ones in runs.

This module is built for any processor of its architecture; _fast_avx2
and _fast_avx512 are the same code built with AVX2 and FMA, and with
AVX-512 instructions.
"""

include "_kernel.pxi"


cdef extern from *:
    """
    #if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    static int sklearn_svi_cpu_has_avx2_fma(void)
    {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    static int sklearn_svi_cpu_has_avx512(void)
    {
        return sklearn_svi_cpu_has_avx2_fma() && __builtin_cpu_supports("avx512f");
    }
    #else
    static int sklearn_svi_cpu_has_avx2_fma(void) { return 0; }
    static int sklearn_svi_cpu_has_avx512(void) { return 0; }
    #endif
    """
    int sklearn_svi_cpu_has_avx2_fma()
    int sklearn_svi_cpu_has_avx512()


def cpu_has_avx2_fma():
    """Whether this processor runs AVX2 and FMA instructions."""
    return bool(sklearn_svi_cpu_has_avx2_fma())


def cpu_has_avx512():
    """Whether this processor runs AVX-512 (foundation), AVX2 and FMA instructions."""
    return bool(sklearn_svi_cpu_has_avx512())
