#!/usr/bin/env bash
# Offline test of the lab's results transport (send.sh's encoders, transport.py's
# decoders), seconds: on the console, kernel lines spliced into chunks (with
# and without a timestamp), between lines, and a stream cut in its last file;
# on the results disk, a whole archive and a damaged one. Uses the
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
# 5. The results disk: every file back and checked against the manifest; a
# damaged archive gives back the files that still match and names the rest;
# no header, status 1.
truncate -s 8M "$t/disk.img"
"$sh" -c ". '$here/send.sh'; lab_send_disk '$t/in' '$t/disk.img'" || fail "lab_send_disk failed"
mkdir -p "$t/out3" "$t/out4"
python3 "$here/transport.py" --disk "$t/disk.img" "$t/out3" 2>"$t/err" || fail "disk: status $? ($(cat "$t/err"))"
for f in a.json b.txt sub/c.rc z.bin; do cmp -s "$t/in/$f" "$t/out3/$f" || fail "disk: $f differs"; done
printf 'XXXXXXXX' | dd of="$t/disk.img" bs=1 seek=$((256 * 1024 + 2000)) conv=notrunc 2>/dev/null
rc=0; python3 "$here/transport.py" --disk "$t/disk.img" "$t/out4" 2>"$t/err" || rc=$?
[ "$rc" = 3 ] && grep -q '^lost file 1 (a.json)' "$t/err" || fail "damaged disk: status $rc, $(cat "$t/err")"
for f in b.txt sub/c.rc z.bin; do  # each one back whole, or named lost
  cmp -s "$t/in/$f" "$t/out4/$f" || grep -q "($f)" "$t/err" || fail "damaged disk: $f neither back nor named"
done
truncate -s 0 "$t/disk.img"; truncate -s 8M "$t/disk.img"
rc=0; python3 "$here/transport.py" --disk "$t/disk.img" "$t/out4" 2>/dev/null || rc=$?
[ "$rc" = 1 ] || fail "empty disk: status $rc, not 1"
echo "test-transport: ok ($([ "$sh" = sh ] && echo "host tools" || echo busybox); $(wc -l <"$t/stream") lines)"
