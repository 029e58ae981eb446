//! `rtscope cyclictest ARGS...`: a cyclictest command line, run unchanged
//! by rtscope's cyclic measurement ([`super::cyclic`], nothing measured
//! here), printing what cyclictest prints and writing rtscope's result
//! document too.
//!
//! ```text
//! args::parse (cyclictest's getopt_long and checks) ─► CtArgs
//!   ─► resolve (this machine's CPUs) ─► CyclicOptions + cyclictest's display
//!   ─► cyclic::plan / cyclic::execute (the live display: output::live, cyclictest's layout on stdout)
//!   ─► files: rtscope's document (--rtscope-json, default rtscope-cyclictest-DATE-TIME-PID.json),
//!      --rtscope-report, cyclictest's --json and --histfile
//!   ─► stdout: with -q the status lines, the -h histogram, -b's break lines
//! ```
//!
//! stdout carries cyclictest's output only; rtscope's header, warnings, the
//! options it does not honour and where its document went are on stderr.

pub mod args;
pub mod resolve;

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::error::{usage, EXIT_OK, EXIT_RUN};
use crate::experiment::cyclic::{self, CyclicPlan, Outcome};
use crate::experiment::run::Outputs;
use crate::output::cyclictest::{self as ct_out, JsonRun, JsonThread};
use crate::output::files::OutputPaths;
use crate::output::live::ThreadStatus;
use crate::output::{histogram as hist_out, say};

#[cfg(test)]
mod deliver_tests;
use rtscope_core::record::{MicrosecondBins, RunningStats};
use rtscope_core::result::{BreakEvent, ResultDocument};

/// The default name of rtscope's document:
/// `rtscope-cyclictest-YYYYMMDD-HHMMSS-PID.json` (UTC; the process id keeps
/// runs started in the same second apart).
fn default_json_name(now: std::time::SystemTime, pid: u32) -> PathBuf {
    let t = humantime::format_rfc3339_seconds(now).to_string();
    let stamp: String = t
        .trim_end_matches('Z')
        .chars()
        .filter(|c| *c != '-' && *c != ':')
        .map(|c| if c == 'T' { '-' } else { c })
        .collect();
    PathBuf::from(format!("rtscope-cyclictest-{stamp}-{pid}.json"))
}

/// Where the outputs go.
#[derive(Debug, PartialEq)]
struct Files {
    rtscope_json: Option<PathBuf>,
    report: Option<PathBuf>,
    /// cyclictest's `--json` (`-`: stdout).
    json: Option<PathBuf>,
    histfile: Option<PathBuf>,
}

impl Files {
    /// Checks every path before anything runs; the default document path
    /// (`default`) is dropped, with a warning, where it cannot be written.
    fn of(a: &args::CtArgs, default: PathBuf) -> Result<Files> {
        let mut paths = OutputPaths::new();
        let json = a.json.as_ref().map(PathBuf::from);
        if let Some(p) = json.as_deref().filter(|p| *p != Path::new("-")) {
            paths.add("--json", Some(p))?;
        }
        let histfile = a
            .histfile
            .as_ref()
            .map(PathBuf::from)
            .filter(|_| a.histogram > 0);
        paths.add("--histfile", histfile.as_deref())?;
        let report = a.rtscope_report.as_ref().map(PathBuf::from);
        paths.add("--rtscope-report", report.as_deref())?;
        let rtscope_json = match (&a.rtscope_json, a.no_rtscope_json) {
            (_, true) => None,
            (Some(p), false) => {
                let p = PathBuf::from(p);
                paths.add("--rtscope-json", Some(&p))?;
                Some(p)
            }
            (None, false) => {
                let p = default;
                match paths.add("--rtscope-json", Some(&p)) {
                    Ok(()) => Some(p),
                    Err(e) => {
                        if !a.quiet {
                            eprintln!(
                                "warning: rtscope's result document is not written ({}): give --rtscope-json=FILE",
                                crate::error::one_line(&e)
                            );
                        }
                        None
                    }
                }
            }
        };
        Ok(Files {
            rtscope_json,
            report,
            json,
            histfile,
        })
    }
}

