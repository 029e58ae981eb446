#!/usr/bin/env python3
"""Read the kernel lab's results (the guest's init: send.sh).

    transport.py --disk IMAGE OUTDIR    the results disk (lab_send_disk)
    transport.py LOG OUTDIR             the console stream (lab_send_console)

The disk: a header "RTSCOPE-LAB-RESULTS 1 SIZE SHA256 NFILES", NFILES manifest
lines "SIZE SHA256 PATH" and "RTSCOPE-LAB-END", then at 256 KiB the gzipped
tar of SIZE bytes. Every file of the archive that matches its manifest line is
written; any other is named lost.

The stream, one line each: "@@LAB-DATA-BEGIN 2 N@@"; a manifest line per file
"@@LAB-M I SIZE SHA256 PATH"; the file's gzip in base64, in chunk lines
"@@LAB-C I K MD5[:8] DATA"; "@@LAB-E I SIZE SHA256 NCHUNKS PATH" after each
file; "@@LAB-DATA-END N@@". Kernel messages may sit between lines or inside
one (a printk lands mid-line on the serial console): "[ seconds] text" is cut
out wherever it is, and a chunk line whose checksum still fails is joined with
the next all-base64 line. Every file whose data is complete and whose SHA-256
matches is written; the others are listed on stderr, one line each.
Exit status: 0 every file came back, 3 some were lost (one line each on
stderr), 1 no results at all.
"""
import base64
import gzip
import hashlib
import io
import os
import re
import sys
import tarfile

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


DISK_DATA = 256 * 1024


def read_disk(image):
    """Returns (files, lost, total) as decode() does; total None: no results."""
    with open(image, "rb") as f:
        head = f.read(DISK_DATA)
        text = head.split(b"\0", 1)[0].decode("utf-8", "replace").split("\n")
        m = re.match(r"RTSCOPE-LAB-RESULTS 1 (\d+) ([0-9a-f]{64}) (\d+)$", text[0])
        if not m or "RTSCOPE-LAB-END" not in text:
            return {}, [], None
        size, sha, total = int(m.group(1)), m.group(2), int(m.group(3))
        manifest = []
        for line in text[1:text.index("RTSCOPE-LAB-END")]:
            msize, msha, path = line.split(" ", 2)
            manifest.append((int(msize), msha, path))
        data = f.read(size)
    got = {}
    why = None
    if len(data) != size or hashlib.sha256(data).hexdigest() != sha:
        why = "the archive on the disk does not match its size and SHA-256"
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for member in tar:
                if member.isfile():
                    got[os.path.normpath(member.name)] = tar.extractfile(member).read()
    except Exception as e:  # a damaged archive: the files read before it count
        why = why or "the archive on the disk is damaged (%s)" % e
    files, lost = {}, []
    for i, (msize, msha, path) in enumerate(manifest, 1):
        raw = got.get(os.path.normpath(path))
        if raw is None:
            lost.append((i, path, why or "not in the archive"))
        elif len(raw) != msize or hashlib.sha256(raw).hexdigest() != msha:
            lost.append((i, path, "its data does not match its size and SHA-256"))
        else:
            files[path] = raw
    return files, lost, total


def main():
    args = sys.argv[1:]
    disk = args[:1] == ["--disk"]
    if disk:
        args = args[1:]
    if len(args) != 2:
        print("usage: transport.py [--disk IMAGE | LOG] OUTDIR", file=sys.stderr)
        return 2
    if disk:
        files, lost, total = read_disk(args[0])
    else:
        with open(args[0], "rb") as f:
            text = f.read().decode("utf-8", "replace")
        files, lost, total = decode(text)
    if total is None and not files:
        return 1
    for path, raw in sorted(files.items()):
        rel = os.path.normpath(path)
        if os.path.isabs(rel) or rel.split(os.sep)[0] == "..":
            lost.append((0, path, "a path outside the results directory"))
            continue
        dest = os.path.join(args[1], rel)
        os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
        with open(dest, "wb") as f:
            f.write(raw)
    for i, path, why in lost:
        print("lost file %d%s: %s" % (i, " (%s)" % path if path else "", why), file=sys.stderr)
    return 3 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
