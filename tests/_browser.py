"""A small driver of headless Chromium over the DevTools protocol.

Chromium started with ``--remote-debugging-pipe`` reads the protocol's
commands from its file descriptor 3 and writes its answers and events to
descriptor 4, each a JSON message ended by a NUL byte: the standard library
is all it takes. The tests of the topic report and its benchmark use it to
open a page, wait for it to draw, click, read the page back and collect
every console error and uncaught exception.
"""

import base64
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time

# How long a command or a wait may take before the browser counts as stuck.
TIMEOUT = 60.0
# What the page's console reports as errors.
_ERROR_LEVELS = {"error", "assert"}


def find_chromium():
    """The path of the Chromium executable, or None when it is not on PATH."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class BrowserError(RuntimeError):
    """The browser failed, answered a command with an error, or timed out."""


class Browser:
    """Headless Chromium with one page, driven through a pipe.

    Parameters
    ----------
    executable : str
        The Chromium executable.
    width, height : int, default=1280, 900
        The size of the page's window, in CSS pixels.

    Attributes
    ----------
    errors : list of str
        The console errors and uncaught exceptions of the page so far.
    """

    def __init__(self, executable, width=1280, height=900):
        self._profile = tempfile.mkdtemp(prefix="chromium-profile-")
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()
        self._process = subprocess.Popen(
            [
                executable,
                "--headless",
                "--remote-debugging-pipe",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-extensions",
                "--no-first-run",
                "--no-default-browser-check",
                f"--user-data-dir={self._profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            # Descriptors 3 and 4 of the browser are the pipes' ends; no
            # other descriptor of this process is inheritable.
            close_fds=False,
            preexec_fn=_descriptors_3_and_4(to_browser_read, from_browser_write),
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self.errors = []
        self._next_id = 0
        self._answers = {}
        self._answered = threading.Condition()
        self._events = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        target = self._command("Target.createTarget", url="about:blank")
        self._session = self._command(
            "Target.attachToTarget", targetId=target["targetId"], flatten=True
        )["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")
        self.send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def close(self):
        """Quit the browser and remove its profile."""
        try:
            self._command("Browser.close", timeout=10)
        except BrowserError:
            self._process.kill()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        os.close(self._to_browser)
        self._reader.join(timeout=10)
        os.close(self._from_browser)
        self._process.stderr.close()
        shutil.rmtree(self._profile, ignore_errors=True)

    # -- the protocol ----------------------------------------------------------

    def send(self, method, **params):
        """Send a command to the page and return its result."""
        return self._command(method, session=self._session, **params)

    def _command(self, method, session=None, timeout=TIMEOUT, **params):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._answered:
            while self._next_id not in self._answers:
                left = deadline - time.monotonic()
                if left <= 0 or self._process.poll() is not None:
                    raise BrowserError(f"no answer to {method}{self._stderr()}")
                self._answered.wait(min(left, 0.5))
            answer = self._answers.pop(self._next_id)
        if "error" in answer:
            raise BrowserError(f"{method} failed: {answer['error']}")
        return answer.get("result", {})

    def _read(self):
        """Sort the browser's messages into answers and events until it ends."""
        pending = b""
        while chunk := os.read(self._from_browser, 1 << 16):
            *messages, pending = (pending + chunk).split(b"\0")
            for message in map(json.loads, messages):
                if "id" in message:
                    with self._answered:
                        self._answers[message["id"]] = message
                        self._answered.notify_all()
                else:
                    self._note_event(message)

    def _note_event(self, message):
        method, params = message["method"], message.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            thrown = details.get("exception", {}).get("description", "")
            self.errors.append(f"uncaught exception: {details['text']} {thrown}")
        elif method == "Runtime.consoleAPICalled" and params["type"] in _ERROR_LEVELS:
            values = [
                str(argument.get("value", argument.get("description", "")))
                for argument in params["args"]
            ]
            self.errors.append(f"console.{params['type']}: {' '.join(values)}")
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            self.errors.append(f"browser log: {params['entry']['text']}")
        self._events.put(message)

    def _stderr(self):
        if self._process.poll() is None:
            return ""
        return f"; the browser exited: {self._process.stderr.read().decode()[-2000:]}"

    # -- the page --------------------------------------------------------------

    def open(self, path, ready="window.reportReady === true"):
        """Open a local file and wait until ``ready`` holds in the page.

        Returns
        -------
        seconds : float
            The time from the command to open the page until ``ready`` held.
        """
        while not self._events.empty():
            self._events.get()
        start = time.perf_counter()
        self.send("Page.navigate", url=f"file://{os.path.abspath(path)}")
        # Until the new page has loaded, ``ready`` may be read from the old.
        self._wait_for_event("Page.loadEventFired")
        self.wait_for(ready)
        return time.perf_counter() - start

    def _wait_for_event(self, method, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while True:
            try:
                event = self._events.get(timeout=max(deadline - time.monotonic(), 0))
            except queue.Empty:
                raise BrowserError(f"no {method} event{self._stderr()}") from None
            if event["method"] == method:
                return

    def wait_for(self, condition, timeout=TIMEOUT):
        """Evaluate the JavaScript ``condition`` until it is true."""
        deadline = time.monotonic() + timeout
        while not self.evaluate(f"Boolean({condition})"):
            if time.monotonic() > deadline:
                raise BrowserError(
                    f"{condition} still false after {timeout} s; page errors: "
                    f"{self.errors}"
                )
            time.sleep(0.01)

    def evaluate(self, expression):
        """The JSON value of a JavaScript expression evaluated in the page."""
        result = self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True
        )
        if "exceptionDetails" in result:
            raise BrowserError(
                f"{expression} threw: {result['exceptionDetails']['text']} "
                f"{result['exceptionDetails'].get('exception', {})}"
            )
        return result["result"].get("value")

    def click(self, selector):
        """Click the middle of the first element that matches ``selector``,
        as a mouse does."""
        box = self.evaluate(
            f"(() => {{ const box = document.querySelector({json.dumps(selector)})"
            ".getBoundingClientRect(); return [box.x + box.width / 2, "
            "box.y + box.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.send(
                "Input.dispatchMouseEvent",
                type=kind,
                x=box[0],
                y=box[1],
                button="left",
                clickCount=1,
            )

    def screenshot(self, path):
        """Save a PNG of the page's window."""
        data = self.send("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as stream:
            stream.write(base64.b64decode(data))


def _descriptors_3_and_4(read_end, write_end):
    """The function that a child process runs before Chromium starts: it
    makes ``read_end`` its descriptor 3 and ``write_end`` its descriptor 4."""

    def arrange():
        # Copies first, in case an end is itself 3 or 4.
        read_copy, write_copy = os.dup(read_end), os.dup(write_end)
        os.dup2(read_copy, 3)
        os.dup2(write_copy, 4)

    return arrange
