"""LDA's priors: alpha and eta, their starting values, the seeds'
pseudo-counts, and their learning (Hoffman, Blei & Bach 2010; Minka's fixed
point for a symmetric Dirichlet)."""

import warnings
from numbers import Integral, Real

import numpy as np
from scipy.special import psi

from ._dirichlet import (
    _dirichlet_newton_direction,
    _positive_step,
    _symmetric_dirichlet_maximum,
)


class LDAPriors:
    """The priors of the LDA model, read from its parameters
    ``doc_topic_prior``, ``topic_word_prior``, ``seed_topics`` and
    ``seed_strength``, kept in ``doc_topic_prior_`` and
    ``topic_word_prior_``."""

    def _initial_prior(self, prior):
        """The starting value of a prior parameter: 1 / K for None or "auto"."""
        return 1.0 / self.n_components if prior in (None, "auto") else float(prior)

    def _learns_priors(self):
        return self.doc_topic_prior == "auto" or self._learns_topic_word_prior()

    def _learns_topic_word_prior(self):
        """Whether eta (its symmetric part, with seeds) is learned."""
        return isinstance(self.topic_word_prior, str)

    def _initial_topic_word_prior(self, n_features, dtype):
        """eta: a float, or with ``seed_topics`` or an array
        ``topic_word_prior`` an array of shape (n_components, n_features)
        of type ``dtype``.

        The array is the transpose of a C-contiguous array of lambda's
        layout, word by word, which the update reads without a copy.
        """
        seeds = self._seed_pseudo_counts(n_features)
        if self.topic_word_prior is None or isinstance(
            self.topic_word_prior, (str, Real)
        ):
            base = self._initial_prior(self.topic_word_prior)
            if seeds is None:
                return base
            prior = seeds.T + base
        else:
            prior = self._checked_topic_word_prior(n_features).T
            if seeds is not None:
                prior = prior + seeds.T
        return np.ascontiguousarray(prior, dtype=dtype).T

    def _checked_topic_word_prior(self, n_features):
        """``topic_word_prior`` given as an array, checked against the data."""
        prior = np.asarray(self.topic_word_prior, dtype=np.float64)
        expected = (self.n_components, n_features)
        if prior.shape != expected:
            raise ValueError(
                f"topic_word_prior has shape {prior.shape}, expected {expected} "
                "(n_components, n_features) to give every topic and word a "
                "value."
            )
        if not np.all(np.isfinite(prior) & (prior > 0)):
            raise ValueError(
                "topic_word_prior must hold positive, finite values: the "
                "Dirichlet prior of a topic is defined only for them."
            )
        return prior

    def _seed_pseudo_counts(self, n_features):
        """The seeds' part of eta, an array of shape (n_components,
        n_features), or None without ``seed_topics``.

        The seed words of a topic share ``seed_strength`` times the number
        of tokens of a topic of the corpus, N_tokens / K, equally.
        """
        if not self.seed_topics:
            return None
        seeds = np.zeros((self.n_components, n_features))
        for topic, words in self.seed_topics.items():
            if not isinstance(topic, Integral) or not 0 <= topic < self.n_components:
                raise ValueError(
                    f"seed_topics has the key {topic!r}; its keys must be "
                    f"topics, integers from 0 to {self.n_components - 1}."
                )
            indices = np.asarray(list(words))
            if indices.size == 0 or not np.issubdtype(indices.dtype, np.integer):
                raise ValueError(
                    f"seed_topics[{topic}] must list feature indices, integers "
                    f"from 0 to {n_features - 1}, and got {words!r}; "
                    "sklearn_svi.seed_word_indices finds the indices of "
                    "words."
                )
            outside = indices[(indices < 0) | (indices >= n_features)]
            if len(outside):
                raise ValueError(
                    f"seed_topics[{topic}] lists the feature indices "
                    f"{outside.tolist()}, outside 0 to {n_features - 1}."
                )
            seeds[topic, indices] = (
                self.seed_strength * self._tokens_per_topic / len(set(indices.tolist()))
            )
        return seeds

    def _learn_doc_topic_prior(self, rho, mean_log_theta):
        """Move alpha by a step ``rho`` of Newton's direction for the
        minibatch's mean E[log theta] (Hoffman, Blei & Bach 2010)."""
        direction = _dirichlet_newton_direction(self.doc_topic_prior_, mean_log_theta)
        self.doc_topic_prior_ = _positive_step(self.doc_topic_prior_, direction, rho)

    def _learn_topic_word_prior(self):
        """Set eta's symmetric part to the value that maximises the topics'
        term of the ELBO at the current lambda, the seeds' pseudo-counts
        held."""
        # eta changes: lambda is written out at the eta it was scaled with.
        self._natural_store.settle()
        # sum_kw E[log beta_kw] = sum_kw psi(lambda_kw) - V sum_k psi(sum_w lambda_kw)
        log_sum = float(np.sum(psi(self._natural), dtype=np.float64))
        log_sum -= len(self._natural) * float(np.sum(psi(self._topic_totals)))
        seeds = self._seed_pseudo_counts(len(self._natural))
        if seeds is None:
            self.topic_word_prior_ = _symmetric_dirichlet_maximum(
                self.topic_word_prior_, self.n_components, len(self._natural), log_sum
            )
            return
        # Newton's method starts from the current symmetric part.
        symmetric = float(self.topic_word_prior_[0, 0]) - seeds[0, 0]
        symmetric = _symmetric_dirichlet_maximum(
            symmetric, self.n_components, len(self._natural), log_sum, seeds
        )
        # A new array in the layout of the old one: the model's attributes
        # are rebound, never written in place (see ``_transaction``).
        self.topic_word_prior_ = np.ascontiguousarray(
            (seeds + symmetric).T, dtype=self.topic_word_prior_.dtype
        ).T

    def _warn_learned_priors_of_collapsed_step(self):
        """Warn about the learned priors that cost the collapsed steps."""
        if self.doc_topic_prior == "auto" and self.local_step == "cvb0":
            warnings.warn(
                'doc_topic_prior="auto" with local_step="cvb0" lowers the '
                "held-out fit: on two corpora of short texts it was 0.15 to "
                "0.18 nats per word below a fixed alpha = 1/K, and it was "
                "never above it. alpha itself is learned without bias; pass a "
                'fixed doc_topic_prior, or keep the default local_step="auto", '
                "with which the learned alpha was level with the fixed one.",
                UserWarning,
                stacklevel=2,
            )
        if self._learns_topic_word_prior():
            warnings.warn(
                f'topic_word_prior="auto" with local_step="{self.local_step}" '
                "overestimates eta: on documents drawn with eta=0.05 it learned "
                "0.13 to 0.17 (0.08 with the mean-field step). Pass a fixed "
                'topic_word_prior, or use local_step="vb" to learn it.',
                UserWarning,
                stacklevel=2,
            )

    def _prior_natural(self):
        # An array of eta is stored word by word, as lambda is.
        prior = self.topic_word_prior_
        return prior.T if isinstance(prior, np.ndarray) else prior
