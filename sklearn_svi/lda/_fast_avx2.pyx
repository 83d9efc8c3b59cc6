# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled LDA local step built with AVX2 and FMA instructions.

The same code as _fast; import it only where cpu_has_avx2_fma() is true.
"""

include "_kernel.pxi"
