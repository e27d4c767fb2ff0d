"""`tuitrain serve` in a real headless browser (issue 38): command start → the page shows Home, and a key press → the
monitor drawn, beside the same app in a pseudo-terminal (the baseline, same run, rounds alternated).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/serve_latency.py [--rounds 3] [--keys 5]

The browser is Debian's chromium through Playwright (tests/browser.py; installed with apt-get where missing, as
root), launched once, before the clock starts: what a person has open already. Each round starts `tuitrain serve
--port 0` on the fixture runs (tests/test_tui_fixtures.py) and opens the printed URL at once:
  startup   the command's start → Home shows the finished fixture run's row, in the page's clock (epoch ms)
  key       Enter on Home (the highlighted run) → the first animation frame after the bytes that complete the
            monitor's title arrived (xterm.js paints on animation frames); then Escape back to Home, `--keys` times
  stop      SIGINT to the command's group (Ctrl-C) with the tab open → the command has exited
The baseline is `python -m tuitrain` in a pty of the size the page's terminal got: Home's row first painted, and the
same Enter → the title painted (bytes read from the pty; a terminal's own drawing is not in it).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _common import QuietGate, bench_env, machine_line
from browser import CHROMIUM, CHROMIUM_ARGS, ensure_chromium, screen_text
from test_tui_fixtures import FINISHED, make_runs
from tui_pty import PtyProgram
from tuitrain.tui.run_table import run_label

# Every binary frame the page receives: when it arrived, the first animation frame after it, its text; and the last
# key down. Wraps the page's WebSocket before its own script makes one.
WATCH = """
(() => {
  const Native = window.WebSocket;
  const now = () => performance.timeOrigin + performance.now();
  window.__tt = {frames: [], key: null};
  document.addEventListener("keydown", () => { window.__tt.key = now(); }, true);
  window.WebSocket = function (url, protocols) {
    const ws = protocols === undefined ? new Native(url) : new Native(url, protocols);
    const decoder = new TextDecoder();
    ws.addEventListener("message", (event) => {
      if (typeof event.data === "string") return;
      const mark = [now(), null, decoder.decode(event.data, {stream: true})];
      window.__tt.frames.push(mark);
      requestAnimationFrame(() => { mark[1] = now(); });
    });
    return ws;
  };
  window.WebSocket.prototype = Native.prototype;
  Object.assign(window.WebSocket, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});
})();
"""


def shown_at(page, needle: str, since: int, timeout: float = 60.0) -> tuple[float, int]:
    """(epoch seconds the frame completing `needle` was drawn, frames seen) among the page's frames from `since`."""
    deadline = time.monotonic() + timeout
    while True:
        frames = page.evaluate("window.__tt.frames.slice()")  # [arrived, drawn, text], one read
        seen = ""
        for _, drawn, text in frames[since:]:
            seen += text
            if needle in screen_text(seen.encode()):
                if drawn is not None:
                    return drawn / 1000, len(frames)
                break
        if time.monotonic() > deadline:
            raise TimeoutError(f"the page did not show {needle!r}; last: {screen_text(seen.encode())[-500:]!r}")
        page.wait_for_timeout(20)


