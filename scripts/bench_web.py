"""Serving a model over HTTP: `use web`'s serve_model (dynamic batching) against the peer a user would
write by hand, a FastAPI endpoint on uvicorn that calls the same NumPy predict once per request
(a plain starlette endpoint when FastAPI is not installed). Each server runs in its own process on
loopback; a light asyncio HTTP/1.1 client (keep-alive connections, one row per request) drives it at
1, 8 and 64 concurrent clients for a few seconds each. Prints requests/s, p50/p99 latency and each
server's CPU time per request, and the ratios (issue 20's target: >= 3x the peer's throughput at 64
clients). On a machine shared with other work (or with the client on the same cores) throughput measures
the machine more than the servers; CPU per request says how many requests a core serves. Asserts
nothing.

    python scripts/bench_web.py [--seconds 3] [--clients 1,8,64] [--inputs 256] [--hidden 1024,1024]
                                [--workers 1] [--repeat 1]

--workers N runs both servers with N processes: serve_model(workers=N), and the peer as a user would
run it, `uvicorn peer:app --workers N`. The client's own CPU time per request is printed too: on a
machine with few cores the client competes with the server it measures.
"""

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = 10

PEER = textwrap.dedent("""
    import sys
    import numpy as np
    import uvicorn
    from apsi_layers.layers import mlp, predict

    import os

    port, hidden = int(os.environ["PEER_PORT"]), [int(h) for h in os.environ["PEER_HIDDEN"].split(",")]
    inputs, workers = int(os.environ["PEER_INPUTS"]), int(os.environ["PEER_WORKERS"])
    net = mlp(inputs, {OUT}, hidden=hidden)
    params = net.init(seed=0)
    try:
        from fastapi import FastAPI

        app = FastAPI()

        @app.post("/predict")
        def answer(body: dict):            # FastAPI runs a plain def in its thread pool
            return {{"outputs": predict(net, params, np.asarray(body["inputs"], dtype=float)).data.tolist()}}
    except ImportError:
        from starlette.applications import Starlette
        from starlette.concurrency import run_in_threadpool
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def answer(request):
            body = await request.json()
            x = np.asarray(body["inputs"], dtype=float)
            out = await run_in_threadpool(lambda: predict(net, params, x))
            return JSONResponse({{"outputs": out.data.tolist()}})

        app = Starlette(routes=[Route("/predict", answer, methods=["POST"])])
    if __name__ == "__main__":
        print("peer:", "fastapi" if "FastAPI" in globals() else "starlette", file=sys.stderr, flush=True)
        # (several workers: uvicorn's own supervisor, which imports the app by name)
        uvicorn.run("peer:app" if workers > 1 else app, host="127.0.0.1", port=port, log_level="warning",
                    access_log=False, workers=workers)
""").format(OUT=OUT)

