# Shared by the CI steps (sourced, not run): package installs that survive a
# package mirror in mid-sync, tools installed once per machine in a cached
# place, and a time for each step.
#
#   ci_apt_install PKG...      apt-get install, after an index update that may fail
#   ci_apt_update              the index update alone: retried, never fatal
#                              (sets CI_APT_UPDATE_FAILED=1 when it gave up)
#   ci_cargo_tool NAME VERSION a cargo-installed tool, once per machine (pinned)
#   ci_rustup WHAT...          rustup component/target add, failing with its name
#   ci_step NAME CMD...        runs CMD, records its time and the free disk
#                              after it for ci_times
#
# Environment: RTSCOPE_CI_TOOLS (where tools are installed; default
# ~/.cache/rtscope-ci/tools), CI_APT_TRIES (index update tries, default 3),
# CI_INSTALL_TIMEOUT (seconds one install may take before it is failed,
# default 2400).

ci_tools_dir="${RTSCOPE_CI_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/rtscope-ci/tools}"
case ":$PATH:" in
  *":$ci_tools_dir/bin:"*) ;;
  *) export PATH="$ci_tools_dir/bin:$PATH" ;;
esac
ci_install_timeout="${CI_INSTALL_TIMEOUT:-2400}"

ci_say() { echo "ci: $*" >&2; }

# The package index update, tried CI_APT_TRIES times. A failure is never fatal:
# an index that could not be fetched (a foreign architecture's mirror in
# mid-sync, a source that is down) leaves the others usable, and the install
# that follows says which package, if any, could not be had.
ci_apt_update() {
  local tries=${CI_APT_TRIES:-3} i out
  for ((i = 1; i <= tries; i++)); do
    if out=$(timeout 600 apt-get update -qq -o Acquire::Retries=2 -o Acquire::http::Timeout=60 2>&1); then
      return 0
    fi
    ci_say "apt-get update failed (try $i of $tries):"
    grep -E '^(E|W|Err):' <<<"$out" | head -n 5 >&2 || true
    ((i < tries)) && sleep $((5 * i))
  done
  ci_say "going on with the package indexes there are"
  # Said to the caller too: a package missing from the indexes may be one an
  # index that failed to update would have had (.ci/kernels skips a guest then).
  CI_APT_UPDATE_FAILED=1
  return 0
}

# apt-get install of the packages named, after an index update. Fails (exit 1)
# only when the install itself fails, naming the packages that could not be
# had.
ci_apt_install() {
  [ $# -gt 0 ] || return 0
  ci_say "installing: $*"
  ci_apt_update
  local log rc=0
  log=$(mktemp)
  timeout "$ci_install_timeout" apt-get install -y -qq --no-install-recommends \
    -o Acquire::Retries=3 -o Acquire::http::Timeout=60 "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    local p missing=()
    for p in "$@"; do
      apt-cache policy "$p" 2>/dev/null | grep -q 'Candidate: [0-9]' || missing+=("$p")
    done
    grep -E '^(E|W):' "$log" | head -n 10 >&2 || tail -n 10 "$log" >&2
    rm -f "$log"
    [ "$rc" -eq 124 ] && ci_say "apt-get install timed out after ${ci_install_timeout}s"
    if [ ${#missing[@]} -gt 0 ]; then
      ci_say "could not install ${missing[*]}: not in the package indexes"
    else
      ci_say "could not install: $* (apt-get exit $rc, above)"
    fi
    return 1
  fi
  rm -f "$log"
}

# A tool installed with `cargo install --locked NAME@VERSION` into the cached
# tools directory (its bin/ is on PATH from here on), once per machine: later
# runs find it there. The build uses opt-level 1 without LTO (the tools check
# a lock file or drive cargo: a few times faster to build than release, and
# fast enough to run). Fails with the tool's name, never hangs past
# CI_INSTALL_TIMEOUT.
ci_cargo_tool() {
  local name=$1 version=$2 have bin="$ci_tools_dir/bin/$1"
  # A cargo subcommand run by itself may want its name first, as cargo
  # passes it (`cargo-mutants mutants --version`).
  if have=$("$bin" "${name#cargo-}" --version 2>/dev/null || "$bin" --version 2>/dev/null) &&
    [[ "$have" == *" $version"* ]]; then
    return 0
  fi
  local t0 rc=0
  t0=$(date +%s)
  ci_say "installing $name $version into $ci_tools_dir (cargo install, once per machine)"
  CARGO_PROFILE_RELEASE_OPT_LEVEL=1 CARGO_PROFILE_RELEASE_LTO=false \
    CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_DEBUG=false \
    timeout "$ci_install_timeout" cargo install --locked --quiet --force \
    --root "$ci_tools_dir" "$name@$version" || rc=$?
  if [ "$rc" -ne 0 ]; then
    [ "$rc" -eq 124 ] && ci_say "cargo install $name timed out after ${ci_install_timeout}s"
    ci_say "could not install $name $version (cargo install exit $rc)"
    return 1
  fi
  ci_say "installed $name $version in $(($(date +%s) - t0))s"
}

# rustup component/target add, failing with what could not be added.
ci_rustup() {
  timeout "$ci_install_timeout" rustup "$@" || {
    ci_say "could not get rustup $*"
    return 1
  }
}

# ci_step NAME CMD...: runs CMD, adds "NAME SECONDS" to the step times that
# ci_times prints (also when a step fails: the times so far are printed).
ci_step_log=""
ci_step() {
  local name=$1 t0 rc=0
  shift
  [ -n "$ci_step_log" ] || ci_step_log=$(mktemp)
  t0=$(date +%s)
  echo "== ci: $name" >&2
  "$@" || rc=$?
  printf '%s %d %s %s\n' "$name" "$(($(date +%s) - t0))" "$(ci_free_mb)" "$([ $rc -eq 0 ] && echo ok || echo "FAILED ($rc)")" >>"$ci_step_log"
  [ $rc -eq 0 ] || ci_disk_says
  return $rc
}
# MB free on the filesystem of the working directory ("-" when df cannot tell).
ci_free_mb() {
  df -Pm . 2>/dev/null | awk 'NR == 2 { print $4; f = 1 } END { if (!f) print "-" }'
}
# After a failed step: the disk, when it is nearly full (a build or link that
# failed for want of space says so only in passing).
ci_disk_says() {
  local free
  free=$(ci_free_mb)
  if [ "$free" != "-" ] && [ "$free" -lt "${CI_LOW_DISK_MB:-2048}" ]; then
    ci_say "only ${free} MB free on $(df -P . | awk 'NR == 2 { print $6 }'): target/ holds $(du -sm target 2>/dev/null | cut -f1) MB"
  fi
}
ci_times() {
  [ -n "$ci_step_log" ] && [ -s "$ci_step_log" ] || return 0
  echo "ci: step times (s), MB free after each:" >&2
  awk '{ s = $4; for (i = 5; i <= NF; i++) s = s " " $i; t += $2; printf "  %-10s %6d %8s  %s\n", $1, $2, $3, s } END { printf "  %-10s %6d\n", "total", t }' "$ci_step_log" >&2
  rm -f "$ci_step_log"
}
