"""The parameters of the mechanisms as every estimator's docstring describes
them, with that estimator's defaults."""

from ._settings import FILTERS, SCHEDULES


def _default(value):
    return f'"{value}"' if isinstance(value, str) else str(value)


def _with_note(text, note):
    return text if not note else f"{text}\n{note}"


def mechanism_parameters(
    *,
    L=1,
    M=None,
    M_growth=0.0,
    learning_rate="robbins-monro",
    learning_decay=0.7,
    min_step_size=None,
    notes=None,
):
    """The numpydoc entries of the mechanisms' parameters.

    Parameters
    ----------
    L, M, M_growth, learning_rate, learning_decay, min_step_size : object
        The estimator's defaults.
    notes : dict of str, default=None
        Paragraphs that an estimator adds to the entry of a parameter,
        indented as the entries' text, by the parameter's name.

    Returns
    -------
    entries : str
        The entries, each line indented by four spaces, without a final
        newline.
    """
    notes = notes or {}
    names = ", ".join(f'"{name}"' for name in [*SCHEDULES, *FILTERS])
    entries = {
        "L": f"""\
    L : int, default={L}
        Length of the smoothing window (Mandt & Blei 2014): each update
        uses the mean of the last ``L`` minibatch statistics; 1 is no
        smoothing.""",
        "M": f"""\
    M : int, "auto" or None, default={_default(M)}
        The effective minibatch size of the first update (SVI+, Paisley,
        Fazelnia & Barr), at most ``batch_size``: each sample's statistic is
        weighted by 1 + eps - mean(eps) with eps ~ N(0, batch_size / M - 1),
        which keeps the statistic unbiased with about the noise of M
        samples. ``"auto"`` is ``batch_size // 4``; None is no annealing.""",
        "M_growth": f"""\
    M_growth : float or "auto", default={_default(M_growth)}
        Increase of the effective minibatch size per update: update t uses
        ``M + M_growth * (t - 1)``, and plain SVI once that reaches
        ``batch_size``. ``"auto"`` is ``M``, so that M_t = M t, the form of
        the paper's schedule.""",
        "learning_rate": f"""\
    learning_rate : {{{names}}} or float, default={_default(learning_rate)}
        The step size. ``"robbins-monro"`` is ``(learning_offset + t) **
        -learning_decay`` for the t-th update; ``"gaussian"`` and
        ``"student-t"`` are the gains of a Gaussian and a Student's t
        variational filter (Houlsby & Blei 2014), and ``"adaptive"``
        Ranganath et al.'s adaptive rate Q / (Q + R); a float in (0, 1] is a
        constant step size.""",
        "learning_offset": """\
    learning_offset : float, default=10.0
        tau_0 of the Robbins-Monro schedule.""",
        "learning_decay": f"""\
    learning_decay : float, default={learning_decay}
        kappa of the Robbins-Monro schedule.""",
        "prior_variance": """\
    prior_variance : float, default=0.0
        Sigma_0 of the filters: the prior variance (the scale for the
        Student's t filter) of each coordinate of the optimum, beyond the
        drift that the minibatches of the filter's start measure. Unused by
        ``"adaptive"``.""",
        "prior_dof": """\
    prior_dof : float, default=3
        Degrees of freedom, above 2, of the Student's t filter's prior of
        the optimum and of its drift and noise; the filter tends to the
        Gaussian one as they grow.""",
        "bias_correction": """\
    bias_correction : bool, default=True
        Correct the filters' moving-average estimates of the drift Q and the
        noise R for the noise of the averages themselves, which uncorrected
        is taken for drift (the package's variant). False gives Ranganath et
        al.'s estimates, as the papers use them.""",
        "min_step_size": f"""\
    min_step_size : "robbins-monro", float or None, \
default={_default(min_step_size)}
        A lower bound of a filter's step size (the package's variant): the
        filter may raise the step above it, when the minibatches disagree
        with the model more than their noise explains, but not lower it.
        ``"robbins-monro"`` is the schedule ``(learning_offset + t) **
        -learning_decay``, a float in (0, 1] a constant bound, None no bound
        (the published filters).""",
    }
    return "\n".join(
        _with_note(text, notes.get(name)) for name, text in entries.items()
    )
