#!/usr/bin/env bash
# Offline test of the lab's results transport (send.sh's encoders, transport.py's
# decoders), seconds: on the console, kernel lines spliced into chunks (with
# and without a timestamp), between lines, and a stream cut in its last file;
# on the results disk, a run of checkpoints whole, cut in a record, with a
# damaged record and with a damaged header. Uses the
# guest's busybox when the lab's cache holds it, else the host's tools.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
mkdir -p "$t/in/sub" "$t/out" "$t/out2"
head -c 30000 /dev/urandom | base64 >"$t/in/a.json"
seq 1 20000 >"$t/in/b.txt"
echo 0 >"$t/in/sub/c.rc"
head -c 9000 /dev/urandom >"$t/in/z.bin"
sh=sh
bb=$(ls -d "${XDG_CACHE_HOME:-$HOME/.cache}"/rtscope-lab/unpacked/busybox-static_*_amd64/bin/busybox 2>/dev/null | head -n 1 || true)
if [ -n "$bb" ] && [ "$(uname -m)" = x86_64 ]; then
  mkdir -p "$t/bb"; "$bb" --install -s "$t/bb"; sh="$t/bb/sh"; export PATH="$t/bb:$PATH"
fi
"$sh" -c ". '$here/send.sh'; lab_send_console '$t/in'" >"$t/stream"
fail() { echo "test-transport: $*" >&2; exit 1; }
# 1. Kernel messages: one inside a chunk of a.json (timestamped), one inside a
# chunk of b.txt without a timestamp, one between lines.
python3 - "$t/stream" "$t/spliced" <<'PY'
import sys
s = open(sys.argv[1]).read().split("\n")
out = []
for line in s:
    if line.startswith("@@LAB-C 1 3 "):
        line = line[:300] + "[   12.345678] Disabling IRQ #4\r\n" + line[300:]
    elif line.startswith("@@LAB-C 2 2 "):
        line = line[:200] + "irq 4: nobody cared (try booting with the \"irqpoll\" option)\n" + line[200:]
    elif line.startswith("@@LAB-C 2 5 "):
        out.append("[   13.000001] random: crng init done")
    out.append(line.replace("\n", "\r\n"))
