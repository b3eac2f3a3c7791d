"""Item 11: an empty admin token must stop the node at start; a bus URL with a `?` in its
password must be masked in the log, /metrics, the probes and /admin/fleet.

(a) `--admin-token ""`, `--admin-token "  "` and an empty `--admin-token-file`: the node must
    exit non-zero without serving.
(b) A private redis-server and a private nats-server (own ports, temp dirs) whose passwords
    hold a `?`: `pa?<marker>`, and `pa?stream=<marker>` (the tail looks like a parameter),
    given as `redis://:PASSWORD@127.0.0.1:PORT/0` and `nats://USER:PASSWORD@127.0.0.1:PORT`.
    The node runs at RUST_LOG=debug with --bus-connect-secs 4; its probes, /metrics and
    /admin/fleet are read while it runs; its log (stdout and stderr, the fatal error
    included) is read after. The marker must appear nowhere.
"""

import os
import re
import secrets
import socket
import subprocess
import sys
import time

import lib


def refused_to_start(args, label):
    port, admin = lib.free_port(), lib.free_port()
    try:
        run = subprocess.run([lib.binary(), "--listen", f"127.0.0.1:{port}", "--admin-listen", f"127.0.0.1:{admin}",
                              "--bus", "memory://"] + args, capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return False, f"{label}: still running after 20 s"
    said = lib.strip_ansi((run.stderr.strip().splitlines() or run.stdout.strip().splitlines() or [""])[-1])
    reason = said.removeprefix("Error: ").split(":")[0][:70]
    return run.returncode != 0 and "empty" in reason, f"{label}: exit {run.returncode} ({reason!r})"


def wait_port(port, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def leak_check(bus, marker, label):
    """Run a node on `bus` (reading its probes, /metrics and /admin/fleet while it runs):
    (where `marker` showed, the log lines holding it, what the node did)."""
    node = lib.Node(["--bus", bus, "--bus-connect-secs", "4"], name="item11-" + re.sub(r"[^a-z0-9]+", "-", label).strip("-"), wait=False,
                    env={"RUST_LOG": "debug"})
    seen, outputs, ready = [], {}, False
    started = time.time()
    while time.time() - started < 8 and node.proc.poll() is None:
        for path in ("/livez", "/readyz", "/metrics", "/admin/fleet"):
            try:
                status, _, body = node.admin("GET", path)
                outputs[path] = status
                ready = ready or (path == "/readyz" and status == 200)
                if marker.encode() in body and path not in seen:
                    seen.append(path)
            except OSError:
                pass
        if ready:
            break
        time.sleep(0.2)
    lived = time.time() - started
    exit_code = node.proc.poll()
    node.stop()
    lines = [line for line in lib.strip_ansi(node.log_text()).splitlines() if marker in line]
    if lines:
        seen.append("log")
    did = ("connected and served" if ready else
           f"exited {exit_code} after {lived:.1f} s" if exit_code is not None else "not connected")
    return seen, lines, f"{label} {did}, admin answers seen {outputs or 'none'}"


def main():
    lib.binary()
    problems, notes = [], []
    work = lib.workdir()

    for args, label in [(["--admin-token", ""], '--admin-token ""'), (["--admin-token", "  "], '--admin-token "  "')]:
        ok, note = refused_to_start(args, label)
        notes.append(note)
        if not ok:
            problems.append(f"{label} did not stop the node")
    empty = os.path.join(work, "empty-token")
    open(empty, "w").close()
    ok, note = refused_to_start(["--admin-token-file", empty], "empty --admin-token-file")
    notes.append(note)
    if not ok:
        problems.append("an empty token file did not stop the node")

    marker = "S3CR3T" + secrets.token_hex(4)
    password = "pa?" + marker  # a `?` in the password
    stream_password = "pa?stream=" + marker  # the same, the tail looking like a parameter

    def check(url, label):
        seen, lines, note = leak_check(url, marker, label)
        notes.append(note)
        if seen:
            shown = lines[0].strip()[-140:] if lines else ""
            problems.append(f"{label}: the password showed in {seen}: `{shown}`")

    port = lib.free_port()
    redis_dir = os.path.join(work, "redis-11")
    os.makedirs(redis_dir, exist_ok=True)
    redis = lib.start_process(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", redis_dir,
                               "--save", "", "--appendonly", "no", "--requirepass", password],
                              os.path.join(redis_dir, "redis.log"))
    if wait_port(port):
        check(f"redis://:{password}@127.0.0.1:{port}/0", "redis://:pa?…@")
        check(f"redis://:{stream_password}@127.0.0.1:{port}/0", "redis://:pa?stream=…@")
    else:
        problems.append("private redis-server did not start")
    lib.stop(redis)

    nats_port = lib.free_port()
    nats_dir = os.path.join(work, "nats-11")
    os.makedirs(nats_dir, exist_ok=True)
    conf = os.path.join(nats_dir, "nats.conf")
    with open(conf, "w") as f:
        f.write(f'listen: "127.0.0.1:{nats_port}"\njetstream {{ store_dir: "{nats_dir}" }}\n'
                f'authorization {{ users = [ {{ user: "u", password: "{password}" }}, '
                f'{{ user: "v", password: "{stream_password}" }} ] }}\n')
    nats = lib.start_process(["nats-server", "-c", conf], os.path.join(nats_dir, "nats.log"))
    if wait_port(nats_port):
        check(f"nats://u:{password}@127.0.0.1:{nats_port}", "nats://u:pa?…@")
        check(f"nats://v:{stream_password}@127.0.0.1:{nats_port}", "nats://v:pa?stream=…@")
    else:
        problems.append("private nats-server did not start")
    lib.stop(nats)

    lib.verdict(11, not problems, "; ".join(problems + notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
