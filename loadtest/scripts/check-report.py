#!/usr/bin/env python3
"""Open HTML reports of mcp-fleet-loadtest in headless Chromium and check what a reader sees.

Usage: python3 loadtest/scripts/check-report.py PAGE.html [PAGE.html ...] [--screenshot DIR]

For each page: it loads (the load event fires) with no console error, no uncaught
exception and no browser log error (a blocked fetch under the page's `default-src 'none'`
policy is one), it has at least one chart, and every chart (`svg.chart`) draws every one of
its series (`polyline.series`) with at least one point, as the browser parsed them. With
`--screenshot DIR`, a full-page PNG of each page is written there as NAME.png.

Talks the DevTools protocol over --remote-debugging-pipe (file descriptors 3 and 4, JSON
messages ended by NUL), so it needs nothing but Debian's `chromium` and the standard library.
Prints one line per page and `check-report: N passed, M failed`; exits 1 on any failure.
"""

import argparse
import base64
import json
import os
import pathlib
import select
import shutil
import subprocess
import sys
import tempfile
import time

CHARTS = """(() => [...document.querySelectorAll('svg.chart')].map(svg => ({
  id: svg.id,
  series: [...svg.querySelectorAll('polyline.series')].map(p => p.points.numberOfItems),
})))()"""


class Browser:
    """One headless Chromium, driven over its DevTools pipe."""

    def __init__(self, exe, profile):
        # Above 4, so that placing them at 3 and 4 in the child cannot overwrite each other.
        to_browser_r, self.to_browser = (os.dup(fd) for fd in os.pipe())
        self.from_browser, from_browser_w = (os.dup(fd) for fd in os.pipe())

        def pipes_as_3_and_4():
            # The browser reads commands from fd 3 and writes answers to fd 4.
            for fd, target in ((to_browser_r, 3), (from_browser_w, 4)):
                if fd != target:
                    os.dup2(fd, target)
                os.set_inheritable(target, True)

        self.log = open(os.path.join(profile, "chromium.log"), "wb")
        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
            preexec_fn=pipes_as_3_and_4, close_fds=False)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None, timeout=30):
        """Send a command and wait for its answer (events that arrive meanwhile are kept)."""
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        answer = self.wait(lambda m: m.get("id") == self.next_id, timeout)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    def wait(self, matches, timeout):
        """Read messages until one `matches` (or the timeout); events are kept in self.events."""
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\0", 1)
                message = json.loads(raw)
                if "method" in message:
                    self.events.append(message)
                if matches(message):
                    return message
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.from_browser], [], [], left)[0]:
                raise TimeoutError("no answer from chromium in time")
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe")
            self.buffer += chunk

    def close(self):
        try:
            self.send("Browser.close", timeout=5)
        except Exception:  # the browser may already be gone; it is killed below either way
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def errors_of(events, session):
    """The console errors, uncaught exceptions and browser log errors of one page."""
    found = []
    for e in events:
        if e.get("sessionId") != session:
            continue
        p = e.get("params", {})
        if e["method"] == "Runtime.exceptionThrown":
            found.append("exception: " + p["exceptionDetails"].get("text", "?"))
        elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            found.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
        elif e["method"] == "Log.entryAdded" and p["entry"]["level"] == "error":
            found.append("log: " + p["entry"]["text"])
    return found


def check(browser, page, screenshot_dir):
    """Problems found on `page` (empty: it passed), and a description of its charts."""
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Page", "Runtime", "Log"):
        browser.send(f"{domain}.enable", session=session)
    metrics = {"width": 1200, "height": 900, "deviceScaleFactor": 1, "mobile": False}
    browser.send("Emulation.setDeviceMetricsOverride", metrics, session=session)
    browser.send("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
    browser.wait(lambda m: m.get("method") == "Page.loadEventFired" and m.get("sessionId") == session, 30)
    result = browser.send("Runtime.evaluate", {"expression": CHARTS, "returnByValue": True}, session=session)
    charts = result["result"].get("value") or []
    problems = errors_of(browser.events, session)
    if not charts:
        problems.append("no chart on the page")
    for chart in charts:
        if not chart["series"] or min(chart["series"]) == 0:
            problems.append(f"chart {chart['id']} has no data points: series {chart['series']}")
    if screenshot_dir:
        height = browser.send("Page.getLayoutMetrics", session=session)["cssContentSize"]["height"]
        metrics["height"] = int(height) + 1
        browser.send("Emulation.setDeviceMetricsOverride", metrics, session=session)
        shot = browser.send("Page.captureScreenshot", {"format": "png"}, session=session)["data"]
        (screenshot_dir / (page.stem + ".png")).write_bytes(base64.b64decode(shot))
    browser.send("Target.closeTarget", {"targetId": target})
    return problems, ", ".join(f"{c['id']} {c['series']}" for c in charts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="+", type=pathlib.Path)
    parser.add_argument("--screenshot", type=pathlib.Path, metavar="DIR")
    args = parser.parse_args()
    exe = shutil.which("chromium") or sys.exit("check-report: no chromium on PATH (apt-get install chromium)")
    if args.screenshot:
        args.screenshot.mkdir(parents=True, exist_ok=True)
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="check-report-") as profile:
        browser = Browser(exe, profile)
        try:
            for page in args.pages:
                if not page.is_file():
                    problems, charts = [f"{page} does not exist"], ""
                else:
                    problems, charts = check(browser, page, args.screenshot)
                if problems:
                    failed += 1
                    print(f"  FAIL {page}: " + "; ".join(problems))
                else:
                    passed += 1
                    print(f"  ok   {page}: {charts}")
        finally:
            browser.close()
    print(f"check-report: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