open(sys.argv[2], "w").write("\r\n".join(out))
PY
python3 "$here/transport.py" "$t/spliced" "$t/out" 2>"$t/err" || fail "spliced stream: status $? ($(cat "$t/err"))"
for f in a.json b.txt sub/c.rc z.bin; do cmp -s "$t/in/$f" "$t/out/$f" || fail "spliced stream: $f differs"; done
# 2. Cut inside z.bin's data (poweroff before the drain): the three before it
# come back, z.bin is named lost, status 3.
n=$(grep -n '^@@LAB-C 4 2 ' "$t/stream" | cut -d: -f1)
head -n "$((n - 1))" "$t/stream" >"$t/cut"; printf '@@LAB-C 4 2 abc' >>"$t/cut"
rc=0; python3 "$here/transport.py" "$t/cut" "$t/out2" 2>"$t/err" || rc=$?
[ "$rc" = 3 ] || fail "cut stream: status $rc, not 3"
grep -q '^lost file 4 (z.bin)' "$t/err" || fail "cut stream: z.bin not named lost ($(cat "$t/err"))"
[ "$(wc -l <"$t/err")" = 1 ] || fail "cut stream: more than z.bin lost ($(cat "$t/err"))"
for f in a.json b.txt sub/c.rc; do cmp -s "$t/in/$f" "$t/out2/$f" || fail "cut stream: $f differs"; done
[ ! -e "$t/out2/z.bin" ] || fail "cut stream: a partial z.bin was written"
# 3. A corrupted chunk nothing can mend: that file alone is lost.
sed 's/^\(@@LAB-C 2 7 ........ \)./\1!/' "$t/stream" >"$t/bad"
rc=0; python3 "$here/transport.py" "$t/bad" "$t/out" 2>"$t/err" || rc=$?
[ "$rc" = 3 ] && grep -q '^lost file 2 (b.txt)' "$t/err" || fail "corrupt chunk: status $rc, $(cat "$t/err")"
# 4. No stream: status 1.
rc=0; echo "reboot: Power down" >"$t/none"; python3 "$here/transport.py" "$t/none" "$t/out" 2>/dev/null || rc=$?
[ "$rc" = 1 ] || fail "no stream: status $rc, not 1"
# 5. The results disk, one record per checkpoint: a whole run comes back
# complete, a.json in the form of its last record; a disk cut in the middle
# of a record (the guest stopped) gives back every earlier record's files and
# says incomplete, after which case; a damaged record stops the reading there;
# no record, status 1. The records: 1 "one" a.json (first form) and b.txt; an
# unchanged directory (no record); 2 "two" a.json again; 3 the start of
# "three" with sub/c.rc (written between cases); 4 "three" z.bin; 5 done,
# nothing new.
truncate -s 8M "$t/disk.img"
mkdir -p "$t/run" "$t/tmp"
cp "$t/in/a.json" "$t/in/b.txt" "$t/run/"
echo "first form" >>"$t/run/a.json"; cp "$t/run/a.json" "$t/a.first"
lab_tmp="$t/tmp" "$sh" -c ". '$here/send.sh'
  lab_write_record '$t/run' '$t/disk.img' one >'$t/ckpt' &&
  lab_write_record '$t/run' '$t/disk.img' unchanged >>'$t/ckpt' &&
  cp '$t/in/a.json' '$t/run/a.json' &&
  lab_write_record '$t/run' '$t/disk.img' two >>'$t/ckpt' &&
  mkdir '$t/run/sub' && cp '$t/in/sub/c.rc' '$t/run/sub/' &&
  lab_write_record '$t/run' '$t/disk.img' three start >>'$t/ckpt' &&
  cp '$t/in/z.bin' '$t/run/' &&
  lab_write_record '$t/run' '$t/disk.img' three >>'$t/ckpt' &&
  lab_write_record '$t/run' '$t/disk.img' suite-end done >>'$t/ckpt'" || fail "lab_write_record failed"
[ "$(grep -c '^@@LAB checkpoint [0-9]' "$t/ckpt")" = 5 ] || fail "disk: not 5 checkpoints ($(cat "$t/ckpt"))"
grep -q '^@@LAB checkpoint - unchanged: nothing new, ' "$t/ckpt" || fail "disk: the unchanged directory not said ($(cat "$t/ckpt"))"
grep -q '^@@LAB checkpoint 2 two: 1 files' "$t/ckpt" || fail "disk: checkpoint 2 is not a.json alone ($(cat "$t/ckpt"))"
grep -q '^@@LAB checkpoint 5 suite-end: 0 files' "$t/ckpt" || fail "disk: the last checkpoint sent files again ($(cat "$t/ckpt"))"
# disk IMAGE OUTDIR: transport.py --disk's status, its stdout in $t/said, stderr in $t/err.
disk() { local rc=0; mkdir -p "$2"; python3 "$here/transport.py" --disk "$1" "$2" >"$t/said" 2>"$t/err" || rc=$?; echo "$rc"; }
rc=$(disk "$t/disk.img" "$t/out3")
[ "$rc" = 0 ] || fail "disk: status $rc ($(cat "$t/said" "$t/err"))"
[ "$(cat "$t/said")" = "complete: 4 files from 5 checkpoints" ] || fail "disk: said '$(cat "$t/said")'"
for f in a.json b.txt sub/c.rc z.bin; do cmp -s "$t/in/$f" "$t/out3/$f" || fail "disk: $f differs"; done
# record OFFSET of record N (its header's first byte).
record() {
  python3 -c 'import re, sys; m = re.search(rb"RTSCOPE-LAB-RECORD 2 [0-9a-f]+ %s " % sys.argv[2].encode(), open(sys.argv[1], "rb").read()); print(m.start() if m else "")' "$t/disk.img" "$1"
}
r2=$(record 2) r3=$(record 3) r4=$(record 4) r5=$(record 5)
for r in "$r2" "$r3" "$r4" "$r5"; do
  [ -n "$r" ] && [ $((r % 4096)) = 0 ] || fail "disk: records 2 to 5 not all at 4 KiB boundaries ($r2, $r3, $r4, $r5)"
