//! cyclictest's outputs as rtscope result documents.
//!
//! Two inputs:
//!
//! - the `--json=FILE` document (rt-tests 2.x): top-level keys with cyclictest's
//!   quirky trailing colons (`"cmdline:"`, `"rt_test_version:"`), `sysinfo`
//!   (uname), and per thread `histogram` (`{"bin": count}`, only with `-h`),
//!   `cycles`, `min`, `max`, `avg`, `cpu`, `node`;
//! - the `-h`/`-H` histogram text: `# Histogram`, one row per bin (`000012
//!   000034<TAB>000056`, all-zero rows possibly removed), then `# Total:`
//!   (absent in older versions), `# Min Latencies:`, `# Avg Latencies:`,
//!   `# Max Latencies:`, `# Histogram Overflows:` and the overflow cycle lists.
//!   With `-H` an extra summary column is present; it is recognised and dropped.
//!
//! Conversion: cyclictest truncates latencies to whole microseconds, so a
//! value of `v` µs (a bin, a min or a max) stands for `[v, v+1)` µs and
//! becomes `v·1000 + 500` ns, the middle of that interval; series carry
//! `resolution_ns = 1000`, which widens their confidence intervals. With
//! `-N` (nanoseconds) values are taken as they are (`resolution_ns = 1`).
//! Samples beyond the histogram's range (its overflows) are counted in the
//! attribute `histogram_overflows` and recorded at the maximum latency, so
//! percentiles above the last bin are upper bounds (a warning says so).
//!
//! Every input error is an [`ImportError`] with one line of text; nothing here
//! panics on any input (fuzzed with proptest).

use std::collections::BTreeMap;
use std::io::{BufRead, Read};
use std::path::Path;

use serde::Deserialize;
use serde_json::{json, Value};

use super::ctjson;
use crate::experiment::cyclictest::args;

use rtscope_core::record::{LatencyHistogram, HIST_HIGHEST_NS};
use rtscope_core::result::{EndReason, ResultDocument, Series, SeriesCounters, Stats, Timeline};
use rtscope_core::system::{preemption_model, SystemSnapshot};

/// Bad input, as one line.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct ImportError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, ImportError> {
    Err(ImportError(msg.into()))
}

/// The largest plausible count in one bin (beyond it the input is not real data).
const MAX_COUNT: u64 = 1 << 53;

/// How cyclictest's numbers become ns.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Scale {
    mult: u64,
    offset: u64,
}

const US: Scale = Scale {
    mult: 1000,
    offset: 500,
};
const NS: Scale = Scale { mult: 1, offset: 0 };

impl Scale {
    fn ns(&self, v: u64) -> Result<u64, ImportError> {
        v.checked_mul(self.mult)
            .and_then(|x| x.checked_add(self.offset))
            .filter(|x| *x <= HIST_HIGHEST_NS)
            .ok_or_else(|| ImportError(format!("latency {v} is beyond 100 s")))
    }

    fn ns_f(&self, v: f64) -> Result<f64, ImportError> {
        let x = v * self.mult as f64 + self.offset as f64;
        if x.is_finite() && x.abs() <= HIST_HIGHEST_NS as f64 {
            Ok(x)
        } else {
            err(format!("latency {v} is out of range"))
        }
    }
}

/// One thread's figures, in cyclictest's unit.
#[derive(Debug, Clone, Default)]
struct Thread {
    index: usize,
    attrs: BTreeMap<String, Value>,
    /// The bins' counts, recorded at their values in ns.
    hist: LatencyHistogram,
    /// The lowest and highest bin with a non-zero count (cyclictest's unit).
    first_bin: Option<u64>,
    last_bin: Option<u64>,
    /// Whether a histogram was present at all.
    has_histogram: bool,
    overflows: u64,
    /// Total samples (bins + overflows, or `cycles`).
    count: u64,
    min: Option<i64>,
    max: Option<i64>,
    avg: Option<f64>,
    /// The CPU cyclictest recorded for it (`--json`'s `cpu`; not for -1).
    cpu: Option<usize>,
}

impl Thread {
    /// Adds `count` samples of bin `bin` (`ns`: its value in ns).
    fn add_bin(&mut self, bin: u64, ns: u64, count: u64) {
        self.hist.record_n(ns, count);
        self.first_bin = Some(self.first_bin.map_or(bin, |f| f.min(bin)));
        self.last_bin = Some(self.last_bin.map_or(bin, |l| l.max(bin)));
    }
}

/// The modification time of `p` as RFC 3339 (now, if unreadable).
pub fn file_time(p: &Path) -> String {
    let t = std::fs::metadata(p)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| std::time::SystemTime::now());
    humantime::format_rfc3339_seconds(t).to_string()
}

/// Parses cyclictest's `"%a, %d %b %Y %T %z"` time (`Mon, 23 Nov 2026 09:46:26
/// +0000`) into seconds since the epoch.
pub fn parse_rfc2822(s: &str) -> Option<i64> {
    let s = s.trim();
    let s = s.split_once(',').map_or(s, |(_, r)| r).trim();
    let mut it = s.split_whitespace();
    let day: i64 = it.next()?.parse().ok()?;
    let mon = it.next()?;
    let year: i64 = it.next()?.parse().ok()?;
    let hms = it.next()?;
    let zone = it.next().unwrap_or("+0000");
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| m.eq_ignore_ascii_case(mon))? as i64
        + 1;
    let mut t = hms.split(':');
    let (h, m, sec): (i64, i64, i64) = (
        t.next()?.parse().ok()?,
        t.next()?.parse().ok()?,
        t.next()?.parse().ok()?,
    );
    if !(1..=31).contains(&day)
        || !(0..24).contains(&h)
        || !(0..60).contains(&m)
        || !(0..=60).contains(&sec)
        || !(1970..=9999).contains(&year)
    {
        return None;
    }
    let off = match zone {
        "GMT" | "UTC" | "Z" => 0,
        z if z.len() == 5 && (z.starts_with('+') || z.starts_with('-')) => {
            let hh: i64 = z[1..3].parse().ok()?;
            let mm: i64 = z[3..5].parse().ok()?;
            let v = hh * 3600 + mm * 60;
            if z.starts_with('-') {
                -v
            } else {
                v
            }
        }
        _ => return None,
    };
    // Days from civil (Howard Hinnant's algorithm).
    let (y, mo) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * mo + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + m * 60 + sec - off)
}

fn rfc3339(epoch_s: i64) -> Option<String> {
    let t = std::time::UNIX_EPOCH
        .checked_add(std::time::Duration::from_secs(u64::try_from(epoch_s).ok()?))?;
    Some(humantime::format_rfc3339_seconds(t).to_string())
}

/// Looks a key up with or without cyclictest's trailing colon.
fn key<'a>(o: &'a serde_json::Map<String, Value>, name: &str) -> Option<&'a Value> {
    o.get(name).or_else(|| o.get(&format!("{name}:")))
}

fn as_u64(v: &Value, what: &str) -> Result<u64, ImportError> {
    ctjson::whole(v)
        .ok_or_else(|| ImportError(format!("{what}: expected a whole number, found {v}")))
}

fn as_i64(v: &Value, what: &str) -> Result<i64, ImportError> {
    v.as_i64()
        .ok_or_else(|| ImportError(format!("{what}: expected a whole number, found {v}")))
}

