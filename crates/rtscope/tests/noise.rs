//! `rtscope noise`: short real runs, with and without --trace, checked for
//! the document's structure (never a noise bound), the trace instance's
//! removal, bad input, and a run on every CPU (it ends on time).

mod common;

use common::{alone, alongside, every_cpu, instances_of, own_tracefs_mounts_of, Run, LIMIT};
use serde_json::Value;

/// The traced tests of this file, one at a time.
static TRACING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn last_cpu() -> usize {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    online
        .trim()
        .split(',')
        .next_back()
        .unwrap()
        .split('-')
        .next_back()
        .unwrap()
        .parse()
        .unwrap()
}

fn run_noise(extra: &[&str]) -> (Value, String) {
    let (doc, stdout, _) = run_noise_child(extra);
    (doc, stdout)
}

/// [`run_noise`], with the child's pid (for what it may have left behind).
fn run_noise_child(extra: &[&str]) -> (Value, String, u32) {
    let out = Run::new(["noise", "-D", "1s", "--calibrate", "50ms", "-q"])
        .json()
        .args(extra)
        .exits(0);
    (out.document(), out.stdout(), out.id())
}

fn check_series(doc: &Value, cpu: usize) -> &Value {
    assert_eq!(doc["experiment"], "noise");
    let s = &doc["series"][0];
    assert_eq!(s["label"], format!("cpu {cpu}"));
    let a = &s["attributes"];
    for k in [
        "iterations",
        "loop_min_ns",
        "loop_mean_ns",
        "gaps",
        "gaps_per_s",
        "noise_ns",
        "available_pct",
        "duration_ns",
    ] {
        assert!(a[k].is_number(), "{k} missing: {a}");
    }
    assert!(a["iterations"].as_u64().unwrap() > a["gaps"].as_u64().unwrap());
    let avail = a["available_pct"].as_f64().unwrap();
    assert!((0.0..=100.0).contains(&avail), "{avail}");
    // The histogram holds every gap recorded.
    let hist: u64 = s["histogram"]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b[1].as_u64().unwrap())
        .sum();
    assert_eq!(hist, s["stats"]["count"].as_u64().unwrap());
    assert_eq!(
        s["stats"]["count"].as_u64().unwrap() + s["counters"]["dropped"].as_u64().unwrap(),
        a["gaps"].as_u64().unwrap()
    );
    // oslat's buckets count every iteration.
    let b: u64 = a["oslat_buckets_us"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .sum();
    assert_eq!(b, a["iterations"].as_u64().unwrap());
    // Throttling is apart from the noise: the gaps beyond oslat's first
    // bucket (every gap, as oslat counts them) are the noise's and
    // throttling's.
    let t = &a["throttling"];
    let throttled = if t.is_null() {
        0
    } else {
        for k in ["episodes", "gaps", "noise_ns"] {
            assert!(t[k].is_u64(), "throttling {k}: {t}");
        }
        assert!(t["pct"].is_number() && t["budgets"].is_array(), "{t}");
        let found = t["found"].as_array().unwrap();
        let by_found: u64 = found.iter().map(|f| f["gaps"].as_u64().unwrap()).sum();
        assert_eq!(by_found, t["gaps"].as_u64().unwrap(), "{t}");
        for f in found {
            assert!(
                ["period", "length"].contains(&f["evidence"].as_str().unwrap()),
                "{f}"
            );
        }
        t["gaps"].as_u64().unwrap()
    };
    let beyond_first: u64 = a["oslat_buckets_us"].as_array().unwrap()[1..]
        .iter()
        .map(|x| x.as_u64().unwrap())
        .sum();
    assert_eq!(
        beyond_first,
        s["stats"]["count"].as_u64().unwrap() + throttled
    );
    s
}

#[test]
fn untraced_run_document() {
    let _turn = alongside();
    let cpu = last_cpu();
    let (doc, out) = run_noise(&["-a", &cpu.to_string()]);
    let s = check_series(&doc, cpu);
    assert!(s["attributes"].get("sources").is_none());
    assert!(doc["plan"]["trace_session"].is_null());
    assert_eq!(doc["plan"]["trace"], false);
    assert!(out.contains("available"), "{out}");
}

/// Issue 26: a real-time loop's run looks for the bandwidth limits its
/// kernel settings name (as the document's own `system` records them); a
/// normal-priority loop is not throttled, and nothing is looked for.
#[test]
fn throttling_is_looked_for_only_for_a_real_time_loop() {
    let _turn = alongside();
    let cpu = last_cpu().to_string();
    let (doc, _) = run_noise(&["-a", &cpu]);
    let s = check_series(&doc, last_cpu());
    let (runtime, period) = (
        doc["system"]["sched_rt_runtime_us"].as_i64(),
        doc["system"]["sched_rt_period_us"]
            .as_i64()
            .unwrap_or(1_000_000),
    );
    let budgets = s["attributes"]["throttling"]["budgets"].as_array();
    let rt_budget = budgets.and_then(|b| b.iter().find(|b| b["mechanism"] == "rt_runtime"));
    match runtime {
        Some(r) if (0..period).contains(&r) => {
            let b = rt_budget.expect("an RT throttling budget");
            assert_eq!(b["lost_ns"].as_i64().unwrap(), (period - r) * 1000);
            assert_eq!(b["period_ns"].as_i64().unwrap(), period * 1000);
        }
        _ => assert!(rt_budget.is_none()),
    }
    let (doc, _) = run_noise(&["-a", &cpu, "--policy", "other"]);
    let s = check_series(&doc, last_cpu());
    assert!(
        s["attributes"]["throttling"].is_null(),
        "{}",
        s["attributes"]
    );
}

