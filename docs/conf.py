"""Sphinx configuration of the sklearn-svi documentation.

Build with ``python -m sphinx -W --keep-going -b html docs docs/_build/html``
from the repository root. The package must be importable (installed, e.g.
``pip install -e .``), since autodoc reads the docstrings of the compiled
package. The build needs no network access: the inventories of the libraries
it links to are written from the installed libraries (_inventory.py).
"""

import sys
from pathlib import Path

import sklearn_svi

sys.path.insert(0, str(Path(__file__).parent))
from _inventory import write_inventories  # noqa: E402

# -- Project -------------------------------------------------------------------

project = "sklearn-svi"
author = "The sklearn-svi developers"
copyright = "The sklearn-svi developers"
version = sklearn_svi.__version__
release = sklearn_svi.__version__

# -- General -------------------------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

# Names from scikit-learn, NumPy and SciPy link to their documentation. The
# inventories are written from the installed libraries (docs/_inventory.py),
# so the build downloads nothing; they go to docs/_inventories/ (git-ignored).
intersphinx_mapping = write_inventories(Path(__file__).parent / "_inventories")

exclude_patterns = ["_build"]

# sphinx-gallery runs every docs/examples/plot_*.py when the docs are built
# and writes the pages, with their figures, into docs/auto_examples/
# (git-ignored). Each example runs in well under a minute.
sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": "/plot_",
    "download_all_examples": False,
    "write_computation_times": False,
    "matplotlib_animations": False,
    # The examples' code links to the pages of the names it uses.
    "reference_url": {"sklearn_svi": None},
}
root_doc = "index"

# The API pages are written by autosummary into docs/generated/ (git-ignored),
# a page for every class and one for each of its public methods, inherited
# ones included (docs/_templates/autosummary/class.rst).
autosummary_generate = True
templates_path = ["_templates"]

# numpydoc: autosummary's class template already lists the members, so numpydoc
# does not add its own member tables (which would describe them twice).
numpydoc_show_class_members = False

# -- HTML ----------------------------------------------------------------------

# Pages that the examples write (pyLDAvis' view of the topics) are copied to
# the root of the site. The examples run with their own folder as the
# working directory.
_EXAMPLE_PAGES = Path(__file__).parent / "examples" / "_pages"
_EXAMPLE_PAGES.mkdir(exist_ok=True)
html_extra_path = [str(_EXAMPLE_PAGES)]

html_theme = "alabaster"
html_title = f"sklearn-svi {release}"
