#!/usr/bin/env python3
"""Floods the lab guest's NIC with Ethernet frames, on loopback only.

The guest's virtio-net NIC (lab --nic) is a qemu `-netdev socket` in UDP
mode: each UDP datagram qemu receives on 127.0.0.1:QEMU_PORT is one Ethernet
frame handed to the guest. This sends frames addressed to the guest's MAC
with the IEEE local experimental EtherType 0x88b5: the guest's driver takes
each one (interrupt, NAPI poll in the NET_RX softirq) and the network stack
drops it, unknown; nothing is answered, and nothing leaves the host.

    flood.py QEMU_PORT PEER_PORT MAC BURSTS MS EVERY_MS DELAY_MS [LABEL]

After DELAY_MS, BURSTS bursts of MS ms each, one starting every EVERY_MS, at
RTSCOPE_LAB_FLOOD_FPS frames a second (default 80,000: more than an emulated
guest's receive path takes, about 50,000 a second on the 6.1 RT x86-64 guest
under TCG, so that its interrupt thread and NET_RX polls run flat out). A line per burst on stdout: "flood START
MSms LABEL frames=N" (START: the host's time, seconds since the epoch).
"""
import os
import socket
import sys
import time

BATCH = 32


def main(argv):
    if len(argv) not in (8, 9):
        print(__doc__.strip().splitlines()[-6], file=sys.stderr)
        return 2
    qport, peer = int(argv[1]), int(argv[2])
    mac = bytes.fromhex(argv[3].replace(":", ""))
    bursts, ms, every, delay = (int(v) for v in argv[4:8])
    label = argv[8] if len(argv) == 9 else ""
    if len(mac) != 6 or not 0 < bursts <= 20 or not 0 < ms <= 60000:
        print("flood.py: bad MAC, BURSTS (1-20) or MS (1-60000)", file=sys.stderr)
        return 2
    # Destination: the guest; source: a locally administered address;
    # EtherType 0x88b5; a minimal payload (60 bytes in all).
    frame = mac + bytes.fromhex("020000000001") + b"\x88\xb5" + b"rtscope-flood".ljust(46, b"\0")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    # Bound to the port qemu sends the guest's frames to, so that they are
    # received (and dropped) here, not answered with ICMP.
    s.bind(("127.0.0.1", peer))
    s.setblocking(False)
    dest = ("127.0.0.1", qport)
    fps = int(os.environ.get("RTSCOPE_LAB_FLOOD_FPS", "80000"))
    if not 0 < fps <= 10_000_000:
        print("flood.py: RTSCOPE_LAB_FLOOD_FPS must be 1 to 10000000", file=sys.stderr)
        return 2
    time.sleep(delay / 1000)
    for i in range(bursts):
        start = time.time()
        t0 = time.monotonic()
        end = t0 + ms / 1000
        frames = 0
        while (now := time.monotonic()) < end:
            # Paced: the frames due by now, in batches of BATCH.
            due = min(int((now - t0) * fps) + BATCH, int(ms / 1000 * fps))
            if frames >= due:
                time.sleep(BATCH / fps)
                continue
            for _ in range(due - frames):
                try:
                    s.sendto(frame, dest)
                    frames += 1
                except BlockingIOError:
                    time.sleep(0.0001)
                    break
                except ConnectionRefusedError:
                    # qemu's socket is gone (the guest ended).
                    return 0
        print(f"flood {start:.6f} {ms}ms {label} frames={frames}".rstrip(), flush=True)
        if i + 1 < bursts:
            time.sleep(max(0.0, (t0 + every / 1000) - time.monotonic()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
