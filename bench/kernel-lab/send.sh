# The kernel lab's results transport, guest side (sourced by init; also by
# test-transport.sh on the host): lab_send_disk writes the results to the
# results disk (a virtio disk whose driver the lab carries), which no kernel
# message can reach; lab_send_console is the fallback. lab_send_console DIR writes every file under
# DIR to stdout as transport.py reads it: a manifest first (so that the host
# can name what a cut stream lost), then per file its gzip in base64 in chunk
# lines of 800 characters, each with its file index, chunk index and MD5 head,
# and an end line repeating the file's size, SHA-256 and chunk count.
lab_send_console() {
  (
  cd "$1" || return 1
  files=$(find . -type f | sed 's|^\./||' | sort)
  n=$(printf '%s\n' "$files" | grep -c .)
  echo "@@LAB-DATA-BEGIN 2 $n@@"
  i=0
  for f in $files; do
    i=$((i + 1))
    echo "@@LAB-M $i $(wc -c <"$f") $(sha256sum <"$f" | cut -c1-64) $f"
  done
  i=0
  for f in $files; do
    i=$((i + 1))
    gzip -c "$f" | base64 | tr -d '\n' | fold -w 800 >/tmp/lab-chunks
    echo >>/tmp/lab-chunks
    k=0
    while read -r c; do
      [ -n "$c" ] || continue
      k=$((k + 1))
      echo "@@LAB-C $i $k $(printf %s "$c" | md5sum | cut -c1-8) $c"
    done </tmp/lab-chunks
    echo "@@LAB-E $i $(wc -c <"$f") $(sha256sum <"$f" | cut -c1-64) $k $f"
  done
  echo "@@LAB-DATA-END $n@@"
  rm -f /tmp/lab-chunks
  )
}

# lab_manifest DIR: "SIZE SHA256 PATH" for every file under DIR, sorted.
lab_manifest() {
  (
  cd "$1" || return 1
  find . -type f | sed 's|^\./||' | sort | while read -r f; do
    echo "$(wc -c <"$f") $(sha256sum <"$f" | cut -c1-64) $f"
  done
  )
}

# lab_send_disk DIR DEV: every file under DIR as a gzipped tar on the block
# device DEV at 256 KiB, after a header that transport.py --disk reads:
# "RTSCOPE-LAB-RESULTS 1 SIZE SHA256 NFILES" and the manifest (lab_manifest),
# so that the host checks each file and names any it did not get. The header
# is written last: a disk whose header reads holds the whole archive.
lab_send_disk() {
  lab_manifest "$1" >/tmp/lab-manifest || return 1
  tar -C "$1" -cf - . | gzip -c >/tmp/lab-data.tgz || return 1
  {
    echo "RTSCOPE-LAB-RESULTS 1 $(wc -c </tmp/lab-data.tgz) $(sha256sum </tmp/lab-data.tgz | cut -c1-64) $(grep -c . /tmp/lab-manifest)"
    cat /tmp/lab-manifest
    echo "RTSCOPE-LAB-END"
  } >/tmp/lab-header
  [ "$(wc -c </tmp/lab-header)" -lt 262144 ] || return 1
  dd if=/dev/zero of="$2" bs=4096 count=1 conv=notrunc,fsync 2>/dev/null &&
    dd if=/tmp/lab-data.tgz of="$2" bs=4096 seek=64 conv=notrunc,fsync 2>/dev/null &&
    dd if=/tmp/lab-header of="$2" bs=4096 conv=notrunc,fsync 2>/dev/null || return 1
  rm -f /tmp/lab-data.tgz
}

# lab_drain: wait until the serial ports have sent what was written (their tx
# counters stop moving, 20 s at most), so that poweroff cuts nothing.
lab_drain() {
  last="" t=0
  while [ "$t" -lt 40 ]; do
    now=$(cat /proc/tty/driver/* 2>/dev/null | grep -o 'tx:[0-9]*' | tr '\n' ' ')
    [ -n "$now" ] && [ "$now" = "$last" ] && break
    last=$now
    sleep 0.5
    t=$((t + 1))
  done
  sleep 1
}
