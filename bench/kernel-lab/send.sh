# The kernel lab's console transport, guest side (sourced by init; also by
# test-transport.sh on the host). lab_send_console DIR writes every file under
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
