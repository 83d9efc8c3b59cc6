"""Intersphinx inventories of scikit-learn, NumPy and SciPy, written offline.

The documentation links the names of these libraries to their online
documentation without downloading their ``objects.inv`` at build time: the
inventories are written from the installed libraries' public names, with the
address each library's documentation gives a name's page.
"""

import importlib
import inspect
import zlib
from pathlib import Path

# Each library: its address, the modules whose public names are listed, and
# the page of a name relative to the address.
LIBRARIES = {
    "sklearn": (
        "https://scikit-learn.org/stable/",
        [
            "sklearn.base",
            "sklearn.cluster",
            "sklearn.decomposition",
            "sklearn.exceptions",
            "sklearn.feature_extraction.text",
            "sklearn.linear_model",
            "sklearn.metrics",
            "sklearn.mixture",
            "sklearn.model_selection",
            "sklearn.pipeline",
            "sklearn.preprocessing",
        ],
        "modules/generated/{name}.html",
    ),
    "numpy": (
        "https://numpy.org/doc/stable/",
        ["numpy", "numpy.random"],
        "reference/generated/{name}.html",
    ),
    "scipy": (
        "https://docs.scipy.org/doc/scipy/",
        ["scipy.sparse", "scipy.special", "scipy.optimize"],
        "reference/generated/{name}.html",
    ),
}


def _public_names(module_name):
    """(full name, role, object) of the public classes and functions of a module."""
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None) or [
        name for name in dir(module) if not name.startswith("_")
    ]
    for name in sorted(names):
        try:
            value = getattr(module, name)
        except (AttributeError, ImportError):
            # Listed but not importable as such (scikit-learn's experimental
            # estimators).
            continue
        if inspect.isclass(value):
            yield f"{module_name}.{name}", "class", value
        elif callable(value):
            yield f"{module_name}.{name}", "function", value


def _entries(page):
    """The inventory's lines: each class and function, and each class's
    public methods, on the page of the class or function."""
    for module_name in LIBRARIES[page][1]:
        for name, role, value in _public_names(module_name):
            location = LIBRARIES[page][2].format(name=name)
            yield f"{name} py:{role} 1 {location}#$ -"
            if role == "class":
                for method in sorted(vars(value)):
                    if not method.startswith("_") and callable(vars(value)[method]):
                        yield (
                            f"{name}.{method} py:method 1 {location}#{name}.{method} -"
                        )


def write_inventories(directory):
    """Write ``<library>.inv`` for each library into ``directory``.

    Returns
    -------
    mapping : dict
        The ``intersphinx_mapping`` of the documentation.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    mapping = {}
    for library, (address, _, _) in LIBRARIES.items():
        version = importlib.import_module(library).__version__
        header = (
            "# Sphinx inventory version 2\n"
            f"# Project: {library}\n# Version: {version}\n"
            "# The remainder of this file is compressed using zlib.\n"
        )
        body = "\n".join(sorted(set(_entries(library)))) + "\n"
        path = directory / f"{library}.inv"
        path.write_bytes(header.encode() + zlib.compress(body.encode()))
        mapping[library] = (address, str(path))
    return mapping
