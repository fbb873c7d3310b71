"""Serving a model over HTTP: `use web`'s serve_model against what a user would otherwise write, driven
by wrk. Asserts nothing; prints what it measured.

The references, each server in its own process, serving the same model with the same NumPy predict
(apsi_layers.layers.predict, OPENBLAS_NUM_THREADS=1 unless set):
- fastapi: a hand-written FastAPI endpoint on uvicorn (a plain `def`, which FastAPI runs in its thread
  pool), one predict per request; `uvicorn.run("peer:app", workers=N)` for N workers;
- litserve: a LitServe API with dynamic batching (max_batch_size and batch_timeout as serve_model's
  max_batch and max_wait_ms; LitServe counts requests where serve_model counts rows, so its batches may
  hold more rows), workers_per_device=N inference processes and num_api_servers=N HTTP processes (with
  one worker LitServe runs two processes: it can use two cores where serve_model uses one).
Neither is a dependency of Apsi. Install them where the bench runs (`pip install fastapi litserve`, and
Debian's `apt-get install wrk`); a reference that is missing is skipped and said so.

For each number of workers, the servers start once; then for each point (rows per request, clients:
wrk's connections) each server is measured in turn, --repeat times (three pairs per point by default:
the servers see the same load drift), the others frozen meanwhile (SIGSTOP: an idle LitServe polls).
Every server's answer is checked against the others' before measuring. Prints requests/s, p50/p99
latency, non-2xx answers, each server's CPU ms per request (all its threads and processes), each ratio
per pair and its range, and the CPU model and load average.

    python scripts/bench_web.py [--seconds 3] [--rows 1,32] [--clients 1,16,64,256] [--workers 1,2]
                                [--repeat 3] [--inputs 64] [--hidden 256,256] [--only apsi,fastapi,litserve]
"""

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = 10
KINDS = ("apsi", "fastapi", "litserve")

APSI = """use layers
use web
let net = mlp({inputs}, {out}, hidden=[{hidden}])
serve_model(net, net.init(seed=0), port={port}, log=false, max_batch={batch}, max_wait_ms={wait},
            workers={workers})
"""

COMMON = textwrap.dedent("""
    import os
    import numpy as np
    from apsi_layers.layers import mlp, predict

    PORT, WORKERS = int(os.environ["PEER_PORT"]), int(os.environ["PEER_WORKERS"])
    HIDDEN = [int(h) for h in os.environ["PEER_HIDDEN"].split(",")]
    NET = mlp(int(os.environ["PEER_INPUTS"]), {out}, hidden=HIDDEN)
    PARAMS = NET.init(seed=0)
""").format(out=OUT)

FASTAPI = COMMON + textwrap.dedent("""
    import uvicorn
    from fastapi import FastAPI

    app = FastAPI()


    @app.post("/predict")
    def answer(body: dict):                 # (a plain def: FastAPI runs it in its thread pool)
        return {"outputs": predict(NET, PARAMS, np.asarray(body["inputs"], dtype=float)).data.tolist()}


    if __name__ == "__main__":
        uvicorn.run("peer:app" if WORKERS > 1 else app, host="127.0.0.1", port=PORT, workers=WORKERS,
                    log_level="warning", access_log=False)
""")

LITSERVE = COMMON + textwrap.dedent("""
    import litserve as ls


    class API(ls.LitAPI):
        def setup(self, device):
            pass

        def decode_request(self, request):
            return np.asarray(request["inputs"], dtype=float)

        def batch(self, inputs):            # (requests of several rows: their rows, and how many each)
            return np.concatenate(inputs), [len(x) for x in inputs]

        def predict(self, x):
            if isinstance(x, tuple):
                rows, counts = x
                return predict(NET, PARAMS, rows).data, counts
            return predict(NET, PARAMS, x).data

        def unbatch(self, output):
            out, counts = output
            return np.split(out, np.cumsum(counts)[:-1])

        def encode_response(self, output):
            return {"outputs": output.tolist()}


    if __name__ == "__main__":
        wait = float(os.environ["PEER_WAIT"]) / 1000
        api = API(max_batch_size=int(os.environ["PEER_BATCH"]), batch_timeout=wait)
        server = ls.LitServer(api, accelerator="cpu", workers_per_device=WORKERS)
        server.run(host="127.0.0.1", port=PORT, num_api_servers=WORKERS, generate_client_file=False,
                   log_level="warning")
""")

