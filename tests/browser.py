"""Headless Chromium driven through the Chrome DevTools Protocol over a pipe
(`--remote-debugging-pipe`: JSON messages on file descriptors 3 and 4, each ended by a NUL),
so the tests need no package beyond the standard library and no network: the distribution's
own browser (`apt-get install chromium`) is found on PATH or by FFN_CHROMIUM.

    with Browser.start() as browser:
        browser.open(path, width=1280)
        browser.evaluate("document.title")
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["Browser", "BrowserError", "find_chromium"]

# Chromium's names across distributions; FFN_CHROMIUM names one anywhere.
NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# Offline and quiet: nothing fetched, nothing synced, no first-run pages.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)
TIMEOUT_S = 30.0


class BrowserError(RuntimeError):
    pass


def find_chromium() -> str | None:
    named = os.environ.get("FFN_CHROMIUM")
    if named:
        return named if Path(named).is_file() else None
    return next((path for name in NAMES if (path := shutil.which(name))), None)


class Browser:
    """One browser with one page; commands are answered in order, events are set aside."""

    def __init__(self, process: subprocess.Popen[bytes], to_browser: int, from_browser: int, profile: str) -> None:
        self._process, self._out, self._in, self._profile = process, to_browser, from_browser, profile
        self._buffer = b""
        self._next_id = 0
        self._session: str | None = None

    @classmethod
    def start(cls, executable: str | None = None) -> Browser:
        executable = executable or find_chromium()
        if executable is None:
            raise BrowserError("no Chromium found (apt-get install chromium, or set FFN_CHROMIUM)")
        profile = tempfile.mkdtemp(prefix="ffn-chromium-")  # a new, empty profile each time
        commands_r, commands_w = os.pipe()
        replies_r, replies_w = os.pipe()

        def as_fds_3_and_4() -> None:  # runs in the child, before close_fds keeps only 3 and 4
            os.dup2(commands_r, 3)
            os.dup2(replies_w, 4)

        process = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            preexec_fn=as_fds_3_and_4,
            pass_fds=(3, 4),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(commands_r)
        os.close(replies_w)
        browser = cls(process, commands_w, replies_r, profile)
        try:
            target = browser.send("Target.createTarget", url="about:blank")["targetId"]
            browser._session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            browser.send("Page.enable")
            browser.send("Runtime.enable")
        except BaseException:
            browser.close()
            raise
        return browser

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        try:
            if self._process.poll() is None:
                self._session = None
                self.send("Browser.close")
        except (BrowserError, OSError):
            pass
        finally:
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            for fd in (self._out, self._in):
                with contextlib.suppress(OSError):
                    os.close(fd)
            shutil.rmtree(self._profile, ignore_errors=True)

    # --- the protocol ----------------------------------------------------------------------

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if self._session is not None:
            message["sessionId"] = self._session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error'].get('message')}")
                return reply.get("result", {})

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._in], [], [], left)[0]:
                raise BrowserError("Chromium did not answer in time")
            chunk = os.read(self._in, 1 << 16)
            if not chunk:
                raise BrowserError("Chromium closed the pipe")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(line)

    # --- what the tests do -----------------------------------------------------------------

    def open(self, path: Path, *, width: int, height: int = 900) -> None:
        """Show the file at `path` in a window `width` CSS pixels wide, and wait until it has loaded."""
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=width < 600)
        self.send("Page.navigate", url=Path(path).resolve().as_uri())
        deadline = time.monotonic() + TIMEOUT_S
        while self.evaluate("document.readyState") != "complete":
            if time.monotonic() > deadline:
                raise BrowserError(f"{path} did not finish loading")
            time.sleep(0.05)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-like values only)."""
        reply = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in reply:
            raise BrowserError(f"{expression!r}: {reply['exceptionDetails'].get('text')}")
        return reply["result"].get("value")

    def hover(self, selector: str) -> None:
        """Move the mouse to the middle of the element `selector` names, as a person would."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView({{block: 'center'}});"
            " const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + Math.min(r.height / 2, 12)]; })()"
        )
        self.send("Input.dispatchMouseEvent", type="mouseMoved", x=box[0], y=box[1])

    def press(self, key: str) -> None:
        """A key press on the focused element: "Tab", "ArrowDown", …"""
        codes = {"Tab": 9, "Enter": 13, "Escape": 27, "ArrowUp": 38, "ArrowDown": 40}
        for kind in ("rawKeyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent", type=kind, key=key, code=key, windowsVirtualKeyCode=codes.get(key, 0))

    def screenshot(self, path: Path, *, whole: bool = True) -> None:
        """The whole page as a PNG, as wide as the window; or only what the window shows."""
        if whole:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
            png = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True, clip=clip)["data"]
        else:
            png = self.send("Page.captureScreenshot", format="png")["data"]
        Path(path).write_bytes(base64.b64decode(png))
