"""Shared helpers of the issue-33 reproductions (standard library only).

Start an `mcp-fleet` node on free ports (its pid recorded, stopped by that pid), talk to it
over plain HTTP/1.1 (http.client, or a raw socket where the wire itself matters: SSE
streams, odd Content-Length values), read its RSS from /proc, and print one verdict line.
Every verdict is computed from what was observed; nothing is assumed.
"""

import atexit
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

VERSION_2026 = "2026-07-28"
VERSION_2025 = "2025-11-25"

# Processes this run started: stopped by pid at exit, whatever happens.
_STARTED = []


def _stop_all():
    for proc in reversed(_STARTED):
        stop(proc)


atexit.register(_stop_all)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def binary():
    """The node binary: argv[1] or $MCP_FLEET_BIN."""
    path = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MCP_FLEET_BIN", "")
    if not path or not os.access(path, os.X_OK):
        sys.exit(f"usage: {sys.argv[0]} PATH_TO_NODE_BINARY (got {path!r})")
    return os.path.abspath(path)


def workdir():
    """A scratch directory (under $REPRO_DIR when the driver script gives one)."""
    base = os.environ.get("REPRO_DIR") or tempfile.mkdtemp(prefix="repro-issue33.")
    os.makedirs(base, exist_ok=True)
    return base


def verdict(item, safe, what):
    """Print the item's one line; `safe` must come from an observation."""
    print(f"item {item}: {'SAFE' if safe else 'UNSAFE'}: {what}", flush=True)


def free_port(host="127.0.0.1"):
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def non_loopback_ipv4():
    """An IPv4 address of this machine other than loopback (the source address of a
    connection to it is then not loopback, so per-address limits apply), or None."""
    try:
        out = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"],
                             capture_output=True, text=True, timeout=5).stdout
        for line in out.splitlines():
            parts = line.split()
            if "inet" in parts:
                addr = parts[parts.index("inet") + 1].split("/")[0]
                if not addr.startswith("127."):
                    return addr
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # no packet is sent
            addr = s.getsockname()[0]
            return None if addr.startswith("127.") else addr
    except OSError:
        return None


