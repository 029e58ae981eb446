#!/bin/sh
# Calibration of `rtscope compare` on this machine.
#
# A/A: PAIRS pairs of identical short runs (independent pairs: 2 x PAIRS runs,
# one after the other), each pair compared; a pair "got a verdict" when the
# first compared series is called worse, better or mixed (and, counted
# apart, when its tail verdict is worse or better). The false-verdict rate
# should be at most 5 %.
# A/B: AB pairs of a run without load and a run with LOAD; the detection rate
# is the share of pairs with a verdict (worse, better or mixed: a load can make
# the median better and the tail worse).
#
#   bench/compare-aa.sh [PAIRS] [DURATION] [LOAD] [AB]
#   defaults: 20 pairs, 5s runs, --load mem-churn:100, 5 A/B pairs
#   RTSCOPE=path/to/rtscope (default: target/release/rtscope, else target/debug/rtscope)
#   REPEAT=N makes every run `--repeat N` (N runs of DURATION each, compared by
#     the spread between repetitions)
#   INTERLEAVE=N makes each side of a pair N single runs made alternately with
#     the other side's (a1 b1 a2 b2 ...), pooled with `rtscope pool`: slow drifts
#     of the machine then hit both sides alike
#   KEEP=DIR keeps the result documents in DIR (default: a temporary directory, removed)
#
# With python3 available, the same pairs are also compared with their block
# histograms removed (what the independence-assumed method, used for older
# documents and imports, would have said).
set -eu
PAIRS=${1:-20}
DUR=${2:-5s}
LOAD=${3:-mem-churn:100}
AB=${4:-5}
BIN=${RTSCOPE:-}
if [ -z "$BIN" ]; then
    if [ -x target/release/rtscope ]; then BIN=target/release/rtscope; else BIN=target/debug/rtscope; fi
fi
if [ -n "${KEEP:-}" ]; then DIR=$KEEP; mkdir -p "$DIR"; else DIR=$(mktemp -d); trap 'rm -rf "$DIR"' EXIT; fi
RUN="$BIN cyclic -t 1 -a 1 -i 500us -D $DUR -q"
[ "${REPEAT:-1}" -gt 1 ] && RUN="$RUN --repeat $REPEAT"

# SCHED_FIFO if this user may, else --no-rt: decided once, so that every run
# of the bench is made the same way (a run that fails is reported, not re-run
# in another mode: a SCHED_OTHER thread under load records far fewer samples).
if $BIN cyclic -t 1 -a 1 -l 10 -q >/dev/null 2>&1; then MODE=''; else MODE='--no-rt'; echo "(no SCHED_FIFO here: every run --no-rt)"; fi

run() { # run NAME [extra args]
    name=$1; shift
    $RUN $MODE --json "$DIR/$name.json" "$@" >/dev/null 2>"$DIR/$name.err" ||
        echo "run $name: exit $?: $(tail -n 1 "$DIR/$name.err")" >&2
}

pair() { # pair A B [extra args for B]: one run each, or INTERLEAVE alternating runs pooled
    a=$1; b=$2; shift 2
    if [ "${INTERLEAVE:-1}" -gt 1 ]; then
        k=1; la=''; lb=''
        while [ "$k" -le "$INTERLEAVE" ]; do
            run "$a-$k"; run "$b-$k" "$@"
            la="$la $DIR/$a-$k.json"; lb="$lb $DIR/$b-$k.json"
            k=$((k + 1))
        done
        $BIN pool -q $la -o "$DIR/$a.json"
        $BIN pool -q $lb -o "$DIR/$b.json"
    else
        run "$a"; run "$b" "$@"
    fi
}

strip() { # a copy of a document without block histograms
    python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
for s in d["series"]:
    s.pop("blocks",None); s.pop("repetitions",None)
json.dump(d,open(sys.argv[2],"w"))' "$1" "$2"
}

first_verdict() { # the first verdict line of a comparison
    "$BIN" compare "$@" | grep -m1 '^verdict:'
}

first_tail() { # the first tail verdict line of a comparison
    "$BIN" compare "$@" | grep -m1 '^tail verdict:' || true
}

called() { case "$1" in *" is worse "*|*" is better "*|*"mixed:"*) return 0;; esac; return 1; }

echo "A/A: $PAIRS pairs of '$RUN' ($BIN)${INTERLEAVE:+, $INTERLEAVE alternating runs per side}"
aa=0; aa_ind=0; aa_tail=0; aa_disp=0; i=1
have_py=$(command -v python3 >/dev/null && echo 1 || echo 0)
while [ "$i" -le "$PAIRS" ]; do
    pair "a$i" "b$i"
    v=$(first_verdict "$DIR/a$i.json" "$DIR/b$i.json")
    if called "$v"; then aa=$((aa + 1)); mark='VERDICT'; else mark='ok'; fi
    tv=$(first_tail "$DIR/a$i.json" "$DIR/b$i.json")
    if called "$tv"; then aa_tail=$((aa_tail + 1)); mark="$mark, TAIL VERDICT"; fi
    case "$tv" in *"counts taken as"*) aa_disp=$((aa_disp + 1));; esac
    extra=''
    if [ "$have_py" = 1 ]; then
        strip "$DIR/a$i.json" "$DIR/a$i-ind.json"; strip "$DIR/b$i.json" "$DIR/b$i-ind.json"
        vi=$(first_verdict "$DIR/a$i-ind.json" "$DIR/b$i-ind.json")
        if called "$vi"; then aa_ind=$((aa_ind + 1)); extra=' (independence assumed: verdict)'; fi
    fi
    echo "pair $i: $mark$extra: $v"
    echo "  $tv"
    i=$((i + 1))
done

echo "A/B: $AB pairs, none vs --load $LOAD"
ab=0; ab_tail=0; i=1
while [ "$i" -le "$AB" ]; do
    pair "n$i" "l$i" --load "$LOAD"
    v=$(first_verdict "$DIR/n$i.json" "$DIR/l$i.json")
    # Any verdict is a detected difference: on a VM a busy CPU often wakes a
    # sleeping thread faster (no idle exit) while the tail gets worse.
    if called "$v"; then ab=$((ab + 1)); mark='detected'; else mark='missed'; fi
    tv=$(first_tail "$DIR/n$i.json" "$DIR/l$i.json")
    if called "$tv"; then ab_tail=$((ab_tail + 1)); mark="$mark, tail detected"; fi
    echo "pair $i: $mark: $v"
    echo "  $tv"
    i=$((i + 1))
done

echo
echo "A/A false verdicts: $aa of $PAIRS pairs"
echo "A/A false tail verdicts: $aa_tail of $PAIRS pairs"
echo "A/A pairs whose episode counts were divided by their dispersion: $aa_disp of $PAIRS"
[ "$have_py" = 1 ] && echo "A/A false verdicts with independence assumed (blocks removed): $aa_ind of $PAIRS pairs"
echo "A/B detected (a verdict: worse, better or mixed, with --load $LOAD): $ab of $AB pairs"
echo "A/B detected by the tail verdict: $ab_tail of $AB pairs"
