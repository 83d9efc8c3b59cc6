"""The step-size parameters of the estimators that take every step size, as
their docstrings describe them."""

STEP_SIZE_PARAMETERS = """\
    learning_rate : {"robbins-monro", "student-t", "gaussian", "adaptive"} or \
            float, default="robbins-monro"
        ``"robbins-monro"`` is ``(learning_offset + t) ** -learning_decay``;
        ``"student-t"`` and ``"gaussian"`` take the gain of a variational
        filter and ``"adaptive"`` Ranganath et al.'s adaptive rate, as
        :class:`FilteredLDA` does; a float in (0, 1] is a constant step size.
    learning_offset : float, default=10.0
        tau_0 of the Robbins-Monro schedule.
    learning_decay : float, default=0.7
        kappa of the Robbins-Monro schedule.
    prior_variance : float, default=0.0
        Sigma_0 of the filters, as in :class:`FilteredLDA`.
    prior_dof : float, default=3
        Degrees of freedom, above 2, of the Student's t filter.
    bias_correction : bool, default=True
        Correct the filters' estimates of the drift and the noise for the
        noise of their moving averages, as in :class:`FilteredLDA`."""
