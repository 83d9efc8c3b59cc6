"""The package's version, read by the build and by the pickles' check."""

__version__ = "0.1.0.dev0"
