"""Item 14: a change's delivery latency through HAProxy (deploy/local/haproxy.cfg).

deploy/local/run-fleet.sh starts three replicas of the given binary on free ports, on a
private redis-server (its own port and temp dir, stopped by pid), with HAProxy in front. A
listen stream through HAProxy; 8 changes published one at a time on replica 1's admin port
(POST /admin/notify), 50 ms idle between them (what Nagle waits on is the client's delayed
ACK); the time from publishing to the notification read. Then the same straight to a
replica, for comparison, and through a second HAProxy running a copy of the file without
`option http-no-delay` (the control: the measurement must see the old delay there). Was:
~220 ms each through HAProxy. Safe: a few ms (the repository's own test allows at most 100 ms
median on a loaded 2-core machine).
"""

import json
import os
import random
import socket
import statistics
import sys
import time

import lib

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHANGES = 8
LIMIT_MS = 100


def port_free(port):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_run(count):
    """A base port with `count` free ports from it."""
    for _ in range(200):
        base = random.randint(20000, 40000)
        if all(port_free(base + i) for i in range(count)):
            return base
    raise RuntimeError("no free port range")


def private_redis(work):
    port = lib.free_port()
    proc = lib.start_process(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", work,
                              "--save", "", "--appendonly", "no"], os.path.join(work, "redis.log"))
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return proc, port
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("private redis-server did not answer")


def listen(port):
    body = json.dumps(lib.request_2026("lat-listen", "subscriptions/listen",
                                       {"notifications": {"toolsListChanged": True}})).encode()
    stream = lib.SseStream("127.0.0.1", port, "POST", lib.headers_2026("subscriptions/listen"), body)
    ack = stream.next_event(timeout=5)
    if stream.status != 200 or not ack or "acknowledged" not in ack[1]:
        raise RuntimeError(f"listen on {port}: {stream.status} {ack!r}")
    return stream


def measure(stream, admin_port):
    took = []
    for _ in range(CHANGES):
        start = time.perf_counter()
        status, _, _ = lib.http_request("127.0.0.1", admin_port, "POST", "/admin/notify", b'{"kind":"tools"}',
                                        {"Content-Type": "application/json"})
        if status != 200:
            raise RuntimeError(f"/admin/notify answered {status}")
        event = stream.next_event(timeout=5)
        if not event or "tools/list_changed" not in event[1]:
            raise RuntimeError(f"no notification: {event!r}")
        took.append((time.perf_counter() - start) * 1000)
        time.sleep(0.05)
    return took


def control_without_no_delay(work, mcp, admin):
    """The same measurement through a second HAProxy whose copy of the file lacks
    `option http-no-delay` (the fix), to show the method sees the ~220 ms when it is there."""
    with open(os.path.join(ROOT, "deploy/local/haproxy.cfg")) as f:
        cfg = f.read()
    if "option http-no-delay" not in cfg:
        return None
    path = os.path.join(work, "haproxy-without-no-delay.cfg")
    with open(path, "w") as f:
        f.write(cfg.replace("option http-no-delay", "# option http-no-delay (removed: the control)"))
    port = free_run(1)
    env = dict(os.environ, LB_BIND=f"127.0.0.1:{port}", NODE1=f"127.0.0.1:{mcp}", NODE2=f"127.0.0.1:{mcp + 1}",
               NODE3=f"127.0.0.1:{mcp + 2}", ADMIN1_PORT=str(admin), ADMIN2_PORT=str(admin + 1),
               ADMIN3_PORT=str(admin + 2))
    proxy = lib.start_process(["haproxy", "-f", path], os.path.join(work, "haproxy-control.log"), env)
    try:
        deadline = time.time() + 15
        while True:
            try:
                stream = listen(port)
                break
            except (OSError, RuntimeError):
                if time.time() > deadline:
                    return None
                time.sleep(0.2)
        took = measure(stream, admin)
        stream.close()
        return took
    finally:
        lib.stop(proxy)


def main():
    bin_path = lib.binary()
    work = lib.workdir()
    if not any(os.access(os.path.join(d, "haproxy"), os.X_OK) for d in os.environ.get("PATH", "").split(":")
               + ["/usr/sbin", "/usr/local/sbin"]):
        lib.verdict(14, False, "haproxy is not installed: nothing measured (apt-get install haproxy)")
        return 1
    os.environ["PATH"] += ":/usr/sbin:/usr/local/sbin"
    redis, redis_port = private_redis(work)
    mcp, admin, lb = free_run(3), free_run(3), free_run(1)
    fleet_dir = os.path.join(work, "fleet")
    env = dict(os.environ, MCP_FLEET_BUS=f"redis://127.0.0.1:{redis_port}/0", FLEET_DIR=fleet_dir, RUST_LOG="warn")
    log = os.path.join(work, "run-fleet.log")
    fleet = lib.start_process([os.path.join(ROOT, "deploy/local/run-fleet.sh"), "--bin", bin_path,
                               "--mcp-port", str(mcp), "--admin-port", str(admin), "--lb-port", str(lb)], log, env)
    try:
        deadline = time.time() + 60
        while "load balancer (HAProxy" not in open(log).read():
            if fleet.poll() is not None or time.time() > deadline:
                raise RuntimeError("run-fleet.sh did not come up:\n" + open(log).read()[-1500:])
            time.sleep(0.2)
        # HAProxy's first health checks: wait until it forwards.
        body = json.dumps(lib.request_2026(1, "server/discover", {})).encode()
        while True:
            try:
                status = lib.http_request("127.0.0.1", lb, "POST", "/mcp", body, lib.headers_2026("server/discover"),
                                          timeout=2)[0]
                if status == 200:
                    break
            except OSError:
                pass
            if time.time() > deadline:
                raise RuntimeError("HAProxy never forwarded")
            time.sleep(0.2)
        through = listen(lb)
        via_lb = measure(through, admin)
        through.close()
        direct_stream = listen(mcp + 1)
        direct = measure(direct_stream, admin)
        direct_stream.close()
        control = control_without_no_delay(work, mcp, admin)
    except RuntimeError as e:
        lib.verdict(14, False, f"not measured: {e}")
        return 1
    finally:
        children = lib.children(fleet.pid)  # the replicas and HAProxy run-fleet.sh started
        lib.stop(fleet, grace=40)  # its trap stops them (SIGTERM, drain)
        lib.kill_leftovers(children)
        lib.stop(redis)
    median_lb, median_direct = statistics.median(via_lb), statistics.median(direct)
    fmt = lambda xs: "/".join(f"{x:.1f}" for x in xs)  # noqa: E731
    what = (f"publish -> delivery through HAProxy (3 replicas, private Redis): median {median_lb:.1f} ms "
            f"(each: {fmt(via_lb)} ms); straight to replica 2: median {median_direct:.1f} ms "
            f"(each: {fmt(direct)} ms); limit {LIMIT_MS} ms; control, the same file without "
            f"`option http-no-delay`: "
            + (f"median {statistics.median(control):.1f} ms (each: {fmt(control)} ms)" if control else "not run"))
    lib.verdict(14, median_lb < LIMIT_MS, what)
    return 0


if __name__ == "__main__":
    sys.exit(main())
