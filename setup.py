"""Build the compiled LDA kernel; all other metadata lives in pyproject.toml.

The kernel is built twice from the same source: ``_lda_fast`` for any
processor, and on x86-64 with GCC or Clang also ``_lda_fast_avx2`` with AVX2
and FMA instructions, which the package uses where the processor has them.
"""

import platform
import sys

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

UNIX_LIKE = sys.platform != "win32"
X86_64 = platform.machine().lower() in {"x86_64", "amd64"}


def kernel_extension(name, extra_flags=()):
    # -O3 lets GCC and Clang vectorise the kernel's loops over topics.
    return Extension(
        f"sklearn_svi.{name}",
        [f"sklearn_svi/{name}.pyx"],
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_9_API_VERSION")],
        extra_compile_args=["-O3", *extra_flags] if UNIX_LIKE else [],
        depends=["sklearn_svi/_lda_kernel.pxi"],
    )


extensions = [kernel_extension("_lda_fast")]
if UNIX_LIKE and X86_64:
    extensions.append(kernel_extension("_lda_fast_avx2", ["-mavx2", "-mfma"]))

setup(ext_modules=cythonize(extensions, compiler_directives={"language_level": "3"}))