/// `rtscope cyclictest ARGS...`: the exit code.
pub fn run(words: &[String]) -> Result<i32> {
    let a = args::parse(words).map_err(usage)?;
    if a.help {
        say(&args::help());
        return Ok(EXIT_OK);
    }
    let r = resolve::resolve(&a, &resolve::Machine::this()).map_err(usage)?;
    let files = Files::of(
        &a,
        default_json_name(std::time::SystemTime::now(), std::process::id()),
    )?;
    let mut options = r.options;
    options.run.outputs = Outputs {
        quiet: a.quiet,
        ..Outputs::default()
    };
    let plan = cyclic::plan(&options)?;
    for m in a.messages.iter().chain(&r.messages) {
        eprintln!("{m}");
    }
    // -q leaves rtscope's own lines out of stderr (a `2>&1` recipe reads
    // only cyclictest's); the document keeps the warnings.
    if !a.quiet {
        for n in &r.notes {
            eprintln!("warning: {n}");
        }
    }
    let Outcome {
        mut doc,
        bins,
        status,
        thread_errors,
        ..
    } = cyclic::execute(&plan).map_err(cyclictest_advice)?;
    doc.warnings.extend(r.notes.iter().cloned());
    let out = Finished {
        doc,
        bins,
        status,
        thread_errors,
    };
    Ok(deliver(a.breaktrace > 0, &plan, &out, &files, &mut say))
}

/// rtscope's advice for a run refused real-time scheduling ends in
/// `--no-rt`, which is not a cyclictest option: the cyclictest line's way to
/// the same (SCHED_OTHER) is to leave out the priority.
fn cyclictest_advice(e: anyhow::Error) -> anyhow::Error {
    let text = crate::error::one_line(&e);
    match text.strip_suffix("or use --no-rt") {
        Some(head) if e.downcast_ref::<crate::error::UsageError>().is_none() => anyhow::anyhow!(
            "{head}or leave out -p (and --policy=fifo/rr): cyclictest then runs SCHED_OTHER"
        ),
        _ => e,
    }
}

/// What a finished run hands to [`deliver`].
struct Finished {
    doc: ResultDocument,
    bins: Vec<(MicrosecondBins, RunningStats)>,
    status: Vec<ThreadStatus>,
    thread_errors: Vec<String>,
}

/// Writes the files, then prints (through `out`) what cyclictest prints at
/// the end: with `-q` and no `-h` the status lines, the histogram, with
/// `-b` (`breaktrace`) the break lines. The exit code.
fn deliver(
    breaktrace: bool,
    plan: &CyclicPlan,
    out: &Finished,
    files: &Files,
    say: &mut dyn FnMut(&str),
) -> i32 {
    let style = plan.cyclictest.clone().unwrap_or_default();
    let mut errors = Vec::new();
    let mut written = Vec::new();
    let mut file = |flag: &str, p: &Path, res: std::io::Result<()>| match res {
        Ok(()) => written.push(format!("{flag}: {}", p.display())),
        Err(e) => errors.push(format!("{flag} {}: {e}", p.display())),
    };
    if let Some(p) = &files.rtscope_json {
        file("result", p, out.doc.write(p));
    }
    if let Some(p) = &files.report {
        file(
            "report",
            p,
            crate::report::write_html(std::slice::from_ref(&out.doc), p),
        );
    }
    let code = if out.thread_errors.is_empty() { 0 } else { 1 };
    let json = files.json.as_ref().map(|p| {
        (
            p,
            ct_out::json_text(&json_run(plan, &out.doc, &out.bins, code)),
        )
    });
    if let Some((p, text)) = json.as_ref().filter(|(p, _)| **p != Path::new("-")) {
        file(
            "cyclictest --json",
            p,
            rtscope_core::file::write_atomic(p, text.as_bytes()),
        );
    }
    let histogram = style.histogram.then(|| {
        let cols: Vec<_> = out.bins.iter().map(|(b, s)| (b, s)).collect();
        hist_out::cyclictest_text_with(&cols, false, style.histofall)
    });
    if let (Some(text), Some(p)) = (&histogram, &files.histfile) {
        file(
            "cyclictest --histfile",
            p,
            rtscope_core::file::write_atomic(p, text.as_bytes()),
        );
    }
    // stdout, in cyclictest's order.
    if let Some((_, text)) = json.as_ref().filter(|(p, _)| **p == Path::new("-")) {
        say(text);
    }
    if style.quiet && !style.histogram {
        say(&ct_out::status_lines(&out.status, style.nsecs));
    }
    if let Some(text) = histogram.filter(|_| files.histfile.is_none()) {
        say(&text);
    }
    if breaktrace {
        say(&break_lines(
            &out.status,
            out.doc.break_event.as_ref(),
            style.nsecs,
        ));
    }
    for w in written.iter().filter(|_| !style.quiet) {
        eprintln!("rtscope: {w}");
    }
    for e in out.thread_errors.iter().chain(&errors) {
        eprintln!("error: {e}");
    }
    if errors.is_empty() && out.thread_errors.is_empty() {
        EXIT_OK
    } else {
        EXIT_RUN
    }
}

