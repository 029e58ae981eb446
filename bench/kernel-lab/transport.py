#!/usr/bin/env python3
"""Decode the kernel lab's console results (the guest's init, lab_send_console).

    transport.py LOG OUTDIR

The stream, one line each: "@@LAB-DATA-BEGIN 2 N@@"; a manifest line per file
"@@LAB-M I SIZE SHA256 PATH"; the file's gzip in base64, in chunk lines
"@@LAB-C I K MD5[:8] DATA"; "@@LAB-E I SIZE SHA256 NCHUNKS PATH" after each
file; "@@LAB-DATA-END N@@". Kernel messages may sit between lines or inside
one (a printk lands mid-line on the serial console): "[ seconds] text" is cut
out wherever it is, and a chunk line whose checksum still fails is joined with
the next all-base64 line. Every file whose data is complete and whose SHA-256
matches is written; the others are listed on stderr, one line each.
Exit status: 0 every file came back, 3 some were lost, 1 no stream at all.
"""
import base64
import gzip
import hashlib
import os
import re
import sys

KMSG = re.compile(r"\[ *\d+\.\d+\] [^\n]*\n")
B64 = re.compile(r"^[A-Za-z0-9+/=]*$")


def chunk_ok(data, md5):
    return hashlib.md5(data.encode()).hexdigest()[:8] == md5


def decode(text):
    """Returns (files {path: bytes}, lost [(index, path or None, why)], total or None)."""
    text = text.replace("\r", "")
    text = KMSG.sub("", text)
    lines = text.split("\n")
    total = None
    meta = {}
    chunks = {}
    nchunks = {}
    for n, line in enumerate(lines):
        m = re.search(r"@@LAB-DATA-(BEGIN 2|END) (\d+)@@", line)
        if m:
            total = int(m.group(2))
            continue
        m = re.search(r"@@LAB-([ME]) (\d+) (\d+) ([0-9a-f]{64}) (?:(\d+) )?([A-Za-z0-9._/+-]+)$", line)
        if m:
            i = int(m.group(2))
            meta.setdefault(i, (int(m.group(3)), m.group(4), m.group(6)))
            if m.group(5):
                nchunks[i] = int(m.group(5))
            continue
        m = re.search(r"@@LAB-C (\d+) (\d+) ([0-9a-f]{8}) (\S*)", line)
        if not m:
            continue
        i, k, md5, data = int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)
        if not chunk_ok(data, md5):
            # Cut by a message without a timestamp: the data's base64 head,
            # then the next lines made of base64 alone, until the sum holds.
            head = re.match(r"[A-Za-z0-9+/=]*", line[m.start(4):]).group(0)
            joined = None
            for nxt in lines[n + 1:n + 6]:
                if "@@LAB" in nxt:
                    break
                if nxt and B64.match(nxt):
                    # The message may begin with base64 letters ("irq 4"):
                    # every cut of the head is tried.
                    for cut in range(len(head), -1, -1):
                        if chunk_ok(head[:cut] + nxt, md5):
                            joined = head[:cut] + nxt
                            break
                    if joined is not None:
                        break
            if joined is None:
                continue
            data = joined
        chunks.setdefault(i, {})[k] = data
    files, lost = {}, []
    indexes = set(meta) | set(chunks)
    if total is not None:
        indexes |= set(range(1, total + 1))
    for i in sorted(indexes):
        if i not in meta:
            lost.append((i, None, "its name and size never arrived"))
            continue
        size, sha, path = meta[i]
        got = chunks.get(i, {})
        want = nchunks.get(i)
        if want is not None and len(got) != want:
            lost.append((i, path, "%d of %d chunks arrived whole" % (len(got), want)))
            continue
        try:
            raw = gzip.decompress(base64.b64decode("".join(got[k] for k in sorted(got))))
        except Exception:
            lost.append((i, path, "%d chunks arrived, not all of them" % len(got)))
            continue
        if len(raw) != size or hashlib.sha256(raw).hexdigest() != sha:
            lost.append((i, path, "its data does not match its size and SHA-256"))
            continue
        files[path] = raw
    return files, lost, total


def main():
    if len(sys.argv) != 3:
        print("usage: transport.py LOG OUTDIR", file=sys.stderr)
        return 2
    with open(sys.argv[1], "rb") as f:
        text = f.read().decode("utf-8", "replace")
    files, lost, total = decode(text)
    if total is None and not files:
        return 1
    for path, raw in files.items():
        dest = os.path.join(sys.argv[2], os.path.normpath(path).lstrip("./"))
        os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
        with open(dest, "wb") as f:
            f.write(raw)
    for i, path, why in lost:
        print("lost file %d%s: %s" % (i, " (%s)" % path if path else "", why), file=sys.stderr)
    return 3 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