/// A `cyclictest --json` document as a result document. `fallback_time` is
/// used when the file holds no readable start time.
#[cfg(test)]
pub fn from_json(bytes: &[u8], fallback_time: String) -> Result<ResultDocument, ImportError> {
    // A byte-order mark (Windows editors write one) is not JSON but harmless.
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    from_json_reader(bytes, fallback_time)
}

/// Like [`from_json`], read as a stream (each histogram straight into bins,
/// never a JSON tree: see [`super::ctjson`]). The input must not start with a
/// byte-order mark.
pub fn from_json_reader(
    input: impl Read,
    fallback_time: String,
) -> Result<ResultDocument, ImportError> {
    let mut de = serde_json::Deserializer::from_reader(input);
    let parsed = ctjson::Obj::<ctjson::Doc>::deserialize(&mut de)
        .and_then(|d| de.end().map(|()| d))
        .map_err(|e| ImportError(format!("not a cyclictest JSON file: {e}")))?;
    let ctjson::Obj::Object(doc) = parsed else {
        return err("not a cyclictest JSON file: not a JSON object");
    };
    let o = &doc.fields;
    let threads_v = match doc.threads {
        Some(ctjson::Obj::Object(t)) => t,
        Some(ctjson::Obj::Not(ty)) => {
            return err(format!(
                "not a cyclictest JSON file: \"thread\" is not an object but {ty}"
            ))
        }
        None => return err("not a cyclictest JSON file: no \"thread\" object"),
    };
    let cmdline = key(o, "cmdline").and_then(Value::as_str).unwrap_or("");
    let command_line: Vec<String> = cmdline.split_whitespace().map(str::to_string).collect();
    // The command line, read as `rtscope cyclictest` reads one.
    let parsed = args::parse_cmdline(cmdline);
    let nsecs = match &parsed {
        Ok(a) => a.nsecs,
        // A line this parser refuses (options of older versions): -N alone or bundled.
        Err(_) => command_line.iter().any(|a| {
            a == "-N"
                || a == "--nsecs"
                || (a.starts_with('-')
                    && !a.starts_with("--")
                    && a.len() > 2
                    && a[1..].chars().all(|c| c.is_ascii_alphabetic())
                    && a.contains('N'))
        }),
    };
    let scale = if nsecs { NS } else { US };

    let mut threads = Vec::new();
    for (name, t) in threads_v {
        let index: usize = name
            .parse()
            .map_err(|_| ImportError(format!("thread \"{name}\": not a thread number")))?;
        let what = |f: &str| format!("thread {name}: {f}");
        let t = match t {
            ctjson::Obj::Object(t) => t,
            ctjson::Obj::Not(ty) => return err(what(&format!("not an object but {ty}"))),
        };
        let hist = t.histogram;
        let t = t.fields;
        let cycles = as_u64(
            t.get("cycles")
                .ok_or_else(|| ImportError(what("no \"cycles\"")))?,
            &what("cycles"),
        )?;
        let mut th = Thread {
            index,
            count: cycles,
            ..Default::default()
        };
        if let Some(h) = hist {
            let h = match h {
                ctjson::Obj::Object(h) => h,
                ctjson::Obj::Not(ty) => {
                    return err(what(&format!("\"histogram\" is not an object but {ty}")))
                }
            };
            if let Some(bad) = &h.bad {
                return err(what(bad));
            }
            th.has_histogram = !h.pairs.is_empty();
            let mut sum = 0u64;
            for (b, c) in h.pairs {
                if c > MAX_COUNT {
                    return err(what(&format!(
                        "histogram bin {b}: count {c} is not plausible"
                    )));
                }
                let ns = scale.ns(b).map_err(|e| ImportError(what(&e.0)))?;
                if c > 0 {
                    th.add_bin(b, ns, c);
                    sum = sum.saturating_add(c);
                }
            }
            if th.has_histogram {
                th.overflows = cycles.saturating_sub(sum);
                th.count = cycles.max(sum);
            }
        }
        if th.count > MAX_COUNT {
            return err(what("cycles: not plausible"));
        }
        if th.count > 0 {
            th.min = t.get("min").map(|v| as_i64(v, &what("min"))).transpose()?;
            th.max = t.get("max").map(|v| as_i64(v, &what("max"))).transpose()?;
            th.avg = t.get("avg").and_then(Value::as_f64);
        }
        for k in ["cpu", "node"] {
            if let Some(x) = t.get(k).and_then(Value::as_i64) {
                th.attrs.insert(k.into(), json!(x));
            }
        }
        th.cpu = t
            .get("cpu")
            .and_then(Value::as_i64)
            .and_then(|c| usize::try_from(c).ok());
        threads.push(th);
    }
    threads.sort_by_key(|t| t.index);
    if threads.is_empty() {
        return err("no threads in the \"thread\" object");
    }

    let sys = o.get("sysinfo").and_then(Value::as_object);
    let s = |k: &str| {
        sys.and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let realtime = sys
        .and_then(|m| m.get("realtime"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
        == 1;
    let version = s("version");
    let system = SystemSnapshot {
        hostname: Some(s("nodename")).filter(|x| !x.is_empty()),
        arch: s("machine"),
        kernel_release: s("release"),
        preemption_model: if version.is_empty() && !realtime {
            "unknown".into()
        } else {
            preemption_model(&version, realtime).to_string()
        },
        preempt_rt: realtime || version.contains("PREEMPT_RT"),
        kernel_version: version,
        ..Default::default()
    };

    let mut warnings = vec![format!(
        "imported from cyclictest {} --json: {}",
        key(o, "rt_test_version")
            .and_then(Value::as_str)
            .unwrap_or("(unknown version)"),
        if nsecs {
            "1 ns resolution (-N)"
        } else {
            "1 us resolution (values are whole microseconds, taken as the middle of each microsecond)"
        }
    )];
    warnings.push(
        "cyclictest does not count missed periods: overruns are not known (shown as 0); no timeline, no worst-sample times"
            .into(),
    );
    if !system.preempt_rt && !system.kernel_version.is_empty() {
        warnings.push(format!(
            "kernel is not PREEMPT_RT ({}): expect long tails",
            system.preemption_model
        ));
    }
    if threads.iter().all(|t| !t.has_histogram) {
        warnings.push(
            "cyclictest ran without -h: only count, min, avg and max are known; no percentiles or histogram"
                .into(),
        );
    }
    if let Some(rc) = o
        .get("return_code")
        .and_then(Value::as_i64)
        .filter(|r| *r != 0)
    {
        warnings.push(format!("cyclictest exited with return code {rc}"));
    }

    let parsed_start = key(o, "start_time")
        .and_then(Value::as_str)
        .and_then(parse_rfc2822);
    let parsed_end = key(o, "end_time")
        .and_then(Value::as_str)
        .and_then(parse_rfc2822);
    let started_at = parsed_start.and_then(rfc3339).unwrap_or_else(|| {
        warnings.push("no readable start_time: the file's modification time is shown".into());
        fallback_time.clone()
    });
    let ended_at = parsed_end
        .and_then(rfc3339)
        .unwrap_or_else(|| started_at.clone());
    let duration_ns = match (parsed_start, parsed_end) {
        (Some(a), Some(b)) if b >= a => ((b - a) as u64).saturating_mul(1_000_000_000),
        _ => 0,
    };
    let mut imported = serde_json::Map::new();
    imported.insert("source".into(), json!("cyclictest --json"));
    for k in [
        "rt_test_version",
        "file_version",
        "cmdline",
        "num_threads",
        "resolution_in_ns",
        "return_code",
    ] {
        if let Some(v) = key(o, k) {
            imported.insert(k.into(), v.clone());
        }
    }
    let cpus: Vec<Option<usize>> = threads.iter().map(|t| t.cpu).collect();
    let plan = settings(parsed, &cpus, imported, &mut warnings);
    let series = build_series(&threads, scale, &mut warnings)?;
    let mut doc = ResultDocument {
        command_line,
        started_at,
        ended_at,
        duration_ns,
        end_reason: EndReason::Imported,
        warnings,
        ..ResultDocument::new("cyclic", plan, system, series)
    };
    measuring_time(&mut doc);
    Ok(doc)
}

/// The plan of an import: the settings of the cyclictest command line in
/// the form `rtscope cyclic` and `rtscope cyclictest` record them
/// ([`recorded_plan`](crate::experiment::cyclictest::recorded_plan)), so
/// that `compare` treats equal settings as equal, and under `imported`
/// where the data came from (`compare` does not count it as a setting).
/// Without a readable command line only `imported` is known (a warning says
/// why).
fn settings(
    line: Result<args::CtArgs, String>,
    cpus: &[Option<usize>],
    imported: serde_json::Map<String, Value>,
    warnings: &mut Vec<String>,
) -> Value {
    let recorded = line
        .map_err(anyhow::Error::msg)
        .and_then(|a| crate::experiment::cyclictest::recorded_plan(&a, cpus));
    let mut plan = match recorded {
        Ok(Value::Object(p)) => p,
        Ok(_) => serde_json::Map::new(),
        Err(e) => {
            warnings.push(format!(
                "the cyclictest command line was not understood ({}): the run's settings are not known",
                crate::error::one_line(&e)
            ));
            serde_json::Map::new()
        }
    };
    plan.insert("imported".into(), Value::Object(imported));
    Value::Object(plan)
}

/// Records the settings of `cmdline`, the cyclictest command line a
/// histogram import came from (`rtscope import cyclictest --histogram FILE
/// --cmdline LINE`), in the import's plan as [`settings`] does for
/// `--json` (the threads' CPUs are not recorded in a histogram). A line
/// that is not understood is an error.
pub fn with_cmdline(doc: &mut ResultDocument, cmdline: &str) -> anyhow::Result<()> {
    let a = args::parse_cmdline(cmdline).map_err(|e| anyhow::anyhow!("--cmdline: {e}"))?;
    // The line's -h must be the file's: as many bins or more (all-zero rows
    // at the end may be cut), never fewer, never none.
    let bin_ns = if doc.warnings.iter().any(|w| w.contains("1 ns bins (-N)")) {
        1
    } else {
        1000
    };
    let rows = doc
        .series
        .iter()
        .filter_map(|s| s.attributes.get("histogram_range_ns")?.as_u64())
        .max()
        .map(|r| r / bin_ns);
    if let Some(rows) = rows.filter(|&r| r > u64::try_from(a.histogram).unwrap_or(0)) {
        return Err(anyhow::anyhow!(
            "--cmdline {}: the histogram file has {rows} rows (bins 0 to {}); the line that \
             wrote it had -h {rows} or more",
            if a.histogram > 0 {
                format!("says -h {}", a.histogram)
            } else {
                "has no -h/-H".to_string()
            },
            rows - 1
        ));
    }
    let nthreads = doc.series.iter().filter(|s| s.label != "all").count();
    contradictions(doc, &a, nthreads).map_err(|e| anyhow::anyhow!("--cmdline: {e}"))?;
    let mut imported = doc
        .plan
        .get("imported")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    imported.insert("cmdline".into(), json!(cmdline));
    let mut no = vec![];
    doc.plan = settings(Ok(a), &vec![None; nthreads], imported, &mut no);
    if let Some(w) = no.pop() {
        return Err(anyhow::anyhow!("--cmdline: {w}"));
    }
    doc.command_line = cmdline.split_whitespace().map(str::to_string).collect();
    measuring_time(doc);
    Ok(())
}

/// What a histogram file says that the command line cannot have written:
/// another number of threads than `-t N`, more samples on a thread than
/// `-l` loops, or than `-D` allows at `-i` (each thread wakes at most once
/// an interval; 2 % and 2 wake-ups of slack for the start and the end).
fn contradictions(
    doc: &ResultDocument,
    a: &crate::experiment::cyclictest::args::CtArgs,
    nthreads: usize,
) -> Result<(), String> {
    use crate::experiment::cyclictest::args::Threads;
    if let Threads::Count(n) = a.threads {
        if n > 0 && usize::try_from(n).ok() != Some(nthreads) {
            return Err(format!(
                "says -t {n}: the histogram file has {nthreads} thread column{}",
                if nthreads == 1 { "" } else { "s" }
            ));
        }
    }
    let most = doc
        .series
        .iter()
        .filter(|s| s.label != "all")
        .map(|s| s.stats.count)
        .max()
        .unwrap_or(0);
    if a.loops > 0 && most > a.loops.unsigned_abs() {
        return Err(format!(
            "says -l {}: the histogram file has {most} samples on one thread (at most {} with -l)",
            a.loops, a.loops
        ));
    }
    if a.duration_s > 0 && a.interval > 0 {
        let cap = a.duration_s as f64 * 1e6 / a.interval as f64;
        if most as f64 > cap * 1.02 + 2.0 {
            return Err(format!(
                "says -D {}s -i {}: the histogram file has {most} samples on one thread, \
                 more than that many seconds at that interval give ({:.0})",
                a.duration_s, a.interval, cap
            ));
        }
    }
    Ok(())
}

/// The measuring time of an import whose file does not give it (a
/// histogram, a `--json` file without readable dates), from its settings:
/// the longest of each thread's samples times its period (cyclictest's
/// `-i` plus `-d` per thread), at most the `-D` asked for; a warning says
/// so. Without settings it stays 0 (not known), and a warning says what
/// that leaves out.
fn measuring_time(doc: &mut ResultDocument) {
    if doc.duration_ns > 0 {
        return;
    }
    let periods: Vec<u64> = doc
        .plan
        .get("threads")
        .and_then(Value::as_array)
        .map(|t| {
            t.iter()
                .map(|t| t.get("period_ns").and_then(Value::as_u64).unwrap_or(0))
                .collect()
        })
        .unwrap_or_default();
    let est = doc
        .series
        .iter()
        .filter_map(|s| {
            let k = s.attributes.get("thread").and_then(Value::as_u64)? as usize;
            Some(s.stats.count.saturating_mul(*periods.get(k)?))
        })
        .max()
        .unwrap_or(0);
    let asked = doc.plan.get("duration_ns").and_then(Value::as_u64);
    let est = match asked {
        Some(d) if d > 0 => est.min(d),
        _ => est,
    };
    let no_time = "the run's measuring time is not known (give the cyclictest command line with --cmdline): compare shows no rates of the tail";
    doc.warnings.retain(|w| w != no_time);
    if est > 0 {
        doc.duration_ns = est;
        doc.warnings.push(format!(
            "the measuring time ({}) is estimated from the command line: each thread's samples times its period",
            rtscope_core::units::format_ns(est)
        ));
    } else {
        doc.warnings.push(no_time.into());
    }
}

/// Which summary line a `#` line is.
fn summary_values<'a>(line: &'a str, name: &str) -> Option<Vec<&'a str>> {
    let rest = line.strip_prefix('#')?.trim_start();
    let rest = rest.strip_prefix(name)?;
    Some(rest.split_whitespace().collect())
}

fn parse_numbers(vals: &[&str], what: &str, lineno: usize) -> Result<Vec<u64>, ImportError> {
    vals.iter()
        .map(|v| {
            v.parse::<u64>().map_err(|_| {
                ImportError(format!(
                    "line {lineno}: {what}: '{v}' is not a whole number"
                ))
            })
        })
        .collect()
}

/// The longest line of histogram text accepted: a row of 10 000 threads
/// fits; a binary file or `/dev/zero` does not go on being read into memory.
pub const MAX_LINE: usize = 1 << 20;

/// The most columns (threads) a histogram row may have: each thread with a
/// non-zero count holds an HDR histogram (about 230 KiB) while the text is read.
pub const MAX_COLUMNS: usize = 1024;

/// Marks the warning about a histogram with fewer samples than its `# Total:`
/// line says, which the import also prints on stderr.
pub const TRUNCATED: &str = "truncated?";

/// The error for histogram text that ends before its footer.
fn no_footer(rows: u64) -> String {
    format!(
        "no '# Max Latencies:' line after {rows} histogram rows: the footer is missing ({TRUNCATED}); the run's maximum is unknown"
    )
}

/// cyclictest's `-h`/`-H` histogram text as a result document. `file_time`
/// stands in for the run's time (the text holds none); `nsecs`: the
/// histogram was written with `-N`.
#[cfg(test)]
pub fn from_histogram(
    text: &str,
    file_time: String,
    nsecs: bool,
) -> Result<ResultDocument, ImportError> {
    from_histogram_reader(text.as_bytes(), file_time, nsecs)
}

/// [`from_histogram`] reading the text line by line: memory is bounded by
/// the number of threads, not by the size of the input. A line longer than
/// [`MAX_LINE`] is an error; bytes that are not UTF-8 are replaced.
pub fn from_histogram_reader(
    mut input: impl BufRead,
    file_time: String,
    nsecs: bool,
) -> Result<ResultDocument, ImportError> {
    let scale = if nsecs { NS } else { US };
    // Per column: its histogram (created at its first non-zero count).
    let mut columns: Vec<Thread> = Vec::new();
    let mut nrows = 0u64;
    let mut max_row_bin = 0u64;
    // Whether, in every row, the last column is the sum of the others (-H).
    let mut last_is_sum = true;
    let mut cols = 0usize;
    let mut total: Option<Vec<u64>> = None;
    let mut min: Option<Vec<u64>> = None;
    let mut avg: Option<Vec<u64>> = None;
    let mut max: Option<Vec<u64>> = None;
    let mut ovf: Option<Vec<u64>> = None;
    let mut saw_header = false;
    let mut buf = Vec::new();
    let mut counts: Vec<u64> = Vec::new();
    let mut lineno = 0usize;
    loop {
        buf.clear();
        let n = (&mut input)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| ImportError(format!("read error: {e}")))?;
        if n == 0 {
            break;
        }
        lineno += 1;
        if buf.len() > MAX_LINE {
            return err(format!(
                "line {lineno}: longer than {} MiB: not a cyclictest histogram",
                MAX_LINE >> 20
            ));
        }
        let text = String::from_utf8_lossy(&buf);
        let mut line = text.trim();
        if lineno == 1 {
            line = line.trim_start_matches('\u{feff}');
        }
        if line.is_empty() {
            continue;
        }
        if line.starts_with('#') {
            if line == "# Histogram" {
                saw_header = true;
            } else if let Some(v) = summary_values(line, "Total:") {
                total = Some(parse_numbers(&v, "Total", lineno)?);
            } else if let Some(v) = summary_values(line, "Min Latencies:") {
                min = Some(parse_numbers(&v, "Min Latencies", lineno)?);
            } else if let Some(v) = summary_values(line, "Avg Latencies:") {
                avg = Some(parse_numbers(&v, "Avg Latencies", lineno)?);
            } else if let Some(v) = summary_values(line, "Max Latencies:") {
                max = Some(parse_numbers(&v, "Max Latencies", lineno)?);
            } else if let Some(v) = summary_values(line, "Histogram Overflows:") {
                ovf = Some(parse_numbers(&v, "Histogram Overflows", lineno)?);
            }
            // Other comments (cpu_dma_latency, overflow cycle lists) carry nothing we keep.
            continue;
        }
        // cyclictest's own status lines, when its stdout was captured without -q.
        if line.starts_with("T:") || line.starts_with("policy:") || line.starts_with('\u{1b}') {
            continue;
        }
        // A row the input ends in, without its newline: cut short.
        if !buf.ends_with(b"\n") {
            return err(no_footer(nrows));
        }
        let mut it = line.split_whitespace();
        let first = it.next().unwrap_or("");
        let Ok(bin) = first.parse::<u64>() else {
            return err(format!(
                "line {lineno}: not a cyclictest histogram line: '{}'",
                line.chars().take(60).collect::<String>()
            ));
        };
        counts.clear();
        for v in it {
            counts.push(v.parse::<u64>().map_err(|_| {
                ImportError(format!("line {lineno}: count: '{v}' is not a whole number"))
            })?);
        }
        if counts.is_empty() {
            return err(format!("line {lineno}: a bin without counts"));
        }
        if cols == 0 {
            if counts.len() > MAX_COLUMNS {
                return err(format!(
                    "line {lineno}: {} columns: more threads than the {MAX_COLUMNS} an import takes",
                    counts.len()
                ));
            }
            cols = counts.len();
            columns = (0..cols)
                .map(|j| Thread {
                    index: j,
                    has_histogram: true,
                    ..Default::default()
                })
                .collect();
        } else if counts.len() != cols {
            return err(format!(
                "line {lineno}: {} columns where earlier rows have {cols}",
                counts.len()
            ));
        }
        if let Some(c) = counts.iter().find(|c| **c > MAX_COUNT) {
            return err(format!("line {lineno}: count {c} is not plausible"));
        }
        let ns = scale
            .ns(bin)
            .map_err(|e| ImportError(format!("line {lineno}: {}", e.0)))?;
        nrows += 1;
        max_row_bin = max_row_bin.max(bin);
        if cols >= 2 && last_is_sum {
            let others = counts[..cols - 1]
                .iter()
                .fold(0u64, |a, x| a.saturating_add(*x));
            last_is_sum = others == counts[cols - 1];
        }
        for (t, c) in columns.iter_mut().zip(&counts) {
            if *c > 0 {
                t.add_bin(bin, ns, *c);
                t.count = t.count.saturating_add(*c);
            }
        }
    }
    if nrows == 0 {
        return err(if saw_header {
            "no histogram rows after '# Histogram'"
        } else {
            "not a cyclictest histogram: no histogram rows"
        });
    }
    // cyclictest always ends the histogram with its footer; without the
    // maximum the file was cut short, and the last bin is not the maximum
    // (overflows and the rows after the cut are unknown).
    if max.is_none() {
        return err(no_footer(nrows));
    }
    // -H adds a summary column: Min/Avg lines then have one value fewer than
    // the rows have columns; without them, the last column is the others' sum.
    let per_thread_lines = min.as_ref().or(avg.as_ref()).map(Vec::len);
    let summary_col = cols >= 2
        && match per_thread_lines {
            Some(n) => n == cols - 1,
            None => last_is_sum,
        };
    let n = if summary_col { cols - 1 } else { cols };
    columns.truncate(n);
    for (name, v) in [
        ("Min", &min),
        ("Avg", &avg),
        ("Max", &max),
        ("Overflows", &ovf),
        ("Total", &total),
    ] {
        if let Some(v) = v {
            if v.len() < n {
                return err(format!(
                    "'{name}' line has {} values for {n} threads",
                    v.len()
                ));
            }
        }
    }
    let range_ns = (max_row_bin.saturating_add(1)).saturating_mul(scale.mult);
    let mut in_bins = 0u64;
    let mut short = false;
    let mut threads = Vec::new();
    for (j, mut t) in columns.into_iter().enumerate() {
        // `count` holds the sum of the bins so far.
        let sum = t.count;
        in_bins = in_bins.saturating_add(sum);
        if let Some(tot) = &total {
            short |= sum < tot[j];
        }
        let overflows = ovf.as_ref().map_or(0, |v| v[j]);
        if overflows > MAX_COUNT {
            return err(format!(
                "thread {j}: {overflows} overflows is not plausible"
            ));
        }
        let count = sum.saturating_add(overflows);
        t.attrs.insert("histogram_range_ns".into(), json!(range_ns));
        t.overflows = overflows;
        t.count = count;
        t.min = min.as_ref().map(|v| v[j] as i64).filter(|_| count > 0);
        t.max = max.as_ref().map(|v| v[j] as i64).filter(|_| count > 0);
        t.avg = avg.as_ref().map(|v| v[j] as f64).filter(|_| count > 0);
        threads.push(t);
    }
    let truncated = match &total {
        Some(tot) if short => Some(format!(
            "histogram holds {in_bins} samples but # Total says {}: {TRUNCATED}",
            tot[..n].iter().fold(0u64, |a, x| a.saturating_add(*x))
        )),
        _ => None,
    };
    let mut warnings = vec![format!(
        "imported from a cyclictest histogram: {}; the time of the run is unknown (the file's modification time is shown)",
        if nsecs {
            "1 ns bins (-N)"
        } else {
            "1 us bins, each taken at its middle (bin v: v us + 500 ns); the average is cyclictest's, truncated to whole us"
        }
    )];
    warnings.push(
        "no system snapshot, no overruns, no timeline and no worst-sample times in a histogram file".into(),
    );
    if summary_col {
        warnings.push("the -H summary column was dropped; 'all' is the sum of the threads".into());
    }
    warnings.extend(truncated);
    let series = build_series(&threads, scale, &mut warnings)?;
    let mut imported = serde_json::Map::new();
    imported.insert("source".into(), json!("cyclictest histogram"));
    imported.insert("threads".into(), json!(n));
    imported.insert("total_line".into(), json!(total.is_some()));
    imported.insert("nsecs".into(), json!(nsecs));
    let mut plan = serde_json::Map::new();
    plan.insert("imported".into(), Value::Object(imported));
    let system = SystemSnapshot {
        preemption_model: "unknown".into(),
        ..Default::default()
    };
    let mut doc = ResultDocument {
        command_line: vec![],
        started_at: file_time.clone(),
        ended_at: file_time,
        end_reason: EndReason::Imported,
        warnings,
        ..ResultDocument::new("cyclic", Value::Object(plan), system, series)
    };
    measuring_time(&mut doc);
    Ok(doc)
}

