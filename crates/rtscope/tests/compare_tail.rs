//! `rtscope compare`'s tail verdicts end to end: exceedances of a threshold
//! per hour with their exact Poisson intervals, the rate-ratio verdict, the
//! block bootstrap of repeated runs, what a p99.9 verdict would need, and
//! the HTML section.

mod common;

use std::path::{Path, PathBuf};

use common::{alongside, measured, Run};
use rtscope_core::result::ResultDocument;

/// A real short run, as the base of the documents made below.
fn real_run(dir: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let mut args = vec!["cyclic", "-t", "1"];
    args.extend_from_slice(extra);
    measured(dir, name, &args)
}

/// The run's document with every series made exactly `base` values at 10 µs
/// and `tail` at 200 µs over one hour of measuring; p99.9 is 10 µs.
fn shaped(src: &Path, dst: &Path, base: u64, tail: u64) {
    let mut d = ResultDocument::read(src).unwrap();
    d.duration_ns = 3_600_000_000_000;
    for s in &mut d.series {
        s.corrected = None;
        s.blocks = None;
        s.histogram.buckets = vec![[10_000, base], [200_000, tail]];
        s.stats.count = base + tail;
        s.stats.min_ns = 10_000;
        s.stats.max_ns = 200_000;
        s.stats.p50_ns = 10_000;
        s.stats.p90_ns = 10_000;
        s.stats.p99_ns = 10_000;
        s.stats.p99_9_ns = 10_000;
        s.counters.overruns = 0;
    }
    d.write(dst).unwrap();
}

fn compare(args: &[&Path], extra: &[&str]) -> String {
    Run::new(["compare"])
        .args(args)
        .args(extra)
        .exits(0)
        .stdout()
}