class Node:
    """One `mcp-fleet` process on free ports (MCP on `host`, admin on 127.0.0.1)."""

    def __init__(self, args, host="127.0.0.1", admin=True, name="node", wait=True, env=None, port=None):
        self.host = host
        self.port = port or free_port(host)
        self.admin_port = free_port() if admin else None
        self.log_path = os.path.join(workdir(), f"{name}-{self.port}.log")
        cmd = [binary(), "--listen", f"{host}:{self.port}"]
        if admin:
            cmd += ["--admin-listen", f"127.0.0.1:{self.admin_port}"]
        cmd += list(args)
        self.cmd = cmd
        full_env = dict(os.environ)
        full_env.setdefault("RUST_LOG", "info")
        full_env.update(env or {})
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=full_env)
        _STARTED.append(self.proc)
        if wait:
            self.wait_ready()

    @property
    def pid(self):
        return self.proc.pid

    def wait_ready(self, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"node exited ({self.proc.returncode}); log {self.log_path}:\n"
                                   + self.log_text()[-2000:])
            if self.admin_port is None:
                try:
                    socket.create_connection((self.host, self.port), timeout=1).close()
                    return
                except OSError:
                    pass
            else:
                try:
                    status, _, _ = http_request("127.0.0.1", self.admin_port, "GET", "/readyz", timeout=1)
                    if status == 200:
                        return
                except OSError:
                    pass
            time.sleep(0.1)
        raise RuntimeError(f"node not ready after {timeout}s; log {self.log_path}")

    def log_text(self):
        self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def rss_kib(self):
        return rss_kib(self.pid)

    def url(self):
        return f"http://{self.host}:{self.port}/mcp"

    def admin(self, method, path, body=None, headers=None):
        return http_request("127.0.0.1", self.admin_port, method, path, body, headers or {})

    def notify(self, kind, uri=None):
        """POST /admin/notify: (epoch, version) of the published event."""
        body = {"kind": kind}
        if uri:
            body["uri"] = uri
        status, _, data = self.admin("POST", "/admin/notify", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        if status != 200:
            raise RuntimeError(f"/admin/notify answered {status}: {data[:300]!r}")
        reply = json.loads(data)
        return reply["epoch"], reply["version"]

    def stop(self):
        stop(self.proc)


def stop(proc, grace=15):
    """SIGTERM the process by its pid, then SIGKILL it if it has not exited after `grace` s."""
    if proc.poll() is None:
        try:
            os.kill(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    if proc in _STARTED:
        _STARTED.remove(proc)


def start_process(cmd, log_path, env=None):
    """Start a helper process (a private redis-server, run-fleet.sh), stopped at exit."""
    log = open(log_path, "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    _STARTED.append(proc)
    return proc


def children(pid):
    """The pids (and command lines) of `pid`'s child processes, from /proc."""
    found = {}
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                for child in f.read().split():
                    try:
                        with open(f"/proc/{child}/cmdline", "rb") as c:
                            found[int(child)] = c.read()
                    except OSError:
                        pass
    except OSError:
        pass
    return found


def kill_leftovers(pids):
    """SIGKILL those of `pids` ({pid: cmdline}) still running the same command line."""
    for pid, cmdline in pids.items():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as c:
                if c.read() != cmdline:
                    continue
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def strip_ansi(text):
    """`text` without terminal colour codes (the node's text log has them)."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def mib(kib):
    return f"{kib / 1024:.0f} MiB"


# ---- HTTP -------------------------------------------------------------------------------

def http_request(host, port, method, path, body=None, headers=None, timeout=30):
    """One request on a fresh connection: (status, headers dict lowercased, body bytes)."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
    finally:
        conn.close()


class Client:
    """A keep-alive HTTP/1.1 client of one node's /mcp."""

    def __init__(self, host, port, timeout=30):
        self.host, self.port, self.timeout = host, port, timeout
        self.conn = None

    def send(self, method, body=None, headers=None):
        """(status, headers, body bytes); a dropped connection is reopened once."""
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                self.conn.request(method, "/mcp", body=body, headers=headers or {})
                resp = self.conn.getresponse()
                data = resp.read()
                hdrs = {k.lower(): v for k, v in resp.getheaders()}
                if hdrs.get("connection", "").lower() == "close":
                    self.close()
                return resp.status, hdrs, data
            except (http.client.HTTPException, ConnectionError):
                self.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def headers_2025(session=None, extra=None, version=VERSION_2025):
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
         "MCP-Protocol-Version": version}
    if session:
        h["Mcp-Session-Id"] = session
    h.update(extra or {})
    return h


def initialize_body(capabilities=None, version=VERSION_2025, client_info=None):
    return {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": capabilities or {},
        "clientInfo": client_info or {"name": "repro-issue33", "version": "1.0.0"}}}


def meta_2026(capabilities=None):
    return {"io.modelcontextprotocol/protocolVersion": VERSION_2026,
            "io.modelcontextprotocol/clientCapabilities": capabilities or {}}


def request_2026(rid, method, params, capabilities=None):
    params = dict(params)
    params["_meta"] = meta_2026(capabilities)
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def headers_2026(method):
    return {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": VERSION_2026, "Mcp-Method": method}


def messages(data, content_type=""):
    """The JSON-RPC messages of a reply body: JSON (one or a batch) or SSE `data:` lines."""
    text = data.decode("utf-8", "replace")
    if "text/event-stream" in content_type:
        out = []
        for line in text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                out.append(json.loads(line[5:].strip()))
        return out
    if not text.strip():
        return []
    value = json.loads(text)
    return value if isinstance(value, list) else [value]


def error_code(data, content_type=""):
    try:
        for m in messages(data, content_type):
            if isinstance(m, dict) and "error" in m:
                return m["error"].get("code")
    except ValueError:
        return None
    return None


def error_message(data, content_type=""):
    try:
        for m in messages(data, content_type):
            if isinstance(m, dict) and "error" in m:
                return str(m["error"].get("message", ""))
    except ValueError:
        return ""
    return ""


class Session2025:
    """A 2025-era session opened with `initialize` + `notifications/initialized`."""

    def __init__(self, client, extra=None, version=VERSION_2025, capabilities=None):
        self.client, self.extra, self.version = client, dict(extra or {}), version
        status, hdrs, data = client.send("POST", json.dumps(initialize_body(capabilities, version)).encode(),
                                         headers_2025(None, self.extra, version))
        self.init_status, self.init_body = status, data
        self.id = hdrs.get("mcp-session-id")
        if status == 200 and self.id:
            self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, body):
        return self.client.send("POST", json.dumps(body).encode(), headers_2025(self.id, self.extra, self.version))

    def delete(self):
        h = {"MCP-Protocol-Version": self.version, "Mcp-Session-Id": self.id}
        h.update(self.extra)
        return self.client.send("DELETE", None, h)[0]


# ---- raw sockets and SSE --------------------------------------------------------------------

class RawResponse:
    """An HTTP/1.1 response read off a raw socket: status line, headers, then its body as
    it arrives (chunked or not), for SSE streams and odd requests."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.status = None
        self.headers = {}
        self.chunked = False
        self.length = None
        self.body = b""
        self.closed = False

    def _recv(self, deadline):
        remaining = deadline - time.time()
        if remaining <= 0:
            return False
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return False
        except OSError:
            data = b""
        if not data:
            self.closed = True
            return False
        self.buf += data
        return True

    def read_head(self, timeout=5):
        deadline = time.time() + timeout
        while b"\r\n\r\n" not in self.buf:
            if not self._recv(deadline):
                return False
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        for line in lines[1:]:
            k, _, v = line.partition(":")
            self.headers[k.strip().lower()] = v.strip()
        self.chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
        if "content-length" in self.headers:
            self.length = int(self.headers["content-length"])
        self._drain()
        return True

    def _drain(self):
        """Move what the buffer holds of the body into `self.body`; whether anything moved."""
        got = False
        while self.buf:
            if not self.chunked:
                self.body += self.buf
                self.buf = b""
                return True
            if b"\r\n" not in self.buf:
                break
            size_line, rest = self.buf.split(b"\r\n", 1)
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if len(rest) < size + 2:
                break
            self.body += rest[:size]
            self.buf = rest[size + 2:]
            got = True
            if size == 0:
                self.closed = True
                break
        return got

    def read_more(self, deadline):
        """Move body bytes from the socket into `self.body`; False when nothing came."""
        while True:
            if self._drain():
                return True
            if self.closed or not self._recv(deadline):
                return self._drain()

    def read_body(self, timeout=10):
        """The whole body (until Content-Length, the last chunk, close or timeout)."""
        deadline = time.time() + timeout
        self._drain()
        while time.time() < deadline and not self.closed:
            if self.length is not None and len(self.body) >= self.length:
                break
            self.read_more(deadline)
        return self.body


def raw_request(host, port, raw, timeout=5):
    """Send `raw` bytes on a fresh connection; the RawResponse with its head read."""
    sock = socket.create_connection((host, port), timeout=timeout)
    sock.sendall(raw)
    resp = RawResponse(sock)
    resp.read_head(timeout)
    return resp


class SseStream:
    """An SSE response on a raw socket; `events()` yields (id, data) pairs as they arrive."""

    def __init__(self, host, port, method, headers, body=b"", timeout=5):
        lines = [f"{method} /mcp HTTP/1.1", f"Host: {host}:{port}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        if method == "POST":
            lines.append(f"Content-Length: {len(body)}")
        raw = ("\r\n".join(lines) + "\r\n\r\n").encode() + body
        self.resp = raw_request(host, port, raw, timeout)
        self.status = self.resp.status
        self.headers = self.resp.headers
        self.pending = b""
        self.consumed = 0

    def next_event(self, timeout=5):
        """The next (id, data) event, or None when none came within `timeout`."""
        deadline = time.time() + timeout
        while True:
            body = self.resp.body[self.consumed:]
            text = body.replace(b"\r\n", b"\n")
            if b"\n\n" in text:
                raw_event, _ = text.split(b"\n\n", 1)
                # Advance past the event in the original bytes.
                cut = body.find(b"\n\n")
                cut_crlf = body.find(b"\r\n\r\n")
                if cut_crlf != -1 and (cut == -1 or cut_crlf < cut):
                    self.consumed += cut_crlf + 4
                else:
                    self.consumed += cut + 2
                event_id, data, comment_only = None, [], True
                for line in raw_event.decode("utf-8", "replace").split("\n"):
                    if line.startswith(":"):
                        continue
                    comment_only = False
                    field, _, value = line.partition(":")
                    value = value[1:] if value.startswith(" ") else value
                    if field == "id":
                        event_id = value
                    elif field == "data":
                        data.append(value)
                if comment_only:
                    continue  # a keepalive comment
                return event_id, "\n".join(data)
            if self.resp.closed or time.time() >= deadline:
                return None
            self.resp.read_more(deadline)

    def close(self):
        try:
            self.resp.sock.close()
        except OSError:
            pass
