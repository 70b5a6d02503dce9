"""A headless Chromium driven over the DevTools protocol, standard library only.

Chromium's `--remote-debugging-pipe` reads protocol messages (JSON, each ended by a NUL
byte) on file descriptor 3 and writes its replies on 4, so no websocket client or browser
driver package is needed. Enough of the protocol for tests: open a page, evaluate
JavaScript, take a screenshot.

    with Browser() as b:
        b.open("http://127.0.0.1:8000/index.html")
        title = b.eval("document.title")
        png = b.screenshot()
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")


def find_chromium() -> str | None:
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserError(RuntimeError):
    pass


class Browser:
    def __init__(self, width: int = 1280, height: int = 900, timeout: float = 60.0):
        exe = find_chromium()
        if exe is None:
            raise BrowserError("no chromium on PATH")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # Chromium uses fds 3 and 4 of its own process: map our pipe ends onto them (the
        # child closes every other descriptor after this runs, except those in pass_fds).
        def child_fds():
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)
        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-dev-shm-usage", "--remote-debugging-pipe",
             f"--window-size={width},{height}", "about:blank"],
            preexec_fn=child_fds, close_fds=False,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.timeout = timeout
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self._call("Target.attachToTarget",
                                  {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    # ---------------------------------------------------------------- protocol
    def _send(self, message: dict) -> None:
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")

    def _receive(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise BrowserError("no reply from chromium in time")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise BrowserError("chromium exited")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(raw)

    def _call(self, method: str, params: dict | None = None, session: str | None = None):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self._send(message)
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def call(self, method: str, params: dict | None = None) -> dict:
        return self._call(method, params, self.session)

    # ---------------------------------------------------------------- conveniences
    def open(self, url: str) -> None:
        self.events.clear()
        self.call("Page.navigate", {"url": url})
        self.wait_for("document.readyState === 'complete'")

    def eval(self, expression: str):
        result = self.call("Runtime.evaluate", {"expression": expression,
                                                "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, condition: str, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout or self.timeout)
        while not self.eval(f"Boolean({condition})"):
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {condition}")
            time.sleep(0.2)

    def screenshot(self) -> bytes:
        return base64.b64decode(self.call("Page.captureScreenshot", {"format": "png"})["data"])

    def close(self) -> None:
        try:
            self._call("Browser.close")
        except (BrowserError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
