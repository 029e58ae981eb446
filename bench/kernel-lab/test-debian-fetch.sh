#!/usr/bin/env bash
# bench/kernel-lab/debian-fetch's signed-index path, offline: a suite on a
# loopback HTTP server, its InRelease naming its Packages index by hash, the
# index naming a kernel image (behind a meta package) by SHA256. A package
# comes from it only when both hashes hold; a tampered index or package file
# is refused and nothing is cached.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/test-debian-fetch.XXXXXX")
srv=""
trap '[ -n "$srv" ] && kill "$srv" 2>/dev/null; rm -rf "$work"' EXIT
fail=0
check() { if [ "$2" = "$3" ]; then echo "ok    $1"; else echo "FAIL  $1: got '$2', expected '$3'"; fail=1; fi; }

arch=$(dpkg --print-architecture)
mkdir -p "$work/www/debian/pool/main/r" "$work/www/debian/dists/rt/main/binary-$arch"
img=linux-image-0.0.0-rtscope-test
echo "the kernel image" >"$work/www/debian/pool/main/r/${img}_1.0_$arch.deb"
pool_sha=$(sha256sum "$work/www/debian/pool/main/r/${img}_1.0_$arch.deb" | cut -d' ' -f1)
index() {
  cat <<P
Package: linux-image-rtscope-test
Version: 1.0
Architecture: $arch
Depends: $img (= 1.0)
Filename: pool/main/r/meta.deb
SHA256: 0000

Package: $img
Version: 1.0
Architecture: $arch
Filename: pool/main/r/${img}_1.0_$arch.deb
SHA256: $1
P
}
make_suite() {
  index "$1" | xz >"$work/www/debian/dists/rt/main/binary-$arch/Packages.xz"
  local f="$work/www/debian/dists/rt/main/binary-$arch/Packages.xz"
  printf 'Suite: rt\nSHA256:\n %s %s main/binary-%s/Packages.xz\n' \
    "$(sha256sum "$f" | cut -d' ' -f1)" "$(stat -c %s "$f")" "$arch" >"$work/InRelease"
}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd "$work/www" && exec python3 -m http.server --bind 127.0.0.1 "$port" >/dev/null 2>&1) &
srv=$!
for _ in $(seq 50); do curl -s "http://127.0.0.1:$port/" >/dev/null && break; sleep 0.1; done
export DEBIAN_FETCH_SUITES="http://127.0.0.1:$port/debian/ http://127.0.0.1:$port/debian/dists/rt/ $work/InRelease"
export RTSCOPE_LAB_CACHE="$work/cache"

make_suite "$pool_sha"
got=$("$here/debian-fetch" --image "linux-image-rtscope-test:$arch" 2>"$work/err") || true
check "a meta package resolved and fetched from the signed index" "$(basename "$got")" "${img}_1.0_$arch.deb"
check "the file is the pool's" "$(cat "$got" 2>/dev/null)" "the kernel image"
rm -rf "$work/cache"

make_suite "$(printf 1%.0s {1..64})"
rc=0; "$here/debian-fetch" "$img:$arch" >/dev/null 2>"$work/err" || rc=$?
check "a package file whose SHA256 is not the index's is refused" "$rc" 1
check "and not cached" "$(ls "$work/cache/debs" 2>/dev/null | grep -c deb || true)" 0

make_suite "$pool_sha"
echo tampered | xz >"$work/www/debian/dists/rt/main/binary-$arch/Packages.xz"
rc=0; "$here/debian-fetch" "$img:$arch" >/dev/null 2>"$work/err" || rc=$?
check "an index that is not the InRelease's is refused" "$rc" 1
check "saying so" "$(grep -c 'no copy matches its InRelease' "$work/err")" 1

rc=0; "$here/debian-fetch" --bad >/dev/null 2>&1 || rc=$?
check "bad usage" "$rc" 2
exit $fail