def serve_round(playwright_browser, runs: Path, home: str, keys: int) -> tuple[dict[str, list[float]], tuple[int, int]]:
    """The figures of one start of `tuitrain serve`, and the terminal size the page asked for (cols, rows)."""
    page = playwright_browser.new_page(viewport={"width": 1400, "height": 900})
    page.add_init_script(WATCH)
    sockets: list[str] = []
    page.on("websocket", lambda ws: sockets.append(ws.url))
    out = tempfile.NamedTemporaryFile(prefix="serve-", suffix=".out", delete=False)
    started = time.time()
    served = subprocess.Popen([sys.executable, "-m", "tuitrain", "--runs-dir", str(runs), "serve", "--port", "0"],
                              stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=bench_env(),
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (found := re.search(r"http://\S+", Path(out.name).read_text())):
            if time.monotonic() > deadline or served.poll() is not None:
                raise RuntimeError(f"no URL: {Path(out.name).read_text()[-2000:]}")
            time.sleep(0.01)
        url_at = time.time()
        page.goto(found.group(0))
        home_at, since = shown_at(page, home, 0)
        page.focus(".xterm-helper-textarea")
        latencies, backs = [], []
        for _ in range(keys):
            page.keyboard.press("Enter")
            drawn, after = shown_at(page, "run 20260101-", since)
            latencies.append(drawn - page.evaluate("window.__tt.key") / 1000)
            page.keyboard.press("Escape")
            drawn, since = shown_at(page, "Profiles", after)
            backs.append(drawn - page.evaluate("window.__tt.key") / 1000)
        stop = time.time()
        os.killpg(served.pid, signal.SIGINT)
        served.wait(60)
        stopped = time.time() - stop
    finally:
        if served.poll() is None:
            os.killpg(served.pid, signal.SIGKILL)
            served.wait(30)
        page.close()
        os.unlink(out.name)
    asked = re.search(r"width=(\d+)&height=(\d+)", sockets[0])
    size = (int(asked.group(1)), int(asked.group(2))) if asked else (80, 24)
    return {"url": [url_at - started], "startup": [home_at - started], "key": latencies, "back": backs,
            "stop": [stopped]}, size


def pty_round(runs: Path, home: str, keys: int, size: tuple[int, int]) -> dict[str, list[float]]:
    program = PtyProgram([sys.executable, "-m", "tuitrain", "--runs-dir", str(runs)], size, env=bench_env())
    try:
        startup = program.wait_for(home, 60)
        latencies, backs = [], []
        for _ in range(keys):
            program.forget()
            program.send("\r")
            latencies.append(program.wait_for("run 20260101-", 60, since_start=False))
            program.forget()
            program.send("\x1b")
            backs.append(program.wait_for("Profiles", 60, since_start=False))
    finally:
        program.close()
    return {"startup": [startup], "key": latencies, "back": backs}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keys", type=int, default=5)
    opts = parser.parse_args()
    reason = ensure_chromium()
    if reason:
        print(f"serve_latency: {reason}")
        return 2
    from playwright.sync_api import sync_playwright

    base = Path(tempfile.mkdtemp(prefix="tuitrain-bench-serve-"))
    make_runs(base / "runs")
    home = " ".join(run_label(FINISHED, time.time()).split()[-2:])  # Home's row of the finished run ('00:00 demo')
    served: dict[str, list[float]] = {}
    in_pty: dict[str, list[float]] = {}
    with sync_playwright() as playwright:
        launched = time.perf_counter()
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        launch = time.perf_counter() - launched
        gate = QuietGate()
        for _ in range(opts.rounds):  # alternated: a slow moment of the machine hits both
            gate.wait()
            figures, size = serve_round(browser, base / "runs", home, opts.keys)
            for key, values in figures.items():
                served.setdefault(key, []).extend(values)
            gate.wait()
            for key, values in pty_round(base / "runs", home, opts.keys, size).items():
                in_pty.setdefault(key, []).extend(values)
        browser.close()

    def med(values: list[float]) -> str:
        return f"{statistics.median(values):.3f} s (n={len(values)}, {min(values):.3f}–{max(values):.3f})"

    print(f"serve_latency: {opts.rounds} rounds, {opts.keys} keys a round, chromium {CHROMIUM} headless, 1400x900 page")
    print(machine_line())
    print(gate.summary())
    print(f"browser launch (before the clock, once): {launch:.3f} s")
    print(f"serve: command start → URL printed: {med(served['url'])}")
    print(f"serve: command start → Home shown in the page: {med(served['startup'])}")
    print(f"  baseline, the app in a {size[0]}x{size[1]} pty: start → Home painted: {med(in_pty['startup'])}  "
          f"(x{statistics.median(served['startup']) / statistics.median(in_pty['startup']):.1f})")
    print(f"serve: Enter → the monitor drawn: {med(served['key'])}")
    print(f"  baseline, pty: Enter → the monitor's title painted: {med(in_pty['key'])}  "
          f"(x{statistics.median(served['key']) / statistics.median(in_pty['key']):.1f})")
    print(f"serve: Escape → Home drawn: {med(served['back'])};  pty: {med(in_pty['back'])}")
    print(f"serve: Ctrl-C with the tab open → the command exited: {med(served['stop'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
