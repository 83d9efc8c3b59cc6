"""All-or-nothing changes of a model.

An update either completes or leaves no trace: :func:`transaction` records
the model's attributes and the state of its parts before the update, and
puts them back when anything is raised, ``KeyboardInterrupt`` included. It
relies on two rules that the update keeps:

- attributes change by assignment (a new object bound to the name), never
  in place, so that the recorded bindings are the old values; the large
  arrays that are rewritten every update, such as lambda, are written to a
  spare array of their own (:func:`spare_like`) and then swapped in;
- a part that does change in place (the update's state: the smoothing
  window's running sum, a filter's averages, lambda's rows kept scaled, the
  random state, the records) has ``begin`` and ``rollback`` methods and
  undoes itself. Its writes to arrays are recorded in an :class:`UndoLog`
  *before* they happen: a Ctrl-C can arrive between any two bytecodes, and
  a write recorded only afterwards would leave a moment in which the part
  is changed and its rollback does not know it.
"""

import _signal
import signal
import threading
from contextlib import contextmanager

import numpy as np


def interrupts_deferred():
    """Hold back Ctrl-C while the body runs and deliver it afterwards.

    Only the main thread receives SIGINT; elsewhere, or when the handler is
    not Python's own, the body runs as it is.

    Returns
    -------
    context : context manager
    """
    return _DeferredInterrupts()


class _DeferredInterrupts:
    """The context of :func:`interrupts_deferred`.

    Every update enters it twice (its transaction's begin and commit), so
    it calls the C functions behind :mod:`signal` directly: the module's own
    wrappers convert each handler to an enumeration member, which cost more
    than the rest of the context.
    """

    def __enter__(self):
        self._received = False
        self._holding = (
            threading.get_ident() == threading.main_thread().ident
            and _signal.getsignal(signal.SIGINT) is signal.default_int_handler
        )
        if self._holding:
            _signal.signal(signal.SIGINT, self._hold)
        return self

    def _hold(self, signum, frame):
        self._received = True

    def __exit__(self, exc_type, exc_value, traceback):
        if self._holding:
            _signal.signal(signal.SIGINT, signal.default_int_handler)
            if self._received:
                raise KeyboardInterrupt
        return False


@contextmanager
def transaction(model, parts=()):
    """Run the body as one change of ``model`` that completes or is undone.

    Parameters
    ----------
    model : object
        Whose attributes are put back as they were when the body raises.
    parts : sequence of object
        Parts of the model that change in place; each has ``begin()``,
        called now, ``commit()``, called when the body completes, and
        ``rollback()``, which undoes what the part did since ``begin()``.

    The parts begin, and commit, with Ctrl-C held back, so that each does so
    wholly: an interrupt that arrives while they begin undoes the change, one
    that arrives while they commit is raised after the change is kept.
    """
    saved_attributes = model.__dict__.copy()
    begun = committed = False
    try:
        with interrupts_deferred():
            for part in parts:
                part.begin()
            begun = True
        yield
        with interrupts_deferred():
            for part in parts:
                part.commit()
            committed = True
    except BaseException:
        if not committed:
            with interrupts_deferred():
                if begun:
                    for part in parts:
                        part.rollback()
                model.__dict__.clear()
                model.__dict__.update(saved_attributes)
        raise


class RebindingPart:
    """A part of a transaction whose attributes change by assignment.

    :meth:`begin` keeps the attributes' values and :meth:`rollback` binds
    them again; the parts it holds (:meth:`_held_parts`, such as its
    :class:`UndoLog` of the arrays it writes in place) begin, commit and
    roll back with it, first.
    """

    _saved = None

    def _held_parts(self):
        """The parts that take part in its transactions."""
        return ()

    def begin(self):
        """Keep the attributes, for :meth:`rollback`."""
        for part in self._held_parts():
            part.begin()
        self._saved = {
            name: value for name, value in vars(self).items() if name != "_saved"
        }

    def commit(self):
        """Keep the changes since :meth:`begin`."""
        for part in self._held_parts():
            part.commit()
        self._saved = None
        self._kept()

    def _kept(self):
        """What follows a commit: let go of what no later change reads."""

    def rollback(self):
        """Return to the state kept by :meth:`begin`."""
        for part in self._held_parts():
            part.rollback()
        if self._saved is not None:
            vars(self).update(self._saved)
        self._saved = None

    def __getstate__(self):
        # A saved part is between transactions.
        return {**vars(self), "_saved": None}


class LoggedPart(RebindingPart):
    """A :class:`RebindingPart` that also writes arrays in place, each write
    recorded before it happens in its :class:`UndoLog`, ``_undo``."""

    def __init__(self):
        self._undo = UndoLog()

    def _held_parts(self):
        return (self._undo,)

    def __getstate__(self):
        # The records of a transaction hold no information.
        state = super().__getstate__()
        del state["_undo"]
        return state

    def __setstate__(self, state):
        vars(self).update(state)
        self._undo = UndoLog()


class UndoLog:
    """The old values of the rows that a transaction writes in place.

    Each write is recorded by :meth:`record_rows` before it happens, so that
    at every moment the log can put back all that was written. Outside a
    transaction (before :meth:`begin` or after :meth:`commit`) nothing is
    recorded and nothing can be undone.
    """

    def __init__(self):
        self._entries = None

    def begin(self):
        """Start recording."""
        self._entries = []

    def record_rows(self, array, rows):
        """Keep ``array[rows]`` as they are, before the caller writes them.

        Parameters
        ----------
        array : ndarray
            The array about to be written.
        rows : ndarray of int or slice
            The rows about to be written.
        """
        if self._entries is None:
            return
        values = array[rows]
        if np.may_share_memory(values, array):  # a view, not a copy
            values = values.copy()
        self._entries.append((array, rows, values, None))

    def staged_rows(self, array, rows):
        """A record of ``array[rows]`` that a compiled write fills itself.

        For a write that copies the old rows as it writes them, in one call
        that does not return to the interpreter before it is done: the
        record is kept now, before the call, and holds the old values once
        the call sets its mark; until then nothing was written, and a
        rollback leaves the rows as they are.

        Returns
        -------
        saved : ndarray of shape (len(rows), array.shape[1])
            Where the write copies the old rows.
        done : ndarray of shape (1,)
            The mark that the write sets to 1 when it is complete.
        """
        saved = np.empty((len(rows), array.shape[1]), dtype=array.dtype)
        done = np.zeros(1, dtype=np.intp)
        if self._entries is not None:
            self._entries.append((array, rows, saved, done))
        return saved, done

    def commit(self):
        """Keep the writes: forget the old values and stop recording."""
        self._entries = None

    def rollback(self):
        """Put back the recorded rows, newest first, and stop recording."""
        for array, rows, values, done in reversed(self._entries or ()):
            if done is None or done[0]:
                array[rows] = values
        self._entries = None

    def __getstate__(self):
        # A saved model is between transactions.
        return {"_entries": None}


def spare_like(array, spare):
    """An array to write the next value of ``array`` to.

    Parameters
    ----------
    array : ndarray
        The current value.
    spare : ndarray or None
        The array that held the value before it, reused when it is alike.

    Returns
    -------
    spare : ndarray
        ``spare`` itself, or a new uninitialised array like ``array``.
    """
    if (
        spare is None
        or spare is array
        or spare.shape != array.shape
        or spare.dtype != array.dtype
    ):
        return np.empty_like(array, order="C")
    return spare
