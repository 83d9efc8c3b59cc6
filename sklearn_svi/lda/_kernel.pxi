# The compiled LDA local step, included by _fast.pyx (built for any
# processor), _fast_avx2.pyx (built with AVX2 and FMA instructions) and
# _fast_avx512.pyx (AVX-512). Its C helpers are in _kernel.h, its parts by
# concern in the files included below: the documents' starts and claiming
# (shared), the minibatch's word index, the update's statistics, the
# collapsed and mean-field fixed points, the sampled step, and the one
# driver that runs any of them on the documents a thread claims.

from cython cimport floating
from cython.parallel cimport parallel, prange
from libc.float cimport DBL_EPSILON, FLT_EPSILON
from libc.stdint cimport int32_t, int64_t
from libc.math cimport cos, fabs, log, sin, sqrt
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy, memset

import numpy as np


cdef extern from "_kernel.h":
    double _exp "sklearn_svi_exp"(double a) noexcept nogil
    Py_ssize_t _claim "sklearn_svi_claim"(Py_ssize_t* counter) noexcept nogil
    unsigned int _flush_subnormals "sklearn_svi_flush_subnormals"() noexcept nogil
    void _restore_float_mode "sklearn_svi_restore_float_mode"(unsigned int) noexcept nogil
    unsigned long long _mix "sklearn_svi_mix"(unsigned long long z) noexcept nogil
    unsigned long long _fold "sklearn_svi_fold"(
        unsigned long long stream, long long word, double count
    ) noexcept nogil
    double _uniform "sklearn_svi_uniform"(
        unsigned long long stream, unsigned long long counter
    ) noexcept nogil


include "_kernel_shared.pxi"
include "_kernel_words.pxi"
include "_kernel_statistics.pxi"
include "_kernel_collapsed.pxi"
include "_kernel_sampled.pxi"
include "_kernel_mean_field.pxi"
include "_kernel_driver.pxi"