APSI = textwrap.dedent("""
    use layers
    use web
    let net = mlp({IN}, {OUT}, hidden=[{hidden}])
    serve_model(net, net.init(seed=0), port={port}, log=false, max_wait_ms={wait}, workers={workers})
""")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited: {proc.stderr.read()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("the server did not start")


async def client(port, body, stop_at, latencies):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = (f"POST /predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    while time.perf_counter() < stop_at:
        start = time.perf_counter()
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length"))
        payload = await reader.readexactly(length)
        if not head.startswith(b"HTTP/1.1 200"):
            raise SystemExit(f"error answer: {head[:40]!r} {payload[:200]!r}")
        latencies.append(time.perf_counter() - start)
    writer.close()


async def load(port, clients, seconds, inputs, pid=None):
    body = json.dumps({"inputs": [[0.1 * i for i in range(inputs)]]}).encode()
    warm = []
    await asyncio.gather(*(client(port, body, time.perf_counter() + 0.5, warm) for _ in range(clients)))
    latencies = []
    cpu = cpu_seconds(pid) if pid else None
    mine = time.process_time()
    start = time.perf_counter()
    await asyncio.gather(*(client(port, body, start + seconds, latencies) for _ in range(clients)))
    elapsed = time.perf_counter() - start
    # the server's CPU time per request: what it spent, whatever else ran on the machine meanwhile
    per = (cpu_seconds(pid) - cpu) * 1000 / len(latencies) if cpu is not None else None
    client_ms = (time.process_time() - mine) * 1000 / len(latencies)
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000
    return len(latencies) / elapsed, pick(0.5), pick(0.99), per, client_ms


def cpu_seconds(pid):
    """User + system CPU time of a process, its threads and its child processes (the workers; Linux),
    or None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        total += sum(cpu_seconds(int(c)) or 0.0 for c in children)
    return total


def serve(kind, hidden, inputs, folder, wait=5, workers=1):
    port = free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    if kind == "apsi":
        source = APSI.format(IN=inputs, OUT=OUT, hidden=hidden, port=port, wait=wait, workers=workers)
        (folder / "serve.apsi").write_text(source)
        cmd = [sys.executable, "-m", "apsi", f"--allow-net=127.0.0.1:{port}", "serve.apsi"]
    else:
        (folder / "peer.py").write_text(PEER)
        cmd = [sys.executable, "peer.py"]
        env.update(PEER_PORT=str(port), PEER_HIDDEN=hidden, PEER_INPUTS=str(inputs),
                   PEER_WORKERS=str(workers))
        env["PYTHONPATH"] = os.pathsep.join([str(folder), env["PYTHONPATH"]])     # (workers import peer)
    proc = subprocess.Popen(cmd, cwd=folder, env=env, stderr=subprocess.PIPE, text=True)
    wait_ready(port, proc)
    return port, proc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--clients", default="1,8,64")
    ap.add_argument("--hidden", default="1024,1024")
    ap.add_argument("--inputs", type=int, default=256)
    ap.add_argument("--max-wait-ms", type=float, default=5)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1,
                    help="measure each point this many times, the two servers in turn, and show the runs "
                         "with the median ratio (a shared machine's load drifts: pairs taken together "
                         "see the same load)")
    a = ap.parse_args()
    counts = [int(c) for c in a.clients.split(",")]
    print(f"mlp({a.inputs}, {OUT}, hidden=[{a.hidden}]), one row per request, {a.seconds:g} s per point, "
          f"{a.workers} worker process(es) each, load average {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} CPUs")
    runs = {n: [] for n in counts}      # n -> [(apsi result, peer result)]
    with tempfile.TemporaryDirectory() as tmp:
        servers = {}
        try:
            for kind in ("apsi", "peer"):
                folder = Path(tmp) / kind
                folder.mkdir()
                servers[kind] = serve(kind, a.hidden, a.inputs, folder, a.max_wait_ms, a.workers)
            for n in counts:
                for _ in range(a.repeat):
                    pair = [asyncio.run(load(port, n, a.seconds, a.inputs, proc.pid))
                            for port, proc in (servers["apsi"], servers["peer"])]
                    runs[n].append(tuple(pair))
        finally:
            for _, proc in servers.values():
                proc.terminate()
                proc.wait(30)
    print(f"{'clients':>8} | {'apsi req/s':>10} {'p50 ms':>7} {'p99 ms':>7} {'cpu ms':>6} | "
          f"{'peer req/s':>10} {'p50 ms':>7} {'p99 ms':>7} {'cpu ms':>6} | ratio req/s, cpu")
    for n in counts:
        for (ra, a50, a99, ac, _), (rp, p50, p99, pc, _) in runs[n]:
            cpu = f"{pc / ac:.2f}x" if ac and pc else "-"
            print(f"{n:>8} | {ra:>10.0f} {a50:>7.1f} {a99:>7.1f} {ac or 0:>6.2f} | {rp:>10.0f} {p50:>7.1f} "
                  f"{p99:>7.1f} {pc or 0:>6.2f} | {ra / rp:.2f}x, {cpu}")
    if a.repeat > 1:
        print("median ratio of requests/s: " + ", ".join(
            f"{n} clients {statistics.median(x[0][0] / x[1][0] for x in runs[n]):.2f}x" for n in counts))
    print("cpu ms: the server's CPU time per request (all its threads and workers); on a shared machine the "
          "CPU ratio is the steadier measure of how many requests a core serves")
    print("the client's own CPU ms per request (apsi, peer), mean over runs: " + ", ".join(
        f"{n} clients {statistics.mean(x[0][4] for x in runs[n]):.2f}, "
        f"{statistics.mean(x[1][4] for x in runs[n]):.2f}" for n in counts))


if __name__ == "__main__":
    main()
