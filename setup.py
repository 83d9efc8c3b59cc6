"""Build the compiled modules; all other metadata lives in pyproject.toml.

The LDA kernel is built from the same source for any processor
(``lda._fast``) and, on x86-64 with GCC or Clang, also with AVX2 and FMA
instructions (``lda._fast_avx2``) and with AVX-512 (``lda._fast_avx512``);
the package uses the most capable one the processor runs.
``_update_fast`` holds the row operations of the shared online update.
The compiled passes are shared by the threads of an OpenMP team when the
compiler supports OpenMP, and run on the calling thread otherwise.
"""

import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError, LinkError

UNIX_LIKE = sys.platform != "win32"
X86_64 = platform.machine().lower() in {"x86_64", "amd64"}


def compiled_extension(name, extra_flags=(), depends=()):
    """The extension ``sklearn_svi.<name>``, where ``name`` may hold dots."""
    # -O3 lets GCC and Clang vectorise the loops over topics, and
    # -fno-trapping-math the loops with comparisons (the clamp of the
    # kernel's exponential); neither changes a computed value. -g0 drops the
    # debug information Python's flags ask for: the machine code is the same,
    # and the compilation a quarter shorter.
    return Extension(
        f"sklearn_svi.{name}",
        [f"sklearn_svi/{name.replace('.', '/')}.pyx"],
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_9_API_VERSION")],
        extra_compile_args=["-O3", "-fno-trapping-math", "-g0", *extra_flags]
        if UNIX_LIKE
        else [],
        depends=list(depends),
    )


def openmp_flags(compiler):
    """The flags with which ``compiler`` compiles and links OpenMP code, or
    two empty lists when it does not (Apple's Clang without libomp, for
    one): Cython's parallel loops then run on the calling thread."""
    if compiler.compiler_type == "msvc":
        compile_flags, link_flags = ["/openmp"], []
    else:
        compile_flags = link_flags = ["-fopenmp"]
    program = "#include <omp.h>\nint main(void) { return omp_get_max_threads() < 1; }\n"
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "openmp_check.c"
        source.write_text(program)
        try:
            objects = compiler.compile(
                [str(source)], output_dir=folder, extra_postargs=compile_flags
            )
            compiler.link_executable(
                objects, "openmp_check", output_dir=folder, extra_postargs=link_flags
            )
        except (CompileError, LinkError):
            return [], []
    return compile_flags, link_flags


LDA_KERNEL = sorted(
    str(path)
    for pattern in ("_kernel*.pxi", "*.h")
    for path in Path("sklearn_svi/lda").glob(pattern)
)
extensions = [
    compiled_extension("lda._fast", depends=LDA_KERNEL),
    compiled_extension("_update_fast"),
]
if UNIX_LIKE and X86_64:
    extensions += [
        compiled_extension("lda._fast_avx2", ["-mavx2", "-mfma"], depends=LDA_KERNEL),
        # Vectors of eight doubles; floats keep vectors of eight.
        compiled_extension(
            "lda._fast_avx512",
            ["-mavx512f", "-mavx2", "-mfma", "-DSKLEARN_SVI_DOUBLE_LANES=8"],
            depends=LDA_KERNEL,
        ),
    ]


class ParallelBuildExt(build_ext):
    """build_ext that compiles the extensions on every core unless told
    otherwise (``-j``), so that the kernel's variants build side by side,
    and only those whose sources changed since the last build of this
    checkout."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1

    def build_extensions(self):
        compile_flags, link_flags = openmp_flags(self.compiler)
        for ext in self.extensions:
            ext.extra_compile_args += compile_flags
            ext.extra_link_args += link_flags
        super().build_extensions()

    def build_extension(self, ext):
        # An editable install leaves each module in the source tree. When
        # that copy is newer than the extension's sources, its includes and
        # this file, it is what compiling would give again: it is used as it
        # is, so that a second install of the checkout compiles nothing.
        in_tree = Path(self.get_ext_filename(ext.name))
        target = Path(self.get_ext_fullpath(ext.name))
        inputs = [*ext.sources, *ext.depends, __file__]
        if in_tree.exists() and in_tree.stat().st_mtime >= max(
            Path(path).stat().st_mtime for path in inputs
        ):
            if in_tree.resolve() != target.resolve():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(in_tree, target)
            print(f"{ext.name}: up to date in the source tree, not compiled")
            return
        super().build_extension(ext)


def cythonized(extensions):
    """The extensions with their C sources, Cython run on those whose C file
    is older than the package's own sources (the .pyx and its includes).

    Cython's own dependency check would also compare with the declaration
    files of the fresh build environment that every install makes, and so
    translate every module again each time.
    """
    stale = []
    for ext in extensions:
        own = [Path(path) for path in [*ext.sources, *ext.depends]]
        translated = Path(ext.sources[0]).with_suffix(".c")
        if not translated.exists() or translated.stat().st_mtime < max(
            path.stat().st_mtime for path in own
        ):
            stale.append(ext)
    if stale:
        cythonize(
            stale,
            compiler_directives={"language_level": "3"},
            nthreads=os.cpu_count() or 1,
            force=True,
        )
    for ext in extensions:
        ext.sources = [str(Path(path).with_suffix(".c")) for path in ext.sources]
    return extensions


setup(
    ext_modules=cythonized(extensions),
    cmdclass={"build_ext": ParallelBuildExt},
)