/// One series per thread plus `all`.
fn build_series(
    threads: &[Thread],
    scale: Scale,
    warnings: &mut Vec<String>,
) -> Result<Vec<Series>, ImportError> {
    let mut out = Vec::new();
    let mut all = Thread {
        has_histogram: threads.iter().any(|t| t.has_histogram),
        ..Default::default()
    };
    let mut weighted = 0.0f64;
    let mut avg_known = true;
    for t in threads {
        out.push(one_series(&format!("thread {}", t.index), t, scale, true)?);
        all.hist.add(&t.hist);
        all.first_bin = match (all.first_bin, t.first_bin) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        all.last_bin = all.last_bin.max(t.last_bin);
        all.overflows = all.overflows.saturating_add(t.overflows);
        all.count = all.count.saturating_add(t.count);
        if t.count > 0 {
            all.min = match (all.min, t.min) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            all.max = match (all.max, t.max) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
            match t.avg {
                Some(a) => weighted += a * t.count as f64,
                None => avg_known = false,
            }
        }
    }
    if avg_known && all.count > 0 {
        all.avg = Some(weighted / all.count as f64);
    }
    let mut s = one_series("all", &all, scale, false)?;
    s.attributes.insert("threads".into(), json!(threads.len()));
    out.push(s);
    if all.overflows > 0 {
        warnings.push(format!(
            "{} samples were beyond the histogram's range (histogram overflows): they are counted at the maximum latency, so percentiles above the last bin are upper bounds",
            all.overflows
        ));
    }
    Ok(out)
}

