#!/usr/bin/env python3
"""Read the kernel lab's results (the guest's init: send.sh).

    transport.py --disk IMAGE OUTDIR    the results disk (lab_write_record)
    transport.py LOG OUTDIR             the console stream (lab_send_console)

The disk: records at 4 KiB-aligned offsets, the first at 0, each a header
"RTSCOPE-LAB-RECORD 2 RUN SEQ SIZE SHA256 NFILES STATE LABEL", NFILES lines
"SIZE SHA256 PATH" and "RTSCOPE-LAB-END HEADSHA" (the SHA-256 of the lines
before it), then SIZE bytes of gzipped tar; the next record starts at the next
4 KiB boundary. Records are read in order (SEQ 1, 2, ..., all of one RUN)
until one does not check out (none, or one half-written when the guest
stopped) or one has STATE "done" (the guest finished). A file sent again in a
later record comes back in its last form; a file that does not match its
line is lost unless a later record brings it. STATE "case": LABEL is the case
just finished; "start": the case about to start (what the suite wrote before
it). On stdout, one line: "complete: N files from M checkpoints", or
"incomplete: the guest stopped after case LABEL[, in case LABEL]; N files from
M checkpoints" (and where the reading stopped, when a record was damaged or
cut short).

The stream, one line each: "@@LAB-DATA-BEGIN 2 N@@"; a manifest line per file
"@@LAB-M I SIZE SHA256 PATH"; the file's gzip in base64, in chunk lines
"@@LAB-C I K MD5[:8] DATA"; "@@LAB-E I SIZE SHA256 NCHUNKS PATH" after each
file; "@@LAB-DATA-END N@@". Kernel messages may sit between lines or inside
one (a printk lands mid-line on the serial console): "[ seconds] text" is cut
out wherever it is, and a chunk line whose checksum still fails is joined with
the next all-base64 line. Every file whose data is complete and whose SHA-256
matches is written; the others are listed on stderr, one line each.
Exit status: 0 every file came back (and, from the disk, the run is complete),
3 some were lost (one line each on stderr) or the disk's run is incomplete,
1 no results at all.
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


ALIGN = 4096
HEAD_MAX = 16 << 20
RECORD = re.compile(r"RTSCOPE-LAB-RECORD 2 ([0-9a-f]+) (\d+) (\d+) ([0-9a-f]{64}) (\d+) (case|start|done) (\S+)$")


def read_record(f, off):
    """The record at offset off: (seq, run, state, label, manifest, tar bytes,
    end offset), or (None, why) where there is none that checks out."""
    f.seek(off)
    head = b""
    while True:
        end = head.find(b"\nRTSCOPE-LAB-END ")
        nl = head.find(b"\n", end + 1) if end >= 0 else -1
        if nl >= 0 or len(head) > HEAD_MAX:
            break
        more = f.read(65536)
        if not more:
            break
        head += more
    if not head.strip(b"\0"):
        return None, "none"
    m = RECORD.match(head.split(b"\n", 1)[0].decode("utf-8", "replace"))
    if not m:
        return None, "no record header"
    if nl < 0:
        return None, "its header is cut short"
    body = head[:end + 1]
    if head[end + 1:nl].decode("ascii", "replace") != "RTSCOPE-LAB-END " + hashlib.sha256(body).hexdigest():
        return None, "its header does not match its SHA-256"
    run, seq, size, sha, nfiles, state, label = m.groups()
    manifest = []
    for line in body.decode("utf-8", "replace").split("\n")[1:-1]:
        m = re.match(r"(\d+) ([0-9a-f]{64}) (.+)$", line)
        if not m:
            return None, "its header's file line '%s' does not read" % line[:80]
        manifest.append((int(m.group(1)), m.group(2), m.group(3)))
    if len(manifest) != int(nfiles):
        return None, "its header lists %d files, not %s" % (len(manifest), nfiles)
    f.seek(off + nl + 1)
    data = f.read(int(size))
    if len(data) != int(size) or hashlib.sha256(data).hexdigest() != sha:
        return None, "its data does not match its size and SHA-256 (cut short or damaged)"
    stop = off + nl + 1 + int(size)
    return (int(seq), run, state, label, manifest, data, (stop + ALIGN - 1) // ALIGN * ALIGN), None


def read_disk(image):
    """Every record of the results disk, in order until one does not check
    out (the rest is not read). Returns (files, lost, records, state) with
    state (complete, the last case that ended, the case that had started
    after it, why the reading stopped) or None where there is no record."""
    files, lost, records = {}, {}, 0
    complete, after, during, stop = False, None, None, None
    run = None
    with open(image, "rb") as f:
        off = 0
        while True:
            rec, why = read_record(f, off)
            if rec is not None and rec[0] != records + 1:
                rec, why = None, "record %d where %d was due" % (rec[0], records + 1)
            if rec is not None and run is not None and rec[1] != run:
                rec, why = None, "a record of another boot"
            if rec is None:
                if why != "none":
                    stop = "record %d: %s" % (records + 1, why)
                break
            seq, run, state, label, manifest, data, off = rec
            records += 1
            during = label if state == "start" else None
            after = label if state == "case" else after
            got = {}
            if manifest:
                try:
                    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
                        for member in tar:
                            if member.isfile():
                                got[os.path.normpath(member.name)] = tar.extractfile(member).read()
                except Exception as e:  # checked whole, yet unreadable: its files are lost
                    stop = "record %d: its archive does not read (%s)" % (seq, e)
            # The last copy of a file wins; one that does not match its
            # manifest line is lost unless a later record brings it.
            for msize, msha, path in manifest:
                raw = got.get(os.path.normpath(path))
                if raw is None:
                    lost[path] = "not in the archive of record %d" % seq
                elif len(raw) != msize or hashlib.sha256(raw).hexdigest() != msha:
                    lost[path] = "its data in record %d does not match its size and SHA-256" % seq
                else:
                    files[path] = raw
                    lost.pop(path, None)
            if state == "done":
                complete = True
                break
    if records == 0:
        return {}, [], 0, None
    lost = [(i, path, why) for i, (path, why) in enumerate(sorted(lost.items()), 1)]
    return files, lost, records, (complete, after, during, stop)


def main():
    args = sys.argv[1:]
    disk = args[:1] == ["--disk"]
    if disk:
        args = args[1:]
    if len(args) != 2:
        print("usage: transport.py [--disk IMAGE | LOG] OUTDIR", file=sys.stderr)
        return 2
    state = None
    if disk:
        files, lost, records, state = read_disk(args[0])
        if state is None:
            return 1
    else:
        with open(args[0], "rb") as f:
            text = f.read().decode("utf-8", "replace")
        files, lost, total = decode(text)
        if total is None and not files:
            return 1
    written = 0
    for path, raw in sorted(files.items()):
        rel = os.path.normpath(path)
        if os.path.isabs(rel) or rel.split(os.sep)[0] == "..":
            lost.append((0, path, "a path outside the results directory"))
            continue
        dest = os.path.join(args[1], rel)
        os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
        with open(dest, "wb") as f:
            f.write(raw)
        written += 1
    for i, path, why in lost:
        print("lost file %d%s: %s" % (i, " (%s)" % path if path else "", why), file=sys.stderr)
    if state is not None:
        complete, after, during, stop = state
        got = "%d files from %d checkpoint%s" % (written, records, "" if records == 1 else "s")
        if complete:
            print("complete: %s" % got)
        else:
            print("incomplete: the guest stopped %s%s; %s%s"
                  % ("after case %s" % after if after else "before the first case ended",
                     ", in case %s" % during if during else "", got,
                     "; the reading stopped at %s" % stop if stop else ""))
        if not complete:
            return 3
    return 3 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
