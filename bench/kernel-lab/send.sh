# The kernel lab's results transport, guest side (sourced by init; also by
# test-transport.sh on the host). lab_write_record writes what the results
# directory gained since its last call to the results disk (a virtio disk
# whose driver the lab carries, which no kernel message can reach), as one
# more checksummed record: init calls it after every finished case and at the
# end, so that a guest stopped at any point leaves every finished case on the
# disk. lab_send_console is the fallback. lab_send_console DIR writes every file under
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

# The results disk: a sequence of records, one per checkpoint, each at a
# 4 KiB-aligned offset after the one before (the first at 0), each holding
# what DIR gained or changed since the record before:
#
#   RTSCOPE-LAB-RECORD 2 RUN SEQ SIZE SHA256 NFILES STATE LABEL
#   SIZE SHA256 PATH                  (NFILES lines, the record's files)
#   RTSCOPE-LAB-END HEADSHA          (SHA-256 of the lines above)
#   SIZE bytes: the files, a gzipped tar
#
# RUN names the boot (every record of one boot has it), SEQ counts from 1,
# STATE is "case" (LABEL: the case just finished), "start" (LABEL: the case
# about to start; what came before it) or "done" (the last record: the run is
# complete). transport.py --disk reads records in order until one
# does not check out (a record half-written when the guest died, or none), and
# takes the last copy of each file. Paths are names without white space.

# lab_write_record DIR DEV LABEL [start|done]: one record with what DIR
# gained since the last record (new files, and files whose size, modification
# or change time or inode changed), written to the block device DEV at the
# next offset and flushed (dd conv=fsync); LABEL names the case just finished,
# or with "start" the case about to start; "done" marks the run complete
# (written even when nothing changed). Nothing new and not done: nothing
# written (a look at DIR alone: find, stat and awk). Prints
# "@@LAB checkpoint SEQ LABEL: N files, BYTES bytes, SECONDS s" (or "- LABEL:
# nothing new, SECONDS s"); returns 1
# when the record could not be made or written. Its work files go in
# $lab_tmp (default /tmp).
lab_ckpt_seq=0 lab_ckpt_off=0 lab_ckpt_run=""
lab_write_record() {
  lab_tmp=${lab_tmp:-/tmp}
  lab_ck_dir=$1 lab_ck_dev=$2 lab_ck_label=${3:-none} lab_ck_state=case
  case "${4:-}" in done|start) lab_ck_state=$4 ;; esac
  read -r lab_ck_t0 _ </proc/uptime
  if [ -z "$lab_ckpt_run" ]; then
    read -r lab_ckpt_run </proc/sys/kernel/random/uuid 2>/dev/null || lab_ckpt_run=$$-$lab_ck_t0
    lab_ckpt_run=$(echo "$lab_ckpt_run" | tr -d '.-')
    : >"$lab_tmp/lab-ck-seen"
  fi
  # Size, modification and change times (ns), inode and path of each file: a
  # file whose line is not in the last record's list goes into this record.
  lab_ck_new=$(
    set -f
    cd "$lab_ck_dir" || exit 1
    files=$(find . -type f | sed 's|^\./||')
    : >"$lab_tmp/lab-ck-now"
    [ -z "$files" ] || stat -c '%s %y %z %i %n' $files >"$lab_tmp/lab-ck-now" || exit 1
    awk 'FILENAME == ARGV[1] {seen[$0] = 1; next} !($0 in seen) {print $NF}' "$lab_tmp/lab-ck-seen" "$lab_tmp/lab-ck-now"
  ) || return 1
  if [ -z "$lab_ck_new" ] && [ "$lab_ck_state" != done ]; then
    lab_ck_said "- $lab_ck_label: nothing new"
    return 0
  fi
  : >"$lab_tmp/lab-ck-list"
  : >"$lab_tmp/lab-ck-data"
  if [ -n "$lab_ck_new" ]; then
    (
    set -f
    cd "$lab_ck_dir" || exit 1
    sha256sum $lab_ck_new >"$lab_tmp/lab-ck-sums" &&
      awk 'FILENAME == ARGV[1] {size[$NF] = $1; next} {print size[$2], $1, $2}' \
        "$lab_tmp/lab-ck-now" "$lab_tmp/lab-ck-sums" >"$lab_tmp/lab-ck-list" &&
      tar -cf - $lab_ck_new | gzip -c >"$lab_tmp/lab-ck-data"
    ) || return 1
  fi
  lab_ck_n=$(set -f; set -- $lab_ck_new; echo $#)
  set -- $(sha256sum <"$lab_tmp/lab-ck-data") $(wc -c <"$lab_tmp/lab-ck-data")
  {
    echo "RTSCOPE-LAB-RECORD 2 $lab_ckpt_run $((lab_ckpt_seq + 1)) $3 $1 $lab_ck_n $lab_ck_state $lab_ck_label"
    cat "$lab_tmp/lab-ck-list"
  } >"$lab_tmp/lab-ck-head"
  set -- $(sha256sum <"$lab_tmp/lab-ck-head")
  echo "RTSCOPE-LAB-END $1" >>"$lab_tmp/lab-ck-head"
  cat "$lab_tmp/lab-ck-head" "$lab_tmp/lab-ck-data" >"$lab_tmp/lab-ck-record"
  lab_ck_size=$(wc -c <"$lab_tmp/lab-ck-record")
  dd if="$lab_tmp/lab-ck-record" of="$lab_ck_dev" bs=4096 seek=$((lab_ckpt_off / 4096)) conv=notrunc,fsync 2>/dev/null ||
    return 1
  lab_ckpt_seq=$((lab_ckpt_seq + 1))
  lab_ckpt_off=$(( (lab_ckpt_off + lab_ck_size + 4095) / 4096 * 4096 ))
  mv "$lab_tmp/lab-ck-now" "$lab_tmp/lab-ck-seen"
  lab_ck_said "$lab_ckpt_seq $lab_ck_label: $lab_ck_n files, $lab_ck_size bytes"
}

# lab_ck_said WHAT: "@@LAB checkpoint WHAT, SECONDS s" (since lab_ck_t0).
lab_ck_said() {
  read -r lab_ck_t1 _ </proc/uptime
  lab_ck_cs=$(( (${lab_ck_t1%.*} - ${lab_ck_t0%.*}) * 100 + 1${lab_ck_t1#*.} - 1${lab_ck_t0#*.} ))
  printf '@@LAB checkpoint %s, %d.%02d s\n' "$1" $((lab_ck_cs / 100)) $((lab_ck_cs % 100))
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
