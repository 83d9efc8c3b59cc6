"""Build the compiled LDA kernel; all other metadata lives in pyproject.toml."""

import sys

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

# -O3 lets gcc and clang vectorise the kernel's inner loops over topics.
compile_args = [] if sys.platform == "win32" else ["-O3"]

extensions = [
    Extension(
        "sklearn_svi._lda_fast",
        ["sklearn_svi/_lda_fast.pyx"],
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_9_API_VERSION")],
        extra_compile_args=compile_args,
    )
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives={"language_level": "3"},
    )
)