LUA = """wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open(os.getenv("BENCH_BODY"), "rb")
wrk.body = f:read("*a")
f:close()
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def available(kind):
    """None when the reference can run here, else why not."""
    if kind == "apsi":
        return None
    try:
        __import__(kind)
    except ImportError:
        return f"{kind} is not installed (pip install {kind})"
    return None


def start(kind, folder, port, workers, a, env):
    folder.mkdir(parents=True, exist_ok=True)
    if kind == "apsi":
        source = APSI.format(inputs=a.inputs, out=OUT, hidden=a.hidden, port=port, batch=a.max_batch,
                             wait=a.max_wait_ms, workers=workers)
        (folder / "serve.apsi").write_text(source)
        cmd = [sys.executable, "-m", "apsi", f"--allow-net=127.0.0.1:{port}", "serve.apsi"]
    else:
        (folder / "peer.py").write_text(FASTAPI if kind == "fastapi" else LITSERVE)
        cmd = [sys.executable, "peer.py"]
    env = dict(env, PEER_PORT=str(port), PEER_WORKERS=str(workers), PEER_INPUTS=str(a.inputs),
               PEER_HIDDEN=a.hidden, PEER_BATCH=str(a.max_batch), PEER_WAIT=str(a.max_wait_ms))
    env["PYTHONPATH"] = os.pathsep.join([str(folder), env["PYTHONPATH"]])       # (workers import peer)
    log = open(folder / "stderr.txt", "w")
    proc = subprocess.Popen(cmd, cwd=folder, env=env, stdout=log, stderr=log, start_new_session=True)
    return proc


def ask(port, body, timeout=120):
    """The outputs one POST gets; retried while the server is starting."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            req = urllib.request.Request(f"http://127.0.0.1:{port}/predict", data=body,
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as r:
                return json.loads(r.read())["outputs"]
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def only(proc, procs):
    """Freeze every server but `proc` (SIGSTOP to its process group), and let `proc` go on: an idle
    server is not idle everywhere (LitServe's processes poll their queues, ~15% of a CPU with 2 workers),
    and on a loaded machine that CPU came out of the measured server's share."""
    import signal

    for other in procs:
        os.killpg(other.pid, signal.SIGCONT if other is proc else signal.SIGSTOP)


def stop(proc):
    import signal

    try:
        os.killpg(proc.pid, signal.SIGCONT)         # (a frozen server cannot stop)
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def cpu_seconds(pid):
    """User + system CPU time of a process, its threads and all its descendants (Linux), or None."""
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


UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


def wrk(port, clients, seconds, body_file, pid):
    cmd = ["wrk", "-t1", f"-c{clients}", f"-d{seconds}s", "--latency", "--timeout", "10s", "-s",
           str(body_file.with_suffix(".lua")), f"http://127.0.0.1:{port}/predict"]
    before = cpu_seconds(pid)
    out = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, BENCH_BODY=str(body_file)),
                         timeout=seconds + 60).stdout
    used = cpu_seconds(pid) - before if before is not None else None
    rate, total = re.search(r"Requests/sec:\s+([\d.]+)", out), re.search(r"(\d+) requests in", out)
    if rate is None or total is None:           # (wrk failed: the run is shown as 0 and the bench goes on)
        print(f"  wrk did not measure: {out.strip()[-300:]!r}")
        return {"rate": 0.0, "p50": None, "p99": None, "bad": 0, "socket": "", "cpu": None}
    rate, total = float(rate.group(1)), int(total.group(1))
    found = re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
    lat = {q: float(v) * UNITS[u] for q, v, u in found}
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    return {"rate": rate, "p50": lat.get("50"), "p99": lat.get("99"), "bad": int(bad.group(1)) if bad else 0,
            "socket": errors.group(1) if errors else "",
            "cpu": used * 1000 / total if used and total else None}


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--rows", default="1,32")
    ap.add_argument("--clients", default="1,16,64,256")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--inputs", type=int, default=64)
    ap.add_argument("--hidden", default="256,256")
    ap.add_argument("--max-batch", type=int, default=64)
    ap.add_argument("--max-wait-ms", type=float, default=5)
    ap.add_argument("--only", default=",".join(KINDS))
    a = ap.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install wrk (Debian, Ubuntu) or brew install wrk")
    kinds = []
    for kind in a.only.split(","):
        why = available(kind)
        if why:
            print(f"skipping {kind}: {why}")
        else:
            kinds.append(kind)
    env = dict(os.environ)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    rows_list = [int(r) for r in a.rows.split(",")]
    print(f"CPU: {cpu_model()}, {os.cpu_count()} logical CPUs; load average {os.getloadavg()[0]:.2f} at "
          "the start")
    print(f"model mlp({a.inputs}, {OUT}, hidden=[{a.hidden}]), float64, OPENBLAS_NUM_THREADS="
          f"{env['OPENBLAS_NUM_THREADS']}; wrk -t1, {a.seconds} s per run, {a.repeat} runs per server per "
          f"point, the servers in turn; serve_model max_batch={a.max_batch} max_wait_ms={a.max_wait_ms:g}")
    results = {}            # (workers, rows, clients) -> {kind: [run, ...]}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(os.environ.get("BENCH_KEEP") or tmp)     # (BENCH_KEEP=dir keeps each server's stderr)
        rng = __import__("random").Random(0)
        bodies = {}
        for rows in rows_list:
            data = [[round(rng.uniform(-1, 1), 6) for _ in range(a.inputs)] for _ in range(rows)]
            path = tmp / f"body{rows}.json"
            path.write_bytes(json.dumps({"inputs": data}).encode())
            path.with_suffix(".lua").write_text(LUA)
            bodies[rows] = path
        for workers in [int(w) for w in a.workers.split(",")]:
            procs = {}
            try:
                for kind in kinds:
                    port = free_port()
                    procs[kind] = (port, start(kind, tmp / f"{kind}{workers}", port, workers, a, env))
                answers = {k: ask(port, bodies[rows_list[-1]].read_bytes()) for k, (port, _) in procs.items()}
                check(answers)
                for port, proc in procs.values():                   # (warm-up)
                    wrk(port, 16, 1, bodies[rows_list[0]], proc.pid)
                for rows in rows_list:
                    for clients in [int(c) for c in a.clients.split(",")]:
                        point = results.setdefault((workers, rows, clients), {k: [] for k in kinds})
                        for _ in range(a.repeat):
                            for kind, (port, proc) in procs.items():
                                only(proc, [p for _, p in procs.values()])
                                point[kind].append(wrk(port, clients, a.seconds, bodies[rows], proc.pid))
                        show(workers, rows, clients, point, kinds)
            finally:
                for _, proc in procs.values():
                    stop(proc)
    summary(results, kinds)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


