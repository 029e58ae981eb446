#!/usr/bin/env python3
"""Whether a --listen endpoint still answers scrapes while hostile clients
pile up: IDLE connections that send nothing, SLOW clients sending their
request head a byte every 100 ms, and two 2 MB requests (a 2 MB head, a 2 MB
body); then one scrape of /metrics and one of /api/snapshot, timed.

    rtscope cyclic --no-rt -t 1 -D 60s -q --listen 127.0.0.1:9464 &
    bench/listen-hostile.py 127.0.0.1 9464 [IDLE] [SLOW]

Sends to the address given only (use a loopback address); every client
stops by itself within 10 s. Prints what it opened and each scrape's status
line and time (tests/fleet.rs checks the same in CI).
"""
import socket
import sys
import threading
import time

host, port = sys.argv[1], int(sys.argv[2])
n_idle = int(sys.argv[3]) if len(sys.argv) > 3 else 500
n_slow = int(sys.argv[4]) if len(sys.argv) > 4 else 20
addr = (host, port)

idle = []
for _ in range(n_idle):
    try:
        idle.append(socket.create_connection(addr, timeout=2))
    except OSError as e:
        print(f"connection {len(idle) + 1} failed: {e}")
        break
print(f"{len(idle)} idle connections open")


def slow_client():
    try:
        s = socket.create_connection(addr, timeout=2)
        t0 = time.time()
        for c in b"GET /metrics HTTP/1.1\r\nHost: slooooooooooooooooooooooooooooooow":
            if time.time() - t0 > 5:
                break
            s.sendall(bytes([c]))
            time.sleep(0.1)
    except OSError:
        pass


def big(req):
    try:
        s = socket.create_connection(addr, timeout=5)
        s.sendall(req)
    except OSError:
        pass


mb2 = 2 * 1024 * 1024
threads = [threading.Thread(target=slow_client) for _ in range(n_slow)]
threads.append(threading.Thread(target=big, args=(b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * mb2 + b"\r\n\r\n",)))
threads.append(threading.Thread(target=big, args=(f"POST /metrics HTTP/1.1\r\nContent-Length: {mb2}\r\n\r\n".encode() + b"b" * mb2,)))
for t in threads:
    t.daemon = True
    t.start()
print(f"{n_slow} slow clients and two 2 MB requests started")
time.sleep(0.3)


def scrape(path):
    t0 = time.time()
    try:
        s = socket.create_connection(addr, timeout=10)
        s.settimeout(10)
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
        status = data.split(b"\r\n")[0].decode() or "no answer"
    except OSError as e:
        status = f"{type(e).__name__}: {e}"
    return time.time() - t0, status


for p in ["/metrics", "/api/snapshot"]:
    dt, status = scrape(p)
    print(f"{p}: {status} in {dt:.3f} s")
for t in threads:
    t.join(timeout=10)