fn one_series(
    label: &str,
    t: &Thread,
    scale: Scale,
    per_thread: bool,
) -> Result<Series, ImportError> {
    let mut h = t.hist.clone();
    let to_ns = |v: i64| -> Result<i64, ImportError> {
        if v < 0 {
            // A negative latency (clock step): keep it as is in ns.
            Ok(v.saturating_mul(scale.mult as i64))
        } else {
            Ok(scale.ns(v as u64)? as i64)
        }
    };
    let min_ns = t.min.map(to_ns).transpose()?;
    let mut max_ns = t.max.map(to_ns).transpose()?;
    let last_bin_ns = t.last_bin.map(|b| scale.ns(b)).transpose()?;
    if t.overflows > 0 {
        // Overflows lie above the last bin; the maximum is the best known value for them.
        let at = max_ns.map(|m| m.max(0) as u64).or(last_bin_ns).unwrap_or(0);
        h.record_n(at, t.overflows);
        max_ns.get_or_insert(at as i64);
    }
    let has_hist = !h.is_empty() && t.has_histogram;
    let first_bin_ns = t.first_bin.map(|b| scale.ns(b)).transpose()?;
    let min_ns = min_ns.or(first_bin_ns.map(|v| v as i64)).unwrap_or(0);
    let max_ns = max_ns.or(last_bin_ns.map(|v| v as i64)).unwrap_or(0);
    if min_ns > max_ns {
        return err(format!(
            "{label}: minimum {min_ns} ns above maximum {max_ns} ns"
        ));
    }
    let mean_ns = match t.avg {
        Some(a) => scale.ns_f(a)?,
        None if has_hist => h.inner().mean(),
        None => 0.0,
    };
    let (lo, hi) = (
        min_ns.max(0) as u64,
        (max_ns.max(0) as u64).max(min_ns.max(0) as u64),
    );
    let q = |p: f64| {
        if has_hist {
            h.quantile(p).clamp(lo, hi)
        } else {
            0
        }
    };
    let stats = Stats {
        count: t.count,
        min_ns,
        max_ns,
        mean_ns,
        stddev_ns: if has_hist { h.inner().stdev() } else { 0.0 },
        p50_ns: q(0.5),
        p90_ns: q(0.9),
        p99_ns: q(0.99),
        p99_9_ns: q(0.999),
        p99_99_ns: q(0.9999),
        p99_999_ns: q(0.99999),
        // Without a histogram cyclictest gives min, avg and max only.
        unknown: rtscope_core::result::Unknown {
            percentiles: !has_hist,
            stddev: !has_hist,
            mean: t.avg.is_none() && !has_hist,
        },
    };
    let mut attributes = t.attrs.clone();
    if per_thread {
        attributes.insert("thread".into(), json!(t.index));
    }
    attributes.insert("source".into(), json!("cyclictest"));
    attributes.insert("resolution_ns".into(), json!(scale.mult));
    if t.has_histogram {
        attributes.insert("histogram_overflows".into(), json!(t.overflows));
    }
    Ok(Series {
        label: label.to_string(),
        attributes,
        stats,
        counters: SeriesCounters::default(),
        histogram: if has_hist {
            h.export()
        } else {
            LatencyHistogram::new().export()
        },
        timeline: Timeline {
            interval_ns: 1_000_000_000,
            points: vec![],
        },
        spikes: vec![],
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "2026-01-01T00:00:00Z";

    #[test]
    fn dates() {
        assert_eq!(
            parse_rfc2822("Mon, 23 Nov 2026 09:46:26 +0000"),
            Some(1_795_427_186)
        );
        assert_eq!(
            parse_rfc2822("Mon, 23 Nov 2026 10:46:26 +0100"),
            Some(1_795_427_186)
        );
        assert_eq!(parse_rfc2822("yesterday"), None);
        assert_eq!(parse_rfc2822("Mon, 99 Nov 2026 09:46:26 +0000"), None);
        assert_eq!(rfc3339(1_795_427_186).unwrap(), "2026-11-23T09:46:26Z");
    }

    #[test]
    fn histogram_with_and_without_total_and_zero_rows() {
        let full = "# /dev/cpu_dma_latency set to 0us\n# Histogram\n000000 000000\t000000\n\
                    000001 000002\t000000\n000002 000000\t000000\n000003 000001\t000004\n\
                    # Total: 000000003 000000004\n# Min Latencies: 00001 00003\n\
                    # Avg Latencies: 00001 00003\n# Max Latencies: 00009 00003\n\
                    # Histogram Overflows: 00001 00000\n# Histogram Overflow at cycle number:\n\
                    # Thread 0: 00002\n# Thread 1:\n";
        let stripped: String = full
            .lines()
            .filter(|l| !l.starts_with("# Total") && !l.ends_with("000000\t000000"))
            .map(|l| format!("{l}\n"))
            .collect();
        for text in [full, stripped.as_str()] {
            let d = from_histogram(text, T.into(), false).unwrap();
            assert_eq!(d.series.len(), 3);
            let t0 = &d.series[0];
            assert_eq!(t0.label, "thread 0");
            assert_eq!(t0.stats.count, 4);
            assert_eq!(t0.stats.min_ns, 1500);
            assert_eq!(t0.stats.max_ns, 9500);
            assert_eq!(t0.attributes["histogram_overflows"], json!(1));
            assert_eq!(t0.histogram.buckets.iter().map(|b| b[1]).sum::<u64>(), 4);
            assert_eq!(d.series[1].stats.count, 4);
            assert_eq!(d.series[1].stats.p50_ns, 3500);
            assert_eq!(d.series[2].label, "all");
            assert_eq!(d.series[2].stats.count, 8);
            assert!(d.warnings.iter().any(|w| w.contains("overflows")));
        }
    }

    #[test]
    fn histogram_cut_before_its_footer_is_refused() {
        // `head -c` of a real histogram: rows only, the last one maybe cut.
        let full = include_str!("../../tests/fixtures/cyclictest-h150.txt");
        assert!(from_histogram(full, T.into(), false).is_ok());
        let footer = full.find("# Max Latencies").unwrap();
        for cut in [2000, full.find("# Total").unwrap(), footer - 1, footer] {
            let e = from_histogram(&full[..cut], T.into(), false).unwrap_err();
            assert!(
                e.0.contains("no '# Max Latencies:' line") && e.0.contains(TRUNCATED),
                "cut at {cut}: {}",
                e.0
            );
        }
        // Cut after the maximum: it is stated, and the import goes on.
        let d = from_histogram(&full[..footer + 40], T.into(), false).unwrap();
        assert_eq!(d.series[0].stats.max_ns, 3_768_500);
    }

    #[test]
    fn summary_column_of_capital_h_is_dropped() {
        let text = "# Histogram\n000000 000001\t000002\t000003\n000001 000000\t000001\t000001\n\
                    # Total: 000000001 000000003 000000004\n# Min Latencies: 00000 00000\n\
                    # Avg Latencies: 00000 00000\n# Max Latencies: 00000 00001 00001\n\
                    # Histogram Overflows: 00000 00000 00000\n";
        let d = from_histogram(text, T.into(), false).unwrap();
        assert_eq!(d.series.len(), 3);
        assert_eq!(d.series[2].stats.count, 4);
        // Without Min/Avg lines the sum column is still recognised.
        let bare = "000000 000001\t000002\t000003\n000001 000000\t000001\t000001\n\
                    # Max Latencies: 00000 00001 00001\n";
        let d = from_histogram(bare, T.into(), false).unwrap();
        assert_eq!(d.series.len(), 3);
    }

    #[test]
    fn histogram_errors_are_one_line() {
        for (text, want) in [
            ("", "no histogram rows"),
            ("hello\n", "line 1: not a cyclictest histogram line"),
            ("000000 000001 000002\n000001 000001\n", "line 2: 1 columns"),
            ("000000 x\n", "line 1: count: 'x'"),
            (
                "000000 1 2 3\n# Min Latencies: 1\n# Max Latencies: 1 1 1\n",
                "'Min' line has 1 values for 3 threads",
            ),
            (
                "000000 1\n# Min Latencies: 5\n# Max Latencies: 0\n",
                "thread 0: minimum 5500 ns above maximum 500 ns",
            ),
        ] {
            let e = from_histogram(text, T.into(), false).unwrap_err();
            assert!(e.0.contains(want), "{text:?}: {}", e.0);
            assert!(!e.0.contains('\n'));
        }
    }

    #[test]
    fn json_without_histogram() {
        let j = r##"{"file_version":1,"cmdline:":"cyclictest -q --json=x","rt_test_version:":"2.40",
            "start_time":"Mon, 23 Nov 2026 09:46:36 +0000","end_time":"Mon, 23 Nov 2026 09:46:37 +0000",
            "return_code":0,"sysinfo":{"sysname":"Linux","nodename":"vm","release":"6.1",
            "version":"#1 SMP PREEMPT_RT","machine":"x86_64","realtime":1},"num_threads":1,
            "resolution_in_ns":0,"thread":{"0":{"histogram":{},"cycles":500,"min":14,"max":570,
            "avg":21.89,"cpu":0,"node":0}}}"##;
        let d = from_json(j.as_bytes(), T.into()).unwrap();
        assert_eq!(d.started_at, "2026-11-23T09:46:36Z");
        assert_eq!(d.duration_ns, 1_000_000_000);
        assert!(d.system.preempt_rt);
        assert_eq!(d.system.preemption_model, "PREEMPT_RT");
        assert_eq!(d.series[0].stats.count, 500);
        assert_eq!(d.series[0].stats.max_ns, 570_500);
        assert!(d.series[0].histogram.buckets.is_empty());
        assert!(d.warnings.iter().any(|w| w.contains("without -h")));
        assert_eq!(d.command_line, vec!["cyclictest", "-q", "--json=x"]);
    }

    fn json_of(cmdline: &str) -> String {
        format!(
            r#"{{"file_version":1,"cmdline:":"{cmdline}","rt_test_version:":"2.40",
            "thread":{{"0":{{"histogram":{{"12":3,"13":2}},"cycles":5,"min":12,"max":13,"avg":12.4,"cpu":0,"node":0}},
            "1":{{"histogram":{{"14":5}},"cycles":5,"min":14,"max":14,"avg":14.0,"cpu":1,"node":0}}}}}}"#
        )
    }

    /// The import records the command line's settings as an rtscope run of
    /// that line records them: compared with such a run, no warning that
    /// the conditions differ, and no row but rtscope's own settings (it
    /// warned "the runs differ in loads, period_ns, rt.policy, rt.priority,
    /// wake" before).
    #[test]
    fn json_plan_is_the_command_lines_and_compares_like_for_like() {
        use crate::experiment::cyclictest::resolve;
        use crate::report::{compare::plan_differences, Run};
        let line = "cyclictest -m -p 90 -t 2 -i 1000 -l 2000 -q -h 150 --json=ct.json";
        let d = from_json(json_of(line).as_bytes(), T.into()).unwrap();
        assert_eq!(d.plan["period_ns"], 1_000_000);
        assert_eq!(d.plan["loops"], 2000);
        assert_eq!(d.plan["rt"]["policy"], "fifo");
        assert_eq!(d.plan["rt"]["priority"], 90);
        assert_eq!(d.plan["wake"], "absolute");
        assert_eq!(d.plan["histogram_max_ns"], 150_000);
        assert_eq!(d.plan["threads"].as_array().unwrap().len(), 2);
        // Not pinned (no -a): no CPU, whatever the JSON says.
        assert_eq!(d.plan["threads"][1]["cpus"], json!([]));
        assert_eq!(d.plan["imported"]["source"], "cyclictest --json");
        assert_eq!(d.plan["imported"]["cmdline"], line);
        assert_eq!(d.plan["imported"]["rt_test_version"], "2.40");
        let a = args::parse_cmdline(line).unwrap();
        let r = resolve::resolve(&a, &resolve::Machine::this()).unwrap();
        let plan = crate::experiment::cyclic::plan(&r.options).unwrap();
        let run = |name: &str, doc| Run {
            name: name.into(),
            path: name.into(),
            doc,
        };
        let own = ResultDocument::new(
            "cyclic",
            serde_json::to_value(&plan).unwrap(),
            SystemSnapshot::default(),
            vec![],
        );
        let (rows, warnings) = plan_differences(&[run("ct", d.clone()), run("rt", own)]);
        assert!(warnings.is_empty(), "{warnings:?}");
        let keys: Vec<&str> = rows.iter().skip(1).map(|r| r[0].as_str()).collect();
        assert_eq!(keys, ["ring_capacity", "spikes", "start_delay_ns"]);
        // Pinned: each thread on the CPU the JSON records.
        let d = from_json(json_of("cyclictest -S -p 90").as_bytes(), T.into()).unwrap();
        assert_eq!(d.plan["threads"][0]["cpus"], json!([0]));
        assert_eq!(d.plan["threads"][1]["cpus"], json!([1]));
        // Two imports that differ only in where they came from: no row.
        let mut other = d.clone();
        other.plan["imported"]["cmdline"] = json!("cyclictest -S -p 90 --json=x");
        let (rows, warnings) = plan_differences(&[run("a", d), run("b", other)]);
        assert!(rows.is_empty() && warnings.is_empty(), "{rows:?}");
    }

    #[test]
    fn a_line_the_parser_refuses_leaves_the_settings_unknown() {
        let d = from_json(json_of("cyclictest -U -p 90").as_bytes(), T.into()).unwrap();
        let plan = d.plan.as_object().unwrap();
        assert_eq!(plan.keys().collect::<Vec<_>>(), ["imported"]);
        assert!(d.warnings.iter().any(|w| w.starts_with(
            "the cyclictest command line was not understood (invalid option -- 'U')"
        )));
        // -N read by the parser, bundled or long, and by the old scan where
        // the parser refuses the line.
        for line in [
            "cyclictest -qN",
            "cyclictest --nsecs -p 9",
            "cyclictest -U -N",
            "cyclictest -U --nsecs",
            "cyclictest -U -qN",
            "cyclictest -UN",
        ] {
            let d = from_json(json_of(line).as_bytes(), T.into()).unwrap();
            assert_eq!(d.series[0].attributes["resolution_ns"], 1, "{line}");
        }
        for line in [
            "cyclictest -q",
            "cyclictest -U -q",
            "cyclictest --json=N.json",
            "cyclictest -U --xN",
            "cyclictest -U -q5N",
            "cyclictest -U xN",
            "cyclictest -U -Q",
        ] {
            let d = from_json(json_of(line).as_bytes(), T.into()).unwrap();
            assert_eq!(d.series[0].attributes["resolution_ns"], 1000, "{line}");
        }
    }

    #[test]
    fn a_histogram_takes_its_command_line_from_cmdline() {
        let text = "# Histogram\n000000 000001\t000002\n# Max Latencies: 00000 00000\n";
        let mut d = from_histogram(text, T.into(), false).unwrap();
        assert_eq!(d.plan.as_object().unwrap().len(), 1);
        assert_eq!(d.plan["imported"]["total_line"], false);
        let line = "cyclictest -m -S -p 80 -i 250 -h 1 -q";
        with_cmdline(&mut d, line).unwrap();
        assert_eq!(d.plan["rt"]["priority"], 80);
        assert_eq!(d.plan["period_ns"], 250_000);
        assert_eq!(d.plan["threads"].as_array().unwrap().len(), 2);
        assert_eq!(d.plan["threads"][1]["cpus"], json!([1]));
        assert_eq!(d.plan["imported"]["source"], "cyclictest histogram");
        assert_eq!(d.plan["imported"]["cmdline"], line);
        assert_eq!(d.plan["imported"]["threads"], 2);
        assert_eq!(d.command_line[0], "cyclictest");
        let e = with_cmdline(&mut d, "cyclictest --prio=5").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--cmdline: option '--prio' is ambiguous"),
            "{e}"
        );
        let e = with_cmdline(&mut d, "cyclictest --priospread -p 5 -t 2 -h 1000").unwrap_err();
        assert!(e.to_string().contains("--priospread is refused"), "{e}");
    }

    /// A --cmdline whose -h contradicts the file is refused (before: it
    /// was taken): fewer bins than the file has rows, or none; more is
    /// what cut all-zero rows leave.
    #[test]
    fn a_cmdline_whose_h_contradicts_the_histogram_is_refused() {
        let text =
            "# Histogram\n000000 000001\n000001 000000\n000002 000003\n# Max Latencies: 00002\n";
        for (line, says) in [
            (
                "cyclictest -h 2",
                "--cmdline says -h 2: the histogram file has 3 rows (bins 0 to 2)",
            ),
            (
                "cyclictest -q",
                "--cmdline has no -h/-H: the histogram file has 3 rows",
            ),
            ("cyclictest -H 1", "says -h 1"),
        ] {
            let mut d = from_histogram(text, T.into(), false).unwrap();
            let e = with_cmdline(&mut d, line).unwrap_err().to_string();
            assert!(e.contains(says), "{line}: {e}");
        }
        for line in ["cyclictest -h 3", "cyclictest -h 400", "cyclictest -H 3"] {
            let mut d = from_histogram(text, T.into(), false).unwrap();
            with_cmdline(&mut d, line).unwrap();
        }
        // Threads, loops and duration that cannot have made 4 samples on
        // one thread (1 + 3 in the one column) are refused too.
        for (line, says) in [
            (
                "cyclictest -h 3 -t 2",
                "says -t 2: the histogram file has 1 thread column",
            ),
            (
                "cyclictest -h 3 -l 3",
                "says -l 3: the histogram file has 4 samples",
            ),
            ("cyclictest -h 3 -D 1 -i 1000000", "says -D 1s -i 1000000"),
        ] {
            let mut d = from_histogram(text, T.into(), false).unwrap();
            let e = with_cmdline(&mut d, line).unwrap_err().to_string();
            assert!(e.contains(says), "{line}: {e}");
        }
        for line in [
            "cyclictest -h 3 -t 1 -l 4",
            "cyclictest -h 3 -t -l 1000",
            "cyclictest -h 3 -D 1 -i 1000",
        ] {
            let mut d = from_histogram(text, T.into(), false).unwrap();
            with_cmdline(&mut d, line).unwrap();
        }
        // -N: the rows are ns bins.
        let mut d = from_histogram(text, T.into(), true).unwrap();
        with_cmdline(&mut d, "cyclictest -N -h 3").unwrap();
        let mut d = from_histogram(text, T.into(), true).unwrap();
        assert!(with_cmdline(&mut d, "cyclictest -N -h 2").is_err());
    }

    #[test]
    fn json_errors() {
        for (j, want) in [
            ("[]", "not a JSON object"),
            ("{}", "no \"thread\" object"),
            (r#"{"thread":{}}"#, "no threads"),
            (r#"{"thread":{"x":{}}}"#, "not a thread number"),
            (r#"{"thread":{"0":{}}}"#, "no \"cycles\""),
            (
                r#"{"thread":{"0":{"cycles":-1}}}"#,
                "cycles: expected a whole number",
            ),
            (
                r#"{"thread":{"0":{"cycles":1,"histogram":{"a":1}}}}"#,
                "histogram bin \"a\"",
            ),
            (
                r#"{"thread":{"0":{"cycles":1,"histogram":{"1":1},"min":"x"}}}"#,
                "min",
            ),
            (
                r#"{"thread":{"0":{"cycles":1,"histogram":{"99999999999":1}}}}"#,
                "beyond 100 s",
            ),
            ("{", "not a cyclictest JSON file"),
        ] {
            let e = from_json(j.as_bytes(), T.into()).unwrap_err();
            assert!(e.0.contains(want), "{j}: {}", e.0);
        }
    }

    /// An import either succeeds with a consistent document (each series'
    /// histogram holds its count, or is empty where the percentiles are
    /// marked unknown; min <= max) or fails with one line.
    fn check_import(
        r: Result<ResultDocument, ImportError>,
    ) -> Result<Option<ResultDocument>, proptest::test_runner::TestCaseError> {
        match r {
            Ok(doc) => {
                proptest::prop_assert!(!doc.series.is_empty());
                for s in &doc.series {
                    let binned: u64 = s.histogram.buckets.iter().map(|b| b[1]).sum();
                    // Without a histogram (cyclictest without -h, or an empty
                    // one) only count, min, avg and max are known.
                    let want = if s.stats.unknown.percentiles {
                        0
                    } else {
                        s.stats.count
                    };
                    proptest::prop_assert_eq!(binned, want, "{}", s.label);
                    if s.stats.count > 0 {
                        proptest::prop_assert!(s.stats.min_ns <= s.stats.max_ns, "{}", s.label);
                    }
                }
                Ok(Some(doc))
            }
            Err(e) => {
                proptest::prop_assert!(!e.0.is_empty() && !e.0.contains('\n'), "{:?}", e.0);
                Ok(None)
            }
        }
    }

    /// Found by `json_parser_on_near_misses` in CI: a thread with cycles but
    /// an empty histogram object is imported like a run without -h (count,
    /// min and max, no buckets, percentiles unknown), even with a clock-step
    /// minimum that saturates in ns.
    #[test]
    fn empty_histogram_object_is_a_run_without_h() {
        let j = r#"{"thread":{"0":{"histogram":{},"cycles":1,"min":-9223372036854776,"max":0,"avg":0.0}}}"#;
        let doc = check_import(from_json(j.as_bytes(), T.into()))
            .unwrap()
            .expect("imported");
        let s = &doc.series[0];
        assert_eq!(s.stats.count, 1);
        assert!(s.histogram.buckets.is_empty());
        assert!(s.stats.unknown.percentiles);
        assert_eq!(s.stats.min_ns, i64::MIN);
    }

    proptest::proptest! {
        #[test]
        fn histogram_parser_accepts_consistent_data_or_says_why(s in "\\PC*") {
            check_import(from_histogram(&s, T.into(), false))?;
        }

        #[test]
        fn histogram_parser_on_near_misses(
            rows in proptest::collection::vec(
                (0u64..1_000_000_000_000, proptest::collection::vec(0u64..u64::MAX, 0..4)), 0..20),
            tail in "(# (Total|Min Latencies|Avg Latencies|Max Latencies|Histogram Overflows): [0-9 ]{0,30}\n){0,6}",
        ) {
            let mut text = String::from("# Histogram\n");
            for (b, cs) in &rows {
                text.push_str(&format!("{b:06}"));
                for c in cs {
                    text.push_str(&format!(" {c:06}"));
                }
                text.push('\n');
            }
            text.push_str(&tail);
            let plain = check_import(from_histogram(&text, T.into(), false))?;
            check_import(from_histogram(&text, T.into(), true))?;
            // Rows of equal width, counts in range and no summary lines: always accepted,
            // one series per column (and the union), every count kept.
            let width = rows.first().map_or(0, |r| r.1.len());
            if tail.is_empty() && width > 0 && rows.iter().all(|r| r.1.len() == width)
                && rows.iter().all(|r| r.1.iter().all(|&c| c < 1 << 40))
                && rows.windows(2).all(|w| w[0].0 < w[1].0)
            {
                let doc = plain.unwrap();
                for t in 0..width {
                    let want: u64 = rows.iter().map(|r| r.1[t]).sum();
                    proptest::prop_assert_eq!(doc.series[t].stats.count, want);
                }
            }
        }

        #[test]
        fn json_parser_accepts_consistent_data_or_says_why(
            b in proptest::collection::vec(proptest::num::u8::ANY, 0..512),
        ) {
            check_import(from_json(&b, T.into()))?;
        }

        #[test]
        fn json_parser_on_near_misses(
            cycles in proptest::num::i64::ANY,
            bins in proptest::collection::btree_map("[0-9]{1,12}", proptest::num::i64::ANY, 0..6),
            min in proptest::num::i64::ANY,
            max in proptest::num::i64::ANY,
            avg in proptest::num::f64::ANY,
            start in "\\PC{0,40}",
        ) {
            let doc = serde_json::json!({
                "cmdline:": "cyclictest -N",
                "start_time": start,
                "thread": {"0": {"histogram": bins, "cycles": cycles, "min": min, "max": max,
                                  "avg": if avg.is_finite() { serde_json::json!(avg) } else { serde_json::Value::Null }}}
            });
            let ns = check_import(from_json(doc.to_string().as_bytes(), T.into()))?;
            let doc2 = doc.to_string().replace("cyclictest -N", "cyclictest");
            let us = check_import(from_json(doc2.as_bytes(), T.into()))?;
            // The same data in ns (-N) or in us: accepted or refused alike.
            proptest::prop_assert_eq!(ns.is_some(), us.is_some());
            if let (Some(ns), Some(us)) = (ns, us) {
                proptest::prop_assert_eq!(ns.series[0].stats.count, us.series[0].stats.count);
            }
        }
    }
}