def check(answers):
    import numpy as np

    kinds = list(answers)
    for k in kinds[1:]:
        if not np.allclose(answers[k], answers[kinds[0]], rtol=1e-9, atol=1e-12):
            raise SystemExit(f"{k} and {kinds[0]} answer differently: the comparison would not be fair")


def fmt(run):
    p50 = f"{run['p50']:.1f}" if run["p50"] is not None else "-"
    p99 = f"{run['p99']:.1f}" if run["p99"] is not None else "-"
    cpu = f"{run['cpu']:.2f}" if run["cpu"] is not None else "-"
    bad = f" !{run['bad']} non-2xx" if run["bad"] else ""
    return f"{run['rate']:>8.0f} {p50:>6} {p99:>6} {cpu:>5}{bad}"


def show(workers, rows, clients, point, kinds):
    head = " | ".join(f"{k + ' req/s':>14} {'p50':>6} {'p99':>6} {'cpu':>5}" for k in kinds)
    print(f"\nworkers={workers} rows={rows} clients={clients}   (latency ms; cpu: server CPU ms per request)")
    print(f"  {head}")
    for i in range(len(point[kinds[0]])):
        runs = [point[k][i] for k in kinds]
        ratios = ", ".join(f"{runs[0]['rate'] / r['rate']:.2f}x {k}" for k, r in zip(kinds[1:], runs[1:])
                           if r["rate"])
        print("  " + " | ".join(f"{'':>6}{fmt(r)}" for r in runs) + (f"   apsi: {ratios}" if ratios else ""))
    sys.stdout.flush()


def summary(results, kinds):
    if "apsi" not in kinds or len(kinds) < 2:
        return
    others = [k for k in kinds if k != "apsi"]
    print("\nratio of requests/s, apsi / reference, per pair: median [min-max]")
    print(f"{'workers':>7} {'rows':>4} {'clients':>7} | " + " | ".join(f"{k:>22}" for k in others))
    for (workers, rows, clients), point in results.items():
        cells = []
        for k in others:
            ratios = [a["rate"] / b["rate"] for a, b in zip(point["apsi"], point[k]) if b["rate"]]
            cells.append(f"{statistics.median(ratios):.2f}x [{min(ratios):.2f}-{max(ratios):.2f}]"
                         if ratios else "-")
        print(f"{workers:>7} {rows:>4} {clients:>7} | " + " | ".join(f"{c:>22}" for c in cells))
    targets(results, others)


def targets(results, others):
    """Issue 30's targets, judged on this run: by every pair, and by the median pair."""
    def ratios(point, k):
        return [a["rate"] / b["rate"] for a, b in zip(point["apsi"], point[k]) if b["rate"]]

    if "fastapi" in others:
        print("target >= 2x fastapi, 1 row, 16 and 64 clients:")
        for (workers, rows, clients), point in results.items():
            if rows == 1 and clients in (16, 64):
                r = ratios(point, "fastapi")
                verdict = "met by every pair" if min(r) >= 2 else "met by the median" if \
                    statistics.median(r) >= 2 else "NOT met"
                print(f"  workers={workers} clients={clients}: {verdict}")
    below = [(key, k, statistics.median(r), min(r)) for key, point in results.items() for k in others
             if (r := ratios(point, k)) and min(r) < 1]
    print("target never below a reference: " + ("met by every pair at every point" if not below else
                                                 f"NOT met by every pair at {len(below)} point(s):"))
    for (workers, rows, clients), k, med, low in below:
        print(f"  workers={workers} rows={rows} clients={clients} vs {k}: median {med:.2f}x, lowest pair "
              f"{low:.2f}x")


if __name__ == "__main__":
    main()
