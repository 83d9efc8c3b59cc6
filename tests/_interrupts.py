"""Interrupts delivered at chosen moments of a fit, for the tests.

A real Ctrl-C is handled by the main thread between two bytecodes, wherever
it happens to be. :func:`interrupted_at` reproduces that at a chosen moment:
it counts the bytecodes the main thread runs and raises ``KeyboardInterrupt``
before the ``moment``-th, in whichever frame runs it, unless Ctrl-C is held
back at that moment (the package's own handler is installed), as it would be
for a real signal.

No interrupt is placed inside the standard library's locks and thread
pools: CPython itself cannot undo an interrupt between a lock's acquisition
and the ``with`` statement that releases it, so there a Ctrl-C breaks the
interpreter's own objects whatever the program does. An interrupt inside
scikit-learn's ``config_context`` can leave its settings changed for the
thread (parameter validation skipped, say); they are put back afterwards, so
that later tests see them as they were.
"""

import concurrent.futures
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager

import sklearn

_UNINTERRUPTIBLE = (
    threading.__file__,
    os.path.dirname(concurrent.futures.__file__),
)


class InjectedInterrupt(KeyboardInterrupt):
    """The interrupt raised at a chosen bytecode."""


class _BytecodeCounter:
    """A trace function that counts bytecodes and raises at one of them."""

    def __init__(self, moment):
        self.moment = moment
        self.count = 0

    def __call__(self, frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(_UNINTERRUPTIBLE):
            return None
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        if event == "opcode":
            self.count += 1
            if (
                self.count >= self.moment
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler
            ):
                # Raised once: the interpreter drops a trace function that
                # raises, as it would stop delivering a handled signal.
                raise InjectedInterrupt
        return self


@contextmanager
def interrupted_at(moment):
    """Run the body with an interrupt at its ``moment``-th bytecode.

    Yields the counter, whose ``count`` afterwards is the number of
    bytecodes run (with ``moment`` beyond the body's length: all of them).
    """
    counter = _BytecodeCounter(moment)
    previous = sys.gettrace()
    config = sklearn.get_config()
    sys.settrace(counter)
    try:
        yield counter
    finally:
        sys.settrace(previous)
        sklearn.set_config(**config)


def interrupted_by_a_signal(delay, function, *arguments):
    """Call ``function(*arguments)`` while a timer thread sends this process
    a real SIGINT after ``delay`` seconds; whether Ctrl-C ended the call.

    The handler runs in the main thread at the latest while this waits for
    the timer; a signal that comes after the call interrupts nothing.
    """
    timer = threading.Timer(delay, signal.raise_signal, (signal.SIGINT,))
    try:
        try:
            timer.start()
            function(*arguments)
        finally:
            timer.join()
            time.sleep(0.05)
    except KeyboardInterrupt:
        return True
    return False