#[test]
fn a_higher_rate_of_exceedances_is_worse_in_the_tail() {
    let _turn = alongside();
    let dir = tempfile::tempdir().unwrap();
    let src = real_run(dir.path(), "src", &["-l", "20"]);
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    shaped(&src, &a, 1_000_000, 5);
    shaped(&src, &b, 1_000_000, 50);
    let text = compare(&[&a, &b], &[]);
    // The baseline's p99.9 (10 us) is the threshold: 5 and 50 above it in
    // an hour; Garwood's intervals of 5 and 50 events.
    assert!(
        text.contains(
            "tail: values above 10us (the baseline's p99.9), per hour of measuring (95% exact Poisson interval; no per-block histograms, so values are taken as independent):\n  a: 5 above in 60min = 5.00/h [1.62, 11.7]\n  b: 50 above in 60min = 50.0/h [37.1, 65.9]\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("tail verdict: b is worse in the tail than a: rate ratio 10x ["),
        "{text}"
    );
    assert!(
        text.contains("(exact conditional test, values taken as independent: too narrow where they come in bursts)\n"),
        "{text}"
    );
    assert!(!text.contains("block bootstrap ["), "{text}");
    // About 1 M values a run at 278 a second: p99.9 could be judged.
    assert!(
        text.contains("p99.9 needs 20 values beyond it in each run: 20000 values, about"),
        "{text}"
    );
    assert!(
        text.contains("the shortest here has 1000005 (enough)"),
        "{text}"
    );
    // The other way round: better; against itself: can't tell.
    let text = compare(&[&b, &a], &[]);
    assert!(
        text.contains("tail verdict: a is better in the tail than b: rate ratio 0.10x ["),
        "{text}"
    );
    let again = dir.path().join("again.json");
    std::fs::copy(&a, &again).unwrap();
    let text = compare(&[&a, &again], &[]);
    assert!(
        text.contains("tail verdict: can't tell again from a in the tail: rate ratio 1.00x ["),
        "{text}"
    );
    // A threshold above every value: nothing to compare, said so.
    let text = compare(&[&a, &b], &["--tail-threshold", "1ms"]);
    assert!(
        text.contains("tail: values above 1ms (--tail-threshold)"),
        "{text}"
    );
    assert!(
        text.contains("can't tell b from a in the tail: neither run went above the threshold\n"),
        "{text}"
    );
    // The HTML page has the section.
    let html = dir.path().join("c.html");
    compare(&[&a, &b], &["--html", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<h3>Tail verdicts</h3>"), "{page}");
    assert!(
        page.contains("<p class=\"verdict worse\">b is worse in the tail than a: rate ratio 10x [")
    );
    // A bad threshold is one line, exit 2.
    Run::new(["compare"])
        .args([&a, &b])
        .args(["--tail-threshold", "soon"])
        .exits(2)
        .one_line();
}

#[test]
fn repeated_runs_get_a_block_bootstrap_too() {
    let _turn = alongside();
    let dir = tempfile::tempdir().unwrap();
    // Two repetitions of 600 ms: 12 blocks of 100 ms a side. A threshold of
    // 1 ns: every value is above it, so both intervals exist.
    let a = real_run(dir.path(), "a", &["-l", "600", "--repeat", "2"]);
    let b = real_run(dir.path(), "b", &["-l", "600", "--repeat", "2"]);
    let text = compare(&[&a, &b], &["--tail-threshold", "1ns"]);
    assert!(
        text.contains("tail: values above 1ns (--tail-threshold)"),
        "{text}"
    );
    assert!(text.contains("; block bootstrap ["), "{text}");
    assert!(
        text.contains("p99.9 needs 10 values beyond it in each repetition: 10000 values"),
        "{text}"
    );
}

/// `src`'s document made 100 blocks of 100 ms (10 s) of 1000 values at
/// 10 us each, with `bursts` blocks (evenly spaced) holding `per_burst`
/// values at 200 us.
fn bursts(src: &Path, dst: &Path, bursts: u64, per_burst: u64) {
    per_block(src, dst, |i| {
        if bursts > 0 && i % (100 / bursts) == 0 {
            per_burst
        } else {
            0
        }
    });
}

/// `src`'s document made 100 blocks of 100 ms (10 s) of 1000 values at
/// 10 us each, block `i` with `above(i)` of them at 200 us.
fn per_block(src: &Path, dst: &Path, above: impl Fn(u64) -> u64) {
    use rtscope_core::record::blocks::{bucket_of, encode, BLOCK_SUB_BUCKETS, DEFAULT_BLOCK_NS};
    let mut d = ResultDocument::read(src).unwrap();
    d.duration_ns = 100 * DEFAULT_BLOCK_NS;
    let (low, high) = (bucket_of(10_000), bucket_of(200_000));
    let tail: u64 = (0..100).map(&above).sum();
    for s in &mut d.series {
        s.corrected = None;
        s.repetitions.clear();
        s.histogram.buckets = vec![[10_000, 100_000 - tail], [200_000, tail]];
        s.stats.count = 100_000;
        s.stats.p99_9_ns = 10_000;
        let mut h = rtscope_core::result::BlockHistograms::default();
        h.block_ns = DEFAULT_BLOCK_NS;
        h.sub_buckets = BLOCK_SUB_BUCKETS;
        h.blocks = (0..100)
            .map(|i| {
                let n = above(i);
                encode(&vec![(low, 1000 - n), (high, n)])
            })
            .collect();
        s.blocks = Some(h);
    }
    d.write(dst).unwrap();
}

#[test]
fn bursts_are_counted_as_episodes() {
    // Issue 36: two runs of the same command were called different in the
    // tail in 4 of 6 pairs, as one host stall gives many exceedances. Ten
    // times the values in the same two stalls is the same two episodes.
    let _turn = alongside();
    let dir = tempfile::tempdir().unwrap();
    let src = real_run(dir.path(), "src", &["-l", "20"]);
    let (a, b, c) = (
        dir.path().join("a.json"),
        dir.path().join("b.json"),
        dir.path().join("c.json"),
    );
    bursts(&src, &a, 2, 5);
    bursts(&src, &b, 2, 50);
    bursts(&src, &c, 20, 5);
    let text = compare(&[&a, &b], &[]);
    assert!(
        text.contains("per hour of measuring (verdicts on episodes: 100ms blocks with a value above, as exceedances come in bursts; 95% exact Poisson intervals):\n"),
        "{text}"
    );
    assert!(
        text.contains("  a: 10 above in 10.0s = 3600/h; 2 episodes in 100 blocks = 720/h ["),
        "{text}"
    );
    assert!(
        text.contains("  b: 100 above in 10.0s = 36000/h; 2 episodes in 100 blocks = 720/h ["),
        "{text}"
    );
    assert!(
        text.contains("tail verdict: can't tell b from a in the tail: episode rate ratio 1.00x ["),
        "{text}"
    );
    // Ten times the episodes is a difference.
    let text = compare(&[&a, &c], &[]);
    assert!(
        text.contains("tail verdict: c is worse in the tail than a: episode rate ratio 10x ["),
        "{text}"
    );
    assert!(text.contains("; block bootstrap ["), "{text}");
}

#[test]
fn episodes_clustered_over_seconds_widen_the_interval() {
    // 20 episodes in the first 2 s of one run against 7 spread over the
    // other's 10 s: the exact test says better; but the first run's
    // super-blocks of 1 s hold 10, 10 and eight times 0 episodes, far more
    // dispersed than Poisson counts (χ² = 80 + 3 over 18 df), and the
    // counts divided by that (and widened for its df) can't tell.
    let _turn = alongside();
    let dir = tempfile::tempdir().unwrap();
    let src = real_run(dir.path(), "src", &["-l", "20"]);
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    per_block(&src, &a, |i| u64::from(i < 20));
    per_block(&src, &b, |i| u64::from(i % 16 == 0));
    let text = compare(&[&a, &b], &[]);
    assert!(
        text.contains("  a: 20 above in 10.0s = 7200/h; 20 episodes in 100 blocks = 7200/h ["),
        "{text}"
    );
    assert!(
        text.contains("tail verdict: can't tell b from a in the tail: episode rate ratio 0.35x ["),
        "{text}"
    );
    assert!(
        text.contains(
            "(conditional test; episodes cluster: dispersion 4.6 (18 df), counts taken as 1/5.3)"
        ),
        "{text}"
    );
    // Spread evenly, the same counts are Poisson-like: the exact test.
    per_block(&src, &a, |i| u64::from(i % 5 == 0));
    let text = compare(&[&a, &b], &[]);
    assert!(
        text.contains("tail verdict: b is better in the tail than a: episode rate ratio 0.35x ["),
        "{text}"
    );
    assert!(
        text.contains(" (exact conditional test); block bootstrap ["),
        "{text}"
    );
}
