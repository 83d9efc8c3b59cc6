"""The parameters of the mechanisms as every estimator's docstring describes
them (``MECHANISM_PARAMETERS``), with that estimator's defaults."""

from ._settings import MECHANISM_PARAMETERS


def _shown(value):
    return f'"{value}"' if isinstance(value, str) else str(value)


def mechanism_parameters(notes=None, **defaults):
    """The numpydoc entries of the mechanisms' parameters.

    Parameters
    ----------
    notes : dict of str, default=None
        Paragraphs that an estimator adds to the entry of a parameter,
        indented as the entries' text, by the parameter's name.
    **defaults : object
        The estimator's defaults, where they differ from the registry's.

    Returns
    -------
    entries : str
        The entries, each line indented by four spaces, without a final
        newline.
    """
    notes = notes or {}
    entries = []
    for name, parameter in MECHANISM_PARAMETERS.items():
        default = _shown(defaults.get(name, parameter.default))
        entry = f"    {name} : {parameter.kind}, default={default}\n"
        entry += parameter.description
        if name in notes:
            entry += "\n" + notes[name]
        entries.append(entry)
    return "\n".join(entries)