/// cyclictest's lines after a run with `-b`: the threads' ids, and which
/// thread broke at what latency (its unit).
fn break_lines(status: &[ThreadStatus], event: Option<&BreakEvent>, nsecs: bool) -> String {
    let mut s = String::from("# Thread Ids:");
    for t in status {
        s.push_str(&format!(" {:05}", t.tid));
    }
    s.push('\n');
    if let Some(b) = event {
        let tid = b
            .series
            .strip_prefix("thread ")
            .and_then(|i| i.parse::<usize>().ok())
            .and_then(|i| status.get(i))
            .map_or(0, |t| t.tid);
        s.push_str(&format!("# Break thread: {tid}\n"));
        s.push_str(&format!(
            "# Break value: {}\n",
            ct_out::unit(b.latency_ns, nsecs).max(0)
        ));
    }
    s
}

/// The plan an rtscope run of cyclictest line `a` records, for an import
/// of cyclictest's output: the same settings under the same keys, so that
/// `compare` sees equal settings as equal. `cpus`: each thread's CPU as the
/// output recorded it (`None`: not recorded), used where the line pins the
/// threads. What cyclictest has no counterpart for (`start_delay_ns`,
/// `spikes`, `ring_capacity`) is left out.
pub fn recorded_plan(a: &args::CtArgs, cpus: &[Option<usize>]) -> Result<serde_json::Value> {
    let n = cpus.len().max(1);
    let listed = a
        .placement
        .cpus
        .as_deref()
        .and_then(|v| rtscope_core::units::parse_cpu_list(v).ok())
        .unwrap_or_default();
    let top = listed
        .iter()
        .chain(cpus.iter().flatten())
        .copied()
        .max()
        .unwrap_or(0)
        .max(n - 1);
    // The machine it ran on, as far as the output tells: n CPUs for -S and -t.
    let machine = resolve::Machine {
        allowed: (0..n).collect(),
        online: (0..=top).collect(),
    };
    let r = resolve::resolve(a, &machine).map_err(usage)?;
    let mut options = r.options;
    options.threads = Some(n);
    options.cpus = None;
    let mut plan = cyclic::plan(&options)?;
    let pool = if listed.is_empty() {
        (0..n).collect()
    } else {
        listed
    };
    for (i, t) in plan.threads.iter_mut().enumerate() {
        t.cpus = if a.placement.pinned {
            vec![cpus
                .get(i)
                .copied()
                .flatten()
                .unwrap_or(pool[i % pool.len()])]
        } else {
            vec![]
        };
    }
    let mut v = serde_json::to_value(&plan)?;
    if let Some(o) = v.as_object_mut() {
        for k in ["start_delay_ns", "spikes", "ring_capacity"] {
            o.remove(k);
        }
    }
    Ok(v)
}

