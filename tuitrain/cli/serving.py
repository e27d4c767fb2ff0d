"""`tuitrain serve`: the app in a browser tab (Textual's textual-serve), behind a token in its URL.

Each tab the server accepts runs the app as its own process (`python -m tuitrain.tui`, Textual's web driver); the
server holds no UI of its own. textual-serve checks no token, so an aiohttp middleware in front of its routes does:
the URL's `?token=` (then a cookie for this port, which the page's script, style and websocket requests carry), or
403 before any route runs, so a request without the token starts no app.
"""

from __future__ import annotations

import argparse
import errno
import hmac
import ipaddress
import os
import secrets
import shlex
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from tuitrain.cli.errors import CliError

if TYPE_CHECKING:
    from aiohttp import web

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
SHUTDOWN_SECONDS = 5.0  # what the tabs' apps get to quit when the server stops, before it ends without them
REFUSED = "tuitrain serve: open the URL with its token, as `tuitrain serve` printed it\n"


def add_arguments(p: argparse.ArgumentParser) -> None:
    # dest bind_host: `--host` elsewhere names a workstation a command is sent to (cli.workstations.remote_target)
    p.add_argument("--host", dest="bind_host", default=DEFAULT_HOST, metavar="ADDRESS",
                   help=f"the address to listen on (default {DEFAULT_HOST}, this machine only: reach it with ssh -L); "
                        "another one (0.0.0.0: every interface) lets others reach the app, and says so")
    p.add_argument("--port", type=_port, default=DEFAULT_PORT,
                   help=f"the port to listen on (default {DEFAULT_PORT}; 0: a free one, the URL says which)")


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0 to 65535)")
    return port


def is_loopback(host: str) -> bool:
    """True where only this machine can reach `host` (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind_warning(host: str, port: int) -> str | None:
    """The one line said when the app is reachable from other machines."""
    if is_loopback(host):
        return None
    return (f"tuitrain serve: warning: listening on {host}:{port}, not on this machine only: whoever reaches it with "
            "the token drives the app (starts and stops runs), and plain http carries the token unencrypted; "
            f"the default ({DEFAULT_HOST}) and ssh -L keep it to you")


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on host:port (port 0: a free one), or a CliError saying why there is none. Listening
    before the URL is printed: a browser that opens it at once waits in the backlog, never meets a refusal."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; check --host") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as aiohttp listens
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        fix = "pick another port with --port (0: any free one)" if exc.errno == errno.EADDRINUSE else "check --host"
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; {fix}") from None
    return sock


def page_url(host: str, port: int, token: str) -> str:
    shown = socket.gethostname() if host in ("0.0.0.0", "::") else host
    shown = f"[{shown}]" if ":" in shown else shown
    return f"http://{shown}:{port}/?token={token}"


def app_command(runs_root: Path) -> str:
    """The shell command textual-serve runs for each tab: this interpreter's app, exec'd so that the server is its
    parent (and its parent-death signal fires when the server goes)."""
    root = shlex.quote(str(Path(runs_root).resolve()))
    return f"exec {shlex.quote(sys.executable)} -m tuitrain.tui --runs-dir {root} --parent {os.getpid()}"


def token_middleware(token: str, cookie: str) -> Callable[..., Awaitable[Any]]:
    """An aiohttp middleware: the URL's `?token=` right, or (without one) this port's cookie right; else 403."""
    from aiohttp import web

    expected = token.encode()

    def right(given: str) -> bool:
        return hmac.compare_digest(given.encode(), expected)

    @web.middleware
    async def check(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        given = request.query.get("token")
        if given is not None:
            if not right(given):
                raise web.HTTPForbidden(text=REFUSED)
            response = await handler(request)
            if not response.prepared:  # a websocket's answer has gone already
                response.set_cookie(cookie, token, httponly=True, samesite="Strict", path="/")
            return response
        if not right(request.cookies.get(cookie, "")):
            raise web.HTTPForbidden(text=REFUSED)
        return await handler(request)

    return check


def cmd_serve(args: argparse.Namespace) -> int:
    host = args.bind_host
    sock = listen(host, args.port)
    port = int(sock.getsockname()[1])
    token = secrets.token_hex(24)
    server = make_server(app_command(args.runs_root), sock, token)
    if warning := bind_warning(host, port):
        print(warning, file=sys.stderr)
    print(f"tuitrain serve: the app at {page_url(host, port, token)}", flush=True)
    if is_loopback(host):
        print(f"tuitrain serve: from another machine: ssh -L {port}:{host}:{port} {socket.gethostname()}, "
              "then open that URL there", flush=True)
    print("tuitrain serve: Ctrl-C stops it (runs go on)", flush=True)
    server.serve()
    return 0


def make_server(command: str, sock: socket.socket, token: str) -> Any:
    """textual-serve's Server with the token check in front of its routes, on `sock`, quiet but for errors; its
    tabs' apps end with it."""
    import asyncio
    import logging

    from aiohttp import web
    from textual_serve.server import Server

    host, port = sock.getsockname()[:2]
    cookie = f"tuitrain-serve-{port}"  # cookies are kept per host, not per port: one per server on this host
    tabs: set[Any] = set()  # the handler task of each open tab

    class TokenServer(Server):
        def serve(self, debug: bool = False) -> None:
            # textual-serve's own serve() listens on host:port itself; this one on the socket already listening
            self.initialize_logging()
            logging.getLogger().setLevel(logging.WARNING)  # no access log line per request, token and all
            web.run_app(self._make_app(), sock=sock, print=None, handle_signals=True, shutdown_timeout=SHUTDOWN_SECONDS)

        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            app.middlewares.append(token_middleware(token, cookie))
            return app

        async def on_startup(self, app: web.Application) -> None:
            pass  # cmd_serve said where the app is, token and all

        async def handle_index(self, request: web.Request) -> Any:
            # the page's websocket and static URLs from the address the browser used (ssh -L may map another port)
            self.public_url = f"{request.scheme}://{request.host}"
            return await super().handle_index(request)

        async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
            tab = asyncio.current_task()
            tabs.add(tab)
            try:
                return await super().handle_websocket(request)
            finally:
                tabs.discard(tab)

        async def on_shutdown(self, app: web.Application) -> None:
            # each tab's handler, cancelled, tells its app to quit and waits for it (textual-serve's AppService.stop);
            # an app that does not quit in time ends with this process (its parent-death signal)
            for tab in list(tabs):
                tab.cancel()
            if tabs:
                await asyncio.wait(list(tabs), timeout=SHUTDOWN_SECONDS)

    return TokenServer(command, host=str(host), port=int(port), title="tuitrain")
