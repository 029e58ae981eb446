#!/usr/bin/env python3
"""Send one QMP command to a qemu monitor socket, HZ times a second, until
killed or COUNT times.

The kernel lab uses it for GPIO edges on the arm64 virt machine: each
system_powerdown presses the power button, wired to line 3 of the PL061 GPIO
chip, which gives one rising and one falling edge on that line; and for NMIs
(inject-nmi) while the guest runs rtscope hwlat. With COUNT, the answers are
printed, one line each (an error says the machine has no such command).

    qmp.py SOCKET COMMAND HZ [COUNT]
    qmp.py SOCKET --hmp 'info registers -a'

With --hmp, one monitor command's text is printed (the lab asks for every
vCPU's registers before it stops a guest that ran past --timeout).
"""
import json
import signal
import socket
import sys
import time


def hmp(path, line):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.connect(path)
    f = sock.makefile("rw")
    json.loads(f.readline())  # the greeting
    for cmd in ({"execute": "qmp_capabilities"},
                {"execute": "human-monitor-command", "arguments": {"command-line": line}}):
        f.write(json.dumps(cmd) + "\n")
        f.flush()
        while True:
            answer = json.loads(f.readline())
            if "return" in answer or "error" in answer:
                break
    if "error" in answer:
        print("qmp: " + answer["error"].get("desc", "error"), file=sys.stderr)
        sys.exit(1)
    sys.stdout.write(answer["return"])


def main():
    if len(sys.argv) == 4 and sys.argv[2] == "--hmp":
        hmp(sys.argv[1], sys.argv[3])
        return
    path, command, hz = sys.argv[1], sys.argv[2], float(sys.argv[3])
    count = int(sys.argv[4]) if len(sys.argv) > 4 else None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    f = sock.makefile("rw")
    json.loads(f.readline())  # the greeting
    f.write(json.dumps({"execute": "qmp_capabilities"}) + "\n")
    f.flush()
    if count is not None:
        json.loads(f.readline())  # its answer
        for _ in range(count):
            f.write(json.dumps({"execute": command}) + "\n")
            f.flush()
            while True:
                answer = json.loads(f.readline())
                if "return" in answer or "error" in answer:
                    break
            print(json.dumps(answer.get("error", answer.get("return"))))
            time.sleep(1.0 / hz)
        return
    sent = 0
    next_at = time.monotonic()
    while True:
        f.write(json.dumps({"execute": command}) + "\n")
        f.flush()
        sent += 1
        # Answers and events are read and dropped; a closed monitor ends the loop.
        sock.settimeout(0)
        try:
            while sock.recv(65536):
                pass
        except (BlockingIOError, InterruptedError):
            pass
        sock.settimeout(None)
        next_at += 1.0 / hz
        time.sleep(max(0.0, next_at - time.monotonic()))


if __name__ == "__main__":
    try:
        main()
    except (BrokenPipeError, ConnectionError, KeyboardInterrupt, SystemExit):
        pass