/// Seconds since the epoch of an RFC 3339 time (0 if unreadable).
fn epoch_s(rfc3339: &str) -> i64 {
    humantime::parse_rfc3339_weak(rfc3339.trim_end_matches('Z'))
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs() as i64)
}

/// What cyclictest's `--json` document of this run holds.
fn json_run(
    plan: &CyclicPlan,
    doc: &ResultDocument,
    bins: &[(MicrosecondBins, RunningStats)],
    code: i32,
) -> JsonRun {
    let nsecs = plan.cyclictest.as_ref().is_some_and(|s| s.nsecs);
    let start = epoch_s(&doc.started_at);
    let threads = plan
        .threads
        .iter()
        .map(|tp| {
            let s = doc
                .series
                .iter()
                .find(|s| s.label == format!("thread {}", tp.index));
            let st = s.map(|s| &s.stats);
            let count = st.map_or(0, |st| st.count);
            let histogram = bins
                .get(tp.index)
                .map(|(b, _)| {
                    b.bins
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| **c > 0)
                        .map(|(i, c)| (if nsecs { i as u64 * 1000 } else { i as u64 }, *c))
                        .collect()
                })
                .unwrap_or_default();
            JsonThread {
                histogram,
                cycles: count,
                min: st
                    .filter(|_| count > 0)
                    .map_or(0, |st| ct_out::unit(st.min_ns, nsecs)),
                max: st
                    .filter(|_| count > 0)
                    .map_or(0, |st| ct_out::unit(st.max_ns, nsecs)),
                avg: st.filter(|_| count > 0).map_or(0.0, |st| {
                    if nsecs {
                        st.mean_ns
                    } else {
                        st.mean_ns / 1000.0
                    }
                }),
                cpu: match tp.cpus.as_slice() {
                    [c] => *c as i64,
                    _ => -1,
                },
            }
        })
        .collect();
    JsonRun {
        cmdline: doc.command_line.join(" "),
        version: format!("rtscope {}", env!("CARGO_PKG_VERSION")),
        start_time: ct_out::rfc2822(start),
        end_time: ct_out::rfc2822(start + (doc.duration_ns / 1_000_000_000) as i64),
        return_code: code,
        nodename: doc.system.hostname.clone().unwrap_or_default(),
        release: doc.system.kernel_release.clone(),
        kernel_version: doc.system.kernel_version.clone(),
        machine: doc.system.arch.clone(),
        realtime: doc.system.preempt_rt,
        nsecs,
        threads,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_document_name_has_the_time() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_795_648_249);
        assert_eq!(
            default_json_name(t, 4242),
            PathBuf::from("rtscope-cyclictest-20261125-231049-4242.json")
        );
    }

    fn plan_of(line: &str, cpus: &[Option<usize>]) -> serde_json::Value {
        let a = args::parse_cmdline(line).unwrap();
        recorded_plan(&a, cpus).unwrap()
    }

    /// An import records what `rtscope cyclictest` with the same line
    /// records, under the same keys.
    #[test]
    fn an_imported_line_records_the_plan_of_a_run() {
        let v = plan_of(
            "cyclictest -m -S -p 95 -i 1000 -h 400 -D 2",
            &[Some(0), Some(1)],
        );
        assert_eq!(v["period_ns"], 1_000_000);
        assert_eq!(v["distance_ns"], 0);
        assert_eq!(v["duration_ns"], 2_000_000_000u64);
        assert_eq!(v["loops"], serde_json::Value::Null);
        assert_eq!(v["wake"], "absolute");
        assert_eq!(v["clock"], "monotonic");
        assert_eq!(v["rt"]["policy"], "fifo");
        assert_eq!(v["rt"]["priority"], 95);
        assert_eq!(v["rt"]["default_system"], false);
        assert_eq!(v["loads"], serde_json::json!([]));
        assert_eq!(v["histogram_max_ns"], 400_000);
        assert_eq!(v["threads"][0]["cpus"], serde_json::json!([0]));
        assert_eq!(v["threads"][1]["cpus"], serde_json::json!([1]));
        assert_eq!(v["threads"][1]["period_ns"], 1_000_000);
        for k in ["start_delay_ns", "spikes", "ring_capacity"] {
            assert!(v.get(k).is_none(), "{k}");
        }
        // The keys of a real run's plan, less those three.
        let a = args::parse_cmdline("cyclictest -m -S -p 95 -i 1000 -h 400 -D 2").unwrap();
        let r = resolve::resolve(&a, &resolve::Machine::this()).unwrap();
        let mut run = serde_json::to_value(cyclic::plan(&r.options).unwrap()).unwrap();
        for k in ["start_delay_ns", "spikes", "ring_capacity"] {
            run.as_object_mut().unwrap().remove(k);
        }
        let keys =
            |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&v), keys(&run));
        assert_eq!(v["rt"], run["rt"]);
        assert_eq!(v["wake"], run["wake"]);
        assert_eq!(v["period_ns"], run["period_ns"]);
    }

    #[test]
    fn imported_threads_are_pinned_as_the_line_pins_them() {
        // Unpinned: no CPU, whatever the output says.
        let v = plan_of("cyclictest -t 2 -p 80 -i 500", &[Some(1), Some(0)]);
        assert_eq!(v["threads"][0]["cpus"], serde_json::json!([]));
        assert_eq!(v["threads"][1]["period_ns"], 1_000_000);
        assert_eq!(v["distance_ns"], 500_000);
        // Pinned, CPU not recorded: round-robin over the list.
        let v = plan_of("cyclictest -a 2-3 -t 3 -p 80", &[None, None, None]);
        let cpus: Vec<_> = (0..3).map(|i| v["threads"][i]["cpus"][0].clone()).collect();
        assert_eq!(cpus, [2, 3, 2]);
        // Defaults: SCHED_OTHER, one thread.
        let v = plan_of("cyclictest -q -l 100", &[Some(0)]);
        assert_eq!(v["rt"]["policy"], "other");
        assert_eq!(v["loops"], 100);
        assert_eq!(v["threads"].as_array().unwrap().len(), 1);
        // -p 0 on a 4-thread run: priority 5, as cyclictest chose.
        let v = plan_of("cyclictest -S -p 0", &[Some(0), Some(1), Some(2), Some(3)]);
        assert_eq!(v["rt"]["priority"], 5);
        assert!(recorded_plan(
            &args::parse_cmdline("cyclictest --priospread -p 9").unwrap(),
            &[None]
        )
        .is_err());
    }

    fn status(index: usize, tid: i32) -> ThreadStatus {
        ThreadStatus {
            index,
            tid,
            ..ThreadStatus::default()
        }
    }

    #[test]
    fn break_lines_name_the_thread_and_its_value() {
        let st = [status(0, 31429), status(1, 7)];
        assert_eq!(break_lines(&st, None, false), "# Thread Ids: 31429 00007\n");
        let b = BreakEvent {
            threshold_ns: 5999,
            series: "thread 1".into(),
            seq: 3,
            t_ns: 0,
            latency_ns: 71_999,
        };
        assert_eq!(
            break_lines(&st, Some(&b), false),
            "# Thread Ids: 31429 00007\n# Break thread: 7\n# Break value: 71\n"
        );
        assert!(break_lines(&st, Some(&b), true).ends_with("# Break value: 71999\n"));
        let b = BreakEvent {
            series: "thread 9".into(),
            latency_ns: -5,
            ..b
        };
        assert!(
            break_lines(&st, Some(&b), false).ends_with("# Break thread: 0\n# Break value: 0\n")
        );
    }

    /// cyclictest's --json of a run: each thread's figures in its unit, its
    /// non-zero bins, its CPU where pinned.
    #[test]
    fn the_json_document_of_a_run() {
        let a = args::parse_cmdline("cyclictest -t 2 -p 80 -h 5 -i 500").unwrap();
        let r = resolve::resolve(&a, &resolve::Machine::this()).unwrap();
        let mut plan = cyclic::plan(&r.options).unwrap();
        plan.threads[0].cpus = vec![1];
        let series = |label: &str, count, min, max, mean| {
            let mut s = rtscope_core::result::Series {
                label: label.into(),
                ..Default::default()
            };
            (
                s.stats.count,
                s.stats.min_ns,
                s.stats.max_ns,
                s.stats.mean_ns,
            ) = (count, min, max, mean);
            s
        };
        let mut doc = ResultDocument::new(
            "cyclic",
            serde_json::Value::Null,
            rtscope_core::system::SystemSnapshot {
                hostname: Some("board".into()),
                kernel_release: "6.1.0-rt".into(),
                preempt_rt: true,
                ..Default::default()
            },
            vec![
                series("thread 0", 3, 1_999, 9_500, 4_321.0),
                series("thread 1", 0, 0, 0, 0.0),
                series("all", 3, 1_999, 9_500, 4_321.0),
            ],
        );
        doc.started_at = "2026-11-25T23:10:49.5Z".into();
        doc.duration_ns = 2_400_000_000;
        let mut b0 = MicrosecondBins::new(5, 5);
        for v in [1_999, 2_500, 9_500] {
            b0.record(v, 0);
        }
        let bins = vec![
            (b0, RunningStats::default()),
            (MicrosecondBins::new(5, 5), RunningStats::default()),
        ];
        let j = json_run(&plan, &doc, &bins, 0);
        assert_eq!(j.start_time, "Wed, 25 Nov 2026 23:10:49 +0000");
        assert_eq!(j.end_time, "Wed, 25 Nov 2026 23:10:51 +0000");
        assert_eq!(
            (j.nodename.as_str(), j.release.as_str()),
            ("board", "6.1.0-rt")
        );
        assert!(j.realtime && !j.nsecs);
        assert_eq!(j.threads.len(), 2);
        let t = &j.threads[0];
        assert_eq!(t.histogram, [(1, 1), (2, 1)]);
        assert_eq!((t.cycles, t.min, t.max, t.cpu), (3, 1, 9, 1));
        assert!((t.avg - 4.321).abs() < 1e-9);
        let t = &j.threads[1];
        assert_eq!((t.cycles, t.min, t.max, t.avg, t.cpu), (0, 0, 0, 0.0, -1));
        assert!(t.histogram.is_empty());
        // -N: ns, and the bins at their lower edge in ns.
        plan.cyclictest.as_mut().unwrap().nsecs = true;
        let j = json_run(&plan, &doc, &bins, 1);
        let t = &j.threads[0];
        assert_eq!(t.histogram, [(1000, 1), (2000, 1)]);
        assert_eq!((t.min, t.max), (1_999, 9_500));
        assert!((t.avg - 4_321.0).abs() < 1e-9);
        assert!(j.nsecs);
        assert_eq!(j.return_code, 1);
    }

    #[test]
    fn the_advice_for_a_refused_priority_is_a_cyclictest_option() {
        let e = cyclictest_advice(anyhow::anyhow!(
            "not allowed to use SCHED_FIFO priority 80 (RLIMIT_RTPRIO is 0): run as root, or use --no-rt"
        ));
        assert_eq!(
            e.to_string(),
            "not allowed to use SCHED_FIFO priority 80 (RLIMIT_RTPRIO is 0): run as root, or leave out -p (and --policy=fifo/rr): cyclictest then runs SCHED_OTHER"
        );
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_RUN);
        let e = cyclictest_advice(anyhow::anyhow!("a thread failed"));
        assert_eq!(e.to_string(), "a thread failed");
        let e = cyclictest_advice(usage("bad, or use --no-rt"));
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
        assert_eq!(e.to_string(), "bad, or use --no-rt");
    }

    #[test]
    fn times_of_the_document() {
        assert_eq!(epoch_s("2026-11-25T23:10:49Z"), 1_795_648_249);
        assert_eq!(epoch_s("2026-11-25T23:10:49.084719Z"), 1_795_648_249);
        assert_eq!(epoch_s("yesterday"), 0);
    }
}
