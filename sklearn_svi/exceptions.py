"""Warnings of the package."""


class InconsistentVersionWarning(UserWarning):
    """A model saved by another version of sklearn-svi was loaded.

    Its attributes may not mean what they mean in this version, so its
    predictions and a resumed ``partial_fit`` may be wrong. Save models with
    the version that loads them, or fit them again.

    Parameters
    ----------
    estimator_name : str
        The class of the model.
    current_version : str
        The version that loads it.
    original_version : str
        The version that saved it ("unknown" for one that did not record
        it).
    """

    def __init__(self, *, estimator_name, current_version, original_version):
        self.estimator_name = estimator_name
        self.current_version = current_version
        self.original_version = original_version

    def __str__(self):
        return (
            f"A {self.estimator_name} saved by sklearn-svi "
            f"{self.original_version} was loaded by version "
            f"{self.current_version}. Its state may not mean the same in this "
            "version: fit it again, or load it with the version that saved it."
        )
