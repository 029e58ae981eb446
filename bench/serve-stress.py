#!/usr/bin/env python3
"""`rtscope serve` under a hostile load: its memory (RSS) and the time
of `GET /` while

  1. DIR holds DOCS result documents of about 2.2 MB each, a 2 GiB sparse
     `.json` file and a non-result JSON file;
  2. 500 clients ask for `/raw/NAME.json` (2.2 MB) and never read;
  3. 100 bursts of 30 requests (`/` and `/run/NAME.json`) whose sockets
     close at once, without reading;
  4. requests with DNS-rebinding Host headers (answered 421?).

    bench/serve-stress.py [DOCS]          # default 200 documents

The binary is $RTSCOPE, else target/release/rtscope, else target/debug/
rtscope. Loopback only (127.0.0.1, a free port); every phase is bounded in
count and time (about a minute in all on a 2-CPU VM), the server is stopped
and the temporary directory removed on every way out. Prints one line per
figure: peak RSS (VmHWM, the whole life of the server, indexing included),
RSS sampled every 50 ms during the load, the slowest `GET /` of each phase,
the CPU time the bursts cost, and the Host check's answers.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

DOCS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
NON_READERS = 500
BURSTS, PER_BURST = 100, 30
DEADLINE = time.monotonic() + 600  # nothing below waits past this

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
rtscope = os.environ.get("RTSCOPE") or next(
    (p for p in (os.path.join(root, "target/release/rtscope"),
                 os.path.join(root, "target/debug/rtscope")) if os.access(p, os.X_OK)),
    None)
if not rtscope:
    sys.exit("serve-stress: no rtscope binary (build it, or set RTSCOPE)")


def status(pid, key):
    """A field of /proc/PID/status in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def cpu_s(pid):
    """utime + stime of the process, seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def request(port, path, host="localhost", read=True, timeout=10):
    """(status, seconds) of one GET, its answer read to the end."""
    t0 = time.monotonic()
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        if not read:
            return None, 0.0
        buf = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            buf += b
        code = int(buf.split(b" ", 2)[1]) if buf.startswith(b"HTTP/") else 0
        return code, time.monotonic() - t0
    finally:
        s.close()


def main(tmp):
    d = os.path.join(tmp, "results")
    os.mkdir(d)
    # One real result document, padded to about 2.2 MB, copied DOCS times.
    first = os.path.join(tmp, "one.json")
    subprocess.run([rtscope, "cyclic", "--no-rt", "-t", "1", "-l", "2000", "-q",
                    "--json", first], check=True, timeout=60)
    with open(first) as f:
        doc = json.load(f)
    doc["series"][0]["attributes"]["padding"] = "x" * 2_200_000
    text = json.dumps(doc)
    for i in range(DOCS):
        with open(os.path.join(d, f"run-{i:03}.json"), "w") as f:
            f.write(text)
    with open(os.path.join(d, "big.json"), "wb") as f:
        f.write(b'{"schema_version": 3, "pad": "')
        f.truncate(2 << 30)
    with open(os.path.join(d, "notes.json"), "w") as f:
        f.write('{"note": "secret-token=hunter2"}')
    print(f"DIR: {DOCS} documents of {len(text) / 1e6:.1f} MB, a 2 GiB sparse .json, a non-result .json")

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    srv = subprocess.Popen([rtscope, "serve", "--listen", f"127.0.0.1:{port}", d],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        srv.stdout.readline()  # "serving the results in ..." (after the index)
        print(f"started and indexed in {time.monotonic() - t0:.1f} s")
        run(srv.pid, port)
    finally:
        srv.send_signal(signal.SIGINT)
        try:
            srv.wait(timeout=10)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()


def run(pid, port):
    peak = [0]
    sampling = [True]

    def sample():
        while sampling[0]:
            try:
                peak[0] = max(peak[0], status(pid, "VmRSS"))
            except OSError:
                return
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    worst = {}

    def index(phase):
        code, t = request(port, "/")
        assert code == 200, f"GET / answered {code}"
        worst[phase] = max(worst.get(phase, 0.0), t)

    index("idle")
    print(f"RSS once indexed, idle: {status(pid, 'VmRSS') / 1024:.1f} MiB")
    code, _ = request(port, "/raw/notes.json")
    print(f"/raw/notes.json (not a result): {code}")
    code, _ = request(port, "/raw/big.json")
    print(f"/raw/big.json (2 GiB): {code}")

    # 500 clients that ask for 2.2 MB and never read (a small receive buffer,
    # so the server's answer stalls at once).
    held = []
    for i in range(NON_READERS):
        if time.monotonic() > DEADLINE:
            break
        try:
            c = socket.socket()
            c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            c.settimeout(5)
            c.connect(("127.0.0.1", port))
            c.sendall(f"GET /raw/run-{i % DOCS:03}.json HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
            held.append(c)
        except OSError as e:
            print(f"non-reader {i}: {e}")
            break
        if i % 50 == 49:
            index("500 non-readers")
    time.sleep(1)
    for _ in range(5):
        index("500 non-readers")
    print(f"non-reading clients: {len(held)} sent their request")

    # 100 bursts of 30 requests closed at once.
    c0 = cpu_s(pid)
    for b in range(BURSTS):
        if time.monotonic() > DEADLINE:
            break
        socks = []
        for i in range(PER_BURST):
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                path = "/" if i % 3 else f"/run/run-{(b * PER_BURST + i) % DOCS:03}.json"
                s.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
                socks.append(s)
            except OSError:
                pass
        for s in socks:
            s.close()
        index("bursts")
    burst_cpu = cpu_s(pid) - c0
    for c in held:
        c.close()
    time.sleep(1)
    c1 = cpu_s(pid)
    time.sleep(2)
    idle_cpu = cpu_s(pid) - c1
    index("after")

    # DNS rebinding: the attacker's names as Host.
    refused = [request(port, "/", host=h)[0]
               for h in ("evil.example", f"evil.example:{port}", "rebind.attacker.test")]
    allowed = [request(port, "/", host=h)[0]
               for h in ("localhost", f"127.0.0.1:{port}", f"[::1]:{port}")]
    sampling[0] = False
    sampler.join()
    with open("/proc/loadavg") as f:
        print(f"load average of the machine: {' '.join(f.read().split()[:3])}")

    print(f"peak RSS (VmHWM, whole life): {status(pid, 'VmHWM') / 1024:.1f} MiB")
    print(f"peak RSS sampled during the load: {peak[0] / 1024:.1f} MiB")
    for phase, t in worst.items():
        print(f"slowest GET / ({phase}): {t * 1000:.0f} ms")
    print(f"CPU of {BURSTS} bursts of {PER_BURST} closed requests: {burst_cpu:.2f} s")
    print(f"CPU in the 2 s after the load: {idle_cpu:.2f} s")
    print(f"DNS-rebinding Host headers: {refused} (421 = refused); loopback: {allowed}")


tmp = tempfile.mkdtemp(prefix="rtscope-serve-stress-")
try:
    main(tmp)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