/// Issue 26: the warnings printed when the run starts are not printed again
/// after the summary.
#[test]
fn warnings_are_printed_once() {
    let _turn = alongside();
    let out = Run::new(["noise", "-D", "300ms", "--calibrate", "50ms"])
        .json()
        .exits(0);
    let all = format!("{}{}", out.stderr(), out.stdout());
    for w in out.document()["warnings"].as_array().unwrap() {
        let line = format!("warning: {}\n", w.as_str().unwrap());
        assert_eq!(all.matches(&line).count(), 1, "{line:?} in:\n{all}");
    }
}

#[test]
fn traced_run_attributes_and_cleans_up() {
    let _turn = alongside();
    let _one = TRACING.lock().unwrap_or_else(|e| e.into_inner());
    let cpu = last_cpu();
    let (doc, out, pid) = run_noise_child(&["-a", &cpu.to_string(), "--trace"]);
    let s = check_series(&doc, cpu);
    let ts = &doc["plan"]["trace_session"];
    assert_eq!(ts["clock"], "mono");
    assert!(ts["enabled"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e == "sched/sched_switch"));
    let gaps = s["attributes"]["gaps"].as_u64().unwrap();
    let sources = s["attributes"]["sources"].as_array().unwrap();
    if gaps > 0 {
        assert!(!sources.is_empty());
        for src in sources {
            assert!(src["name"].is_string() && src["total_ns"].is_u64(), "{src}");
        }
        // Each kept gap's causes add up to the gap.
        for g in s["attributes"]["worst_gaps"].as_array().unwrap() {
            let sum: u64 = g["causes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["ns"].as_u64().unwrap())
                .sum();
            assert_eq!(sum, g["gap_ns"].as_u64().unwrap(), "{g}");
        }
        assert!(out.contains("top noise sources"), "{out}");
    }
    // Nothing left behind by this run: no instance, no mount of its own.
    assert!(instances_of(pid).is_empty(), "{:?}", instances_of(pid));
    assert!(own_tracefs_mounts_of(pid).is_empty());
}

#[test]
fn interrupted_traced_run_still_writes_and_cleans_up() {
    let _turn = alongside();
    let _one = TRACING.lock().unwrap_or_else(|e| e.into_inner());
    let child = Run::new(["noise", "-D", "60s", "--calibrate", "50ms", "-q", "--trace"])
        .json()
        .spawn();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let pid = child.id();
    let doc = child.interrupt(LIMIT).exits(0).document();
    assert_eq!(doc["end_reason"], "interrupted");
    // Only this run's: another traced run may share the machine.
    assert!(instances_of(pid).is_empty(), "{:?}", instances_of(pid));
    assert!(own_tracefs_mounts_of(pid).is_empty());
}

#[test]
fn bad_input_is_one_line_exit_2() {
    let _turn = alongside();
    for args in [
        vec!["noise", "-a", "4095"],
        vec!["noise", "-a", "x"],
        vec!["noise", "-D", "0"],
        vec!["noise", "-T", "0"],
        vec!["noise", "--source", "nosuch"],
        vec!["noise", "--source", "realtime"],
        vec!["noise", "--trace-buffer-kb", "100"],
        vec!["noise", "--trace", "--trace-buffer-kb", "1"],
        vec!["noise", "--json", "/nonexistent/dir/n.json"],
        vec!["noise", "-p", "0"],
    ] {
        Run::new(&args).exits(2).one_line();
    }
}

/// Issue 26: a busy loop at SCHED_FIFO on every CPU leaves the aggregator
/// (normal priority) only what RT throttling gives it; each loop ends by
/// itself at its duration, on the counter it reads (a hang's bound,
/// duration + 5 s, and the run is killed if it overstays).
#[test]
fn run_on_every_cpu_ends_on_time() {
    let _turn = alone();
    let cpus = every_cpu();
    let args = ["noise", "-a", &cpus, "-D", "2", "--calibrate", "50ms", "-q"];
    let t0 = std::time::Instant::now();
    let out = Run::new(args)
        .json()
        .wait_within(std::time::Duration::from_secs(2 + 5));
    eprintln!("{args:?}: ended after {:?}", t0.elapsed());
    let doc = out.exits(0).document();
    assert_eq!(doc["end_reason"], "duration");
    assert_eq!(
        doc["series"].as_array().unwrap().len(),
        rtscope_core::units::online_cpus().len()
    );
}