done
# Cut in the middle of record 4 (z.bin's): nothing after it was written.
cp "$t/disk.img" "$t/cut.img"
truncate -s $(( (r4 + r5) / 2 )) "$t/cut.img"; truncate -s 8M "$t/cut.img"
rc=$(disk "$t/cut.img" "$t/out4")
[ "$rc" = 3 ] || fail "cut disk: status $rc, not 3 ($(cat "$t/said" "$t/err"))"
grep -q '^incomplete: the guest stopped after case two, in case three; 3 files from 3 checkpoints; the reading stopped at record 4: its data does not match' "$t/said" ||
  fail "cut disk: said '$(cat "$t/said")'"
for f in a.json b.txt sub/c.rc; do cmp -s "$t/in/$f" "$t/out4/$f" || fail "cut disk: $f differs"; done
[ ! -e "$t/out4/z.bin" ] || fail "cut disk: z.bin of the cut record was written"
# Cut before record 3 began: no sub/c.rc, no word of a damaged record.
cp "$t/disk.img" "$t/cut2.img"
truncate -s "$r3" "$t/cut2.img"; truncate -s 8M "$t/cut2.img"
rc=$(disk "$t/cut2.img" "$t/out5")
[ "$rc" = 3 ] && [ "$(cat "$t/said")" = "incomplete: the guest stopped after case two; 2 files from 2 checkpoints" ] ||
  fail "disk cut between records: status $rc, said '$(cat "$t/said")'"
# One byte of record 2's data changed: record 1 alone counts (a.json in its
# first form), the records after it are not read.
cp "$t/disk.img" "$t/bad.img"
printf 'X' | dd of="$t/bad.img" bs=1 seek=$((r2 + 1000)) conv=notrunc 2>/dev/null
rc=$(disk "$t/bad.img" "$t/out6")
[ "$rc" = 3 ] && grep -q '^incomplete: the guest stopped after case one; 2 files from 1 checkpoint; the reading stopped at record 2' "$t/said" ||
  fail "damaged record: status $rc, said '$(cat "$t/said")'"
cmp -s "$t/a.first" "$t/out6/a.json" && cmp -s "$t/in/b.txt" "$t/out6/b.txt" || fail "damaged record: record 1's files differ"
[ ! -e "$t/out6/sub/c.rc" ] && [ ! -e "$t/out6/z.bin" ] || fail "damaged record: files of later records written"
# A damaged header (z.bin's size in record 4's file list): the reading stops
# there too.
python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); i = d.index(b"\n9000 ", int(sys.argv[3]))
open(sys.argv[2], "wb").write(d[:i] + b"\n9001 " + d[i + 6:])' "$t/disk.img" "$t/bad2.img" "$r4"
rc=$(disk "$t/bad2.img" "$t/out7")
[ "$rc" = 3 ] && grep -q '^incomplete: the guest stopped after case two, in case three; .*record 4: its header does not match its SHA-256' "$t/said" ||
  fail "damaged header: status $rc, said '$(cat "$t/said")'"
truncate -s 0 "$t/disk.img"; truncate -s 8M "$t/disk.img"
rc=$(disk "$t/disk.img" "$t/out8")
[ "$rc" = 1 ] || fail "empty disk: status $rc, not 1"
echo "test-transport: ok ($([ "$sh" = sh ] && echo "host tools" || echo busybox); $(wc -l <"$t/stream") lines)"
