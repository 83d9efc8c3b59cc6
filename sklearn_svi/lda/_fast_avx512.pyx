# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled LDA local step built with AVX-512 instructions.

The same code as _fast, with vectors of eight doubles (floats keep
vectors of eight); import it only where cpu_has_avx512() is true.
"""

include "_kernel.pxi"
