//! cyclictest's command line, read as rt-tests 2.x reads it: the option
//! table and `getopt_long` call of `cyclictest.c`'s `process_options`
//! (2.40's table, plus `-n`/`--nanosleep` of rt-tests 1.x, which old
//! scripts still pass), then the same checks and side effects in the same
//! order (`-p` after `--policy=other` makes the policy FIFO; `-t` after
//! `-S` is ignored with cyclictest's warning; `-h` with `-d` sets the
//! distance to 0).
//!
//! A small hand parser rather than clap, because cyclictest's grammar is
//! getopt's plus its own look-ahead, which clap cannot express without
//! changing what a line means:
//!
//! - `-a`, `-t`, `-A` and `--secaligned` take an optional value that may
//!   also be the *next* word, but only when that word looks like one
//!   (`-t 4` is four threads, `-t -p 80` is one per CPU; `-a 0-1` a CPU
//!   list, `-a -t` the current affinity): clap's `num_args(0..=1)` takes any
//!   word that does not start with `-`;
//! - long options may be abbreviated to any unique prefix (`--dur=2`,
//!   `--inter 500`), an ambiguous one (`--prio`) is an error naming the
//!   candidates, as getopt does;
//! - `-h` is the histogram, not help;
//! - the same parser reads the `cmdline` of an imported `cyclictest --json`
//!   document ([`parse_cmdline`]).
//!
//! Unlike cyclictest, which reads numbers with `atoi` (`-p x` is priority
//! 0, `-i 1000us` is 1000), a value that is not a whole number is refused
//! with one line naming the option, and so are stray words (cyclictest
//! ignores them) and option values it would clamp or misread (`-D 300ms`
//! is 300 *minutes* to cyclictest).

/// Whether an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HasArg {
    No,
    Required,
    /// Only as `-tVALUE`, `--threads=VALUE`, or (cyclictest's look-ahead)
    /// the next word when it looks like a value.
    Optional,
}

/// Every option, by what it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id {
    Affinity,
    Aligned,
    Breaktrace,
    Clock,
    DefaultSystem,
    Distance,
    Duration,
    Latency,
    Fifo,
    Histogram,
    Histofall,
    Histfile,
    Interval,
    Json,
    Laptop,
    Loops,
    MainAffinity,
    Mlockall,
    Refresh,
    Nanosleep,
    Nsecs,
    Oscope,
    Priority,
    Quiet,
    Priospread,
    Relative,
    Resolution,
    Secaligned,
    System,
    Smi,
    Smp,
    Spike,
    SpikeNodes,
    Threads,
    Tracemark,
    Unbuffered,
    Verbose,
    DbgCyclictest,
    Policy,
    Help,
    PosixTimers,
    DeepestIdleState,
    RtscopeJson,
    NoRtscopeJson,
    RtscopeReport,
}

/// One entry of the option table.
#[derive(Debug)]
pub struct Opt {
    pub long: &'static str,
    pub short: Option<char>,
    pub has_arg: HasArg,
    pub id: Id,
    /// In cyclictest 2.40's own table: an abbreviation of it counts (the
    /// others, rtscope's own and older or newer cyclictest options, must be
    /// written out, so that every abbreviation means what it means to 2.40).
    pub prefix: bool,
    /// The value's name in the help.
    pub value: &'static str,
    /// What rtscope does with it.
    pub help: &'static str,
}

const fn opt(
    long: &'static str,
    short: Option<char>,
    has_arg: HasArg,
    id: Id,
    value: &'static str,
    help: &'static str,
) -> Opt {
    Opt {
        long,
        short,
        has_arg,
        id,
        prefix: true,
        value,
        help,
    }
}

const fn own(mut o: Opt) -> Opt {
    o.prefix = false;
    o
}

use HasArg::{No, Optional, Required};

/// cyclictest's options (rt-tests 2.40, in its order), then those of other
/// versions and rtscope's own.
pub const OPTIONS: &[Opt] = &[
    opt("affinity", Some('a'), Optional, Id::Affinity, "[CPUSET]", "pin the threads round-robin to CPUSET (a list such as 0-3,6, or all); without it, to the CPUs this process may use"),
    opt("aligned", Some('A'), Optional, Id::Aligned, "[USEC]", "accepted: rtscope's threads always share one start time; an offset is not applied"),
    opt("breaktrace", Some('b'), Required, Id::Breaktrace, "USEC", "stop at the first latency above USEC (rtscope's --break-above) and print cyclictest's break lines; with --tracemark also keep the kernel's trace around samples above it (--trace --trace-outliers)"),
    opt("clock", Some('c'), Required, Id::Clock, "CLOCK", "0: CLOCK_MONOTONIC, 1: CLOCK_REALTIME"),
    opt("default-system", None, No, Id::DefaultSystem, "", "no mlockall, /dev/cpu_dma_latency not held (rtscope's --default-system)"),
    opt("distance", Some('d'), Required, Id::Distance, "DIST", "each thread's interval DIST us longer than the one before (default 500; 0 with -h)"),
    opt("duration", Some('D'), Required, Id::Duration, "TIME", "stop after TIME seconds, or with a suffix m, h or d minutes, hours or days"),
    opt("latency", None, Required, Id::Latency, "PM_QOS", "0 only: rtscope holds /dev/cpu_dma_latency at 0; another value is refused"),
    opt("fifo", Some('F'), Required, Id::Fifo, "PATH", "not honoured (named on stderr): use rtscope cyclic --stream for figures while a run goes on"),
    opt("histogram", Some('h'), Required, Id::Histogram, "US", "print cyclictest's histogram of US 1 us bins at the end (all threads at one interval)"),
    opt("histofall", Some('H'), Required, Id::Histofall, "US", "as -h, with cyclictest's summary column"),
    opt("histfile", None, Required, Id::Histfile, "PATH", "write the -h histogram to PATH instead of stdout"),
    opt("interval", Some('i'), Required, Id::Interval, "INTV", "interval of the first thread in us (default 1000)"),
    opt("json", None, Required, Id::Json, "FILE", "write cyclictest's JSON result document to FILE"),
    opt("laptop", None, No, Id::Laptop, "", "/dev/cpu_dma_latency not held; as --default-system (also no mlockall)"),
    opt("loops", Some('l'), Required, Id::Loops, "LOOPS", "wake-ups per thread, then stop (0: endless)"),
    opt("mainaffinity", None, Required, Id::MainAffinity, "CPUSET", "not honoured (named on stderr): rtscope's aggregator thread is not pinned"),
    opt("mlockall", Some('m'), No, Id::Mlockall, "", "lock memory (rtscope always does, unless --default-system or --laptop)"),
    opt("refresh_on_max", Some('M'), No, Id::Refresh, "", "redraw the status lines only when a maximum grew"),
    opt("nsecs", Some('N'), No, Id::Nsecs, "", "status lines and JSON in ns (the -h histogram keeps 1 us bins)"),
    opt("oscope", Some('o'), Required, Id::Oscope, "RED", "with -v only: not honoured, as -v"),
    opt("priority", Some('p'), Required, Id::Priority, "PRIO", "real-time priority of every thread (SCHED_FIFO unless --policy=rr)"),
    opt("quiet", Some('q'), No, Id::Quiet, "", "no live display: the status lines once at the end (none with -h); rtscope's own lines left out of stderr"),
    opt("priospread", None, No, Id::Priospread, "", "refused: rtscope runs every thread at one priority"),
    opt("relative", Some('r'), No, Id::Relative, "", "relative clock_nanosleep (rtscope's --wake relative)"),
    opt("resolution", Some('R'), No, Id::Resolution, "", "not honoured (named on stderr): rtscope clock measures the clocks"),
    opt("secaligned", None, Optional, Id::Secaligned, "[USEC]", "not honoured (named on stderr): the threads start together, not at a full second"),
    opt("system", Some('s'), No, Id::System, "", "nanosleep() instead of clock_nanosleep (rtscope's --wake nanosleep)"),
    opt("smi", None, No, Id::Smi, "", "not honoured (named on stderr): SMIs are not counted"),
    opt("smp", Some('S'), No, Id::Smp, "", "one thread per CPU, each pinned to its CPU, one priority (-a and -t after it ignored, -a before it refused)"),
    opt("spike", None, Required, Id::Spike, "TRIGGER", "not honoured (named on stderr): the result document keeps the worst samples with their times"),
    opt("spike-nodes", None, Required, Id::SpikeNodes, "NUM", "with --spike: not honoured, as --spike"),
    opt("threads", Some('t'), Optional, Id::Threads, "[NUM]", "NUM threads, or one per CPU without NUM (default 1); not pinned without -a"),
    opt("tracemark", None, No, Id::Tracemark, "", "with -b: keep the kernel's trace around samples above -b (rtscope's --trace --trace-outliers)"),
    opt("unbuffered", Some('u'), No, Id::Unbuffered, "", "accepted: rtscope writes every line at once"),
    opt("verbose", Some('v'), No, Id::Verbose, "", "not honoured (named on stderr): rtscope cyclic --raw FILE writes every sample"),
    opt("dbg_cyclictest", None, No, Id::DbgCyclictest, "", "not honoured (named on stderr)"),
    opt("policy", None, Required, Id::Policy, "NAME", "other, normal, batch, idle, fifo or rr; without a priority the threads run as SCHED_OTHER, as in cyclictest"),
    opt("help", Some('?'), No, Id::Help, "", "this list"),
    opt("posix_timers", Some('x'), No, Id::PosixTimers, "", "POSIX interval timers (rtscope's --wake posix-timer)"),
    own(opt("nanosleep", Some('n'), No, Id::Nanosleep, "", "rt-tests 1.x: clock_nanosleep, which is the default")),
    own(opt("deepest-idle-state", None, Required, Id::DeepestIdleState, "N", "rt-tests 2.5+: not honoured (named on stderr): /dev/cpu_dma_latency held at 0 keeps every CPU out of deep idle states")),
    own(opt("rtscope-json", None, Required, Id::RtscopeJson, "FILE", "rtscope's result document (default: rtscope-cyclictest-DATE-TIME-PID.json in the current directory)")),
    own(opt("no-rtscope-json", None, No, Id::NoRtscopeJson, "", "do not write rtscope's result document")),
    own(opt("rtscope-report", None, Required, Id::RtscopeReport, "FILE", "also write rtscope's HTML report to FILE")),
];

/// Where the threads run (cyclictest's `setaffinity` and `affinity_mask`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    /// Pinned (`-a`, `-S`), round-robin over `cpus` or this process's CPUs.
    pub pinned: bool,
    /// `-a CPUSET`.
    pub cpus: Option<String>,
}

/// `-t`: a count, or one per available CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    Count(i64),
    /// `-t` without a count, or `-S`.
    PerCpu,
}

/// cyclictest's `--policy` names (`normal` is `other`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CtPolicy {
    Other,
    Batch,
    Idle,
    Fifo,
    Rr,
}

impl CtPolicy {
    /// cyclictest's name for it (its `policyname`).
    pub fn name(self) -> &'static str {
        match self {
            CtPolicy::Other => "other",
            CtPolicy::Batch => "batch",
            CtPolicy::Idle => "idle",
            CtPolicy::Fifo => "fifo",
            CtPolicy::Rr => "rr",
        }
    }

    pub fn is_rt(self) -> bool {
        matches!(self, CtPolicy::Fifo | CtPolicy::Rr)
    }

    /// cyclictest's `handlepolicy`: the name's first letters decide
    /// (`fifo`, `FIFO`, `fifo2`); a name it does not know is refused here
    /// (cyclictest would run SCHED_OTHER without a word).
    fn parse(v: &str) -> Option<CtPolicy> {
        let l = v.to_ascii_lowercase();
        [
            ("other", CtPolicy::Other),
            ("normal", CtPolicy::Other),
            ("batch", CtPolicy::Batch),
            ("idle", CtPolicy::Idle),
            ("fifo", CtPolicy::Fifo),
            ("rr", CtPolicy::Rr),
        ]
        .into_iter()
        .find(|(n, _)| l.starts_with(n))
        .map(|(_, p)| p)
    }
}

/// Everything a cyclictest command line asks for, after cyclictest's own
/// checks (and rtscope's stricter ones). Times in cyclictest's units.
#[derive(Debug, Clone, PartialEq)]
pub struct CtArgs {
    pub placement: Placement,
    /// `-a` given after `-S` (cyclictest ignores it, with a warning).
    pub affinity_ignored: bool,
    pub aligned: Option<i64>,
    pub secaligned: Option<i64>,
    /// `-b`, us (ns with `-N`); 0: off.
    pub breaktrace: i64,
    /// 0: CLOCK_MONOTONIC, 1: CLOCK_REALTIME.
    pub clock: i64,
    pub default_system: bool,
    /// `-d`, us; cyclictest's default 500, 0 with `-h`.
    pub distance: i64,
    /// `-D`, seconds; 0: none.
    pub duration_s: i64,
    pub latency: Option<i64>,
    pub fifo: Option<String>,
    /// `-h`/`-H`: bins (1 us each); 0: none.
    pub histogram: i64,
    /// The value `-h` was given, where cyclictest clamped it to its 1 s limit.
    pub histogram_clamped: Option<i64>,
    pub histofall: bool,
    pub histfile: Option<String>,
    /// `-i`, us.
    pub interval: i64,
    pub json: Option<String>,
    pub laptop: bool,
    /// `-l`; 0: endless.
    pub loops: i64,
    pub mainaffinity: Option<String>,
    pub mlockall: bool,
    pub refresh_on_max: bool,
    pub nanosleep: bool,
    pub nsecs: bool,
    pub oscope: i64,
    pub priority: i64,
    pub policy: CtPolicy,
    pub quiet: bool,
    pub priospread: bool,
    pub relative: bool,
    pub resolution: bool,
    pub system: bool,
    pub smi: bool,
    pub smp: bool,
    pub spike: Option<i64>,
    pub spike_nodes: Option<i64>,
    pub threads: Threads,
    pub tracemark: bool,
    pub unbuffered: bool,
    pub verbose: bool,
    pub dbg: bool,
    pub posix_timers: bool,
    pub deepest_idle_state: Option<i64>,
    pub help: bool,
    pub rtscope_json: Option<String>,
    pub no_rtscope_json: bool,
    pub rtscope_report: Option<String>,
    /// What cyclictest itself says on stderr while reading this line
    /// (`WARN: -t ignored due to smp mode`, ...), in its words.
    pub messages: Vec<String>,
}

impl Default for CtArgs {
    /// cyclictest's defaults: one unpinned SCHED_OTHER thread at 1000 us.
    fn default() -> Self {
        CtArgs {
            placement: Placement::default(),
            affinity_ignored: false,
            aligned: None,
            secaligned: None,
            breaktrace: 0,
            clock: 0,
            default_system: false,
            distance: DEFAULT_DISTANCE,
            duration_s: 0,
            latency: None,
            fifo: None,
            histogram: 0,
            histogram_clamped: None,
            histofall: false,
            histfile: None,
            interval: 1000,
            json: None,
            laptop: false,
            loops: 0,
            mainaffinity: None,
            mlockall: false,
            refresh_on_max: false,
            nanosleep: false,
            nsecs: false,
            oscope: 1,
            priority: 0,
            policy: CtPolicy::Other,
            quiet: false,
            priospread: false,
            relative: false,
            resolution: false,
            system: false,
            smi: false,
            smp: false,
            spike: None,
            spike_nodes: None,
            threads: Threads::Count(1),
            tracemark: false,
            unbuffered: false,
            verbose: false,
            dbg: false,
            posix_timers: false,
            deepest_idle_state: None,
            help: false,
            rtscope_json: None,
            no_rtscope_json: false,
            rtscope_report: None,
            messages: vec![],
        }
    }
}

/// cyclictest's default distance, us.
pub const DEFAULT_DISTANCE: i64 = 500;

/// The longest interval, us (rtscope's limit for every period: 1 h).
pub const MAX_INTERVAL_US: i64 = 3_600_000_000;

/// cyclictest's largest histogram, bins (`HIST_MAX`).
pub const HIST_MAX: i64 = 1_000_000;

/// One option as written, with its value.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Given {
    id: Id,
    /// As written (`-p`, `--priority`), for messages.
    name: String,
    value: Option<String>,
}

/// C's `atoi(w) != 0`: optional blanks and sign, then digits not all zero
/// (what cyclictest's look-ahead for `-t`, `-A` and `--secaligned` tests).
fn atoi_nonzero(w: &str) -> bool {
    let t = w.trim_start();
    let t = t.strip_prefix(['+', '-']).unwrap_or(t);
    let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
    digits.chars().any(|c| c != '0')
}

/// cyclictest's look-ahead for `-a`: a word that starts a CPU set
/// (a digit, `!`, `+`, or `all`).
fn looks_like_cpuset(w: &str) -> bool {
    w.starts_with(|c: char| c.is_ascii_digit() || c == '!' || c == '+') || w.starts_with("all")
}

/// Whether the word after an option with an optional value is that value.
fn takes_next(id: Id, w: &str) -> bool {
    match id {
        Id::Affinity => looks_like_cpuset(w),
        Id::Threads | Id::Aligned | Id::Secaligned => atoi_nonzero(w),
        _ => false,
    }
}

fn by_short(c: char) -> Option<&'static Opt> {
    OPTIONS.iter().find(|o| o.short == Some(c))
}

/// A long option by its name or, for cyclictest's own, a unique prefix.
fn by_long(name: &str) -> Result<&'static Opt, String> {
    if let Some(o) = OPTIONS.iter().find(|o| o.long == name) {
        return Ok(o);
    }
    let cands: Vec<&Opt> = OPTIONS
        .iter()
        .filter(|o| o.prefix && o.long.starts_with(name))
        .collect();
    match cands.as_slice() {
        [o] => Ok(o),
        [] => Err(format!("unrecognized option '--{name}'")),
        many => Err(format!(
            "option '--{name}' is ambiguous; possibilities: {}",
            many.iter()
                .map(|o| format!("'--{}'", o.long))
                .collect::<Vec<_>>()
                .join(" ")
        )),
    }
}

/// Splits the words into options with their values, as `getopt_long` with
/// cyclictest's look-ahead does. A word that is neither an option nor a
/// value is an error (cyclictest ignores it).
fn tokenize(args: &[String]) -> Result<Vec<Given>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let w = &args[i];
        i += 1;
        if w == "--" {
            if let Some(x) = args.get(i) {
                return Err(format!(
                    "unexpected argument '{x}' (cyclictest takes options only)"
                ));
            }
            break;
        }
        if let Some(body) = w.strip_prefix("--") {
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (body, None),
            };
            let o = by_long(name)?;
            let shown = format!("--{}", o.long);
            let value = match (o.has_arg, inline) {
                (No, Some(_)) => return Err(format!("option '{shown}' doesn't allow an argument")),
                (No, None) => None,
                (_, Some(v)) => Some(v),
                (Required, None) => match args.get(i) {
                    Some(v) => {
                        i += 1;
                        Some(v.clone())
                    }
                    None => return Err(format!("option '{shown}' requires an argument")),
                },
                (Optional, None) => match args.get(i).filter(|v| takes_next(o.id, v)) {
                    Some(v) => {
                        i += 1;
                        Some(v.clone())
                    }
                    None => None,
                },
            };
            out.push(Given {
                id: o.id,
                name: shown,
                value,
            });
            if o.id == Id::Help {
                return Ok(out);
            }
            continue;
        }
        let Some(chars) = w.strip_prefix('-').filter(|c| !c.is_empty()) else {
            return Err(format!(
                "unexpected argument '{w}' (cyclictest takes options only)"
            ));
        };
        for (pos, c) in chars.char_indices() {
            let o = by_short(c).ok_or_else(|| format!("invalid option -- '{c}'"))?;
            let rest = &chars[pos + c.len_utf8()..];
            let name = format!("-{c}");
            if o.id == Id::Help {
                out.push(Given {
                    id: o.id,
                    name,
                    value: None,
                });
                return Ok(out);
            }
            if o.has_arg == No {
                out.push(Given {
                    id: o.id,
                    name,
                    value: None,
                });
                continue;
            }
            let value = if !rest.is_empty() {
                Some(rest.to_string())
            } else {
                match args.get(i) {
                    Some(v) if o.has_arg == Required || takes_next(o.id, v) => {
                        i += 1;
                        Some(v.clone())
                    }
                    None if o.has_arg == Required => {
                        return Err(format!("option requires an argument -- '{c}'"))
                    }
                    _ => None,
                }
            };
            out.push(Given {
                id: o.id,
                name,
                value,
            });
            break;
        }
    }
    Ok(out)
}

/// A whole number, as the option's value, within cyclictest's `int`: its
/// `atoi` would wrap a larger one (`-l 4294967297` is 1 loop to it).
fn int(g: &Given) -> Result<i64, String> {
    let v = g.value.as_deref().unwrap_or("");
    let n = v.trim().parse::<i64>().map_err(|e| {
        use std::num::IntErrorKind::{NegOverflow, PosOverflow};
        match e.kind() {
            PosOverflow | NegOverflow => format!(
                "{} {v}: too large (cyclictest's atoi reads a number up to {})",
                g.name,
                i32::MAX
            ),
            _ => format!("{} {v}: not a whole number", g.name),
        }
    })?;
    if i32::try_from(n).is_err() {
        return Err(format!(
            "{} {v}: beyond cyclictest's int ({} to {}): its atoi would wrap it to {}",
            g.name,
            i32::MIN,
            i32::MAX,
            n as i32
        ));
    }
    Ok(n)
}

/// A whole number that must not be negative.
fn non_negative(g: &Given) -> Result<i64, String> {
    let n = int(g)?;
    if n < 0 {
        return Err(format!("{} {n}: must not be negative", g.name));
    }
    Ok(n)
}

/// cyclictest's `parse_time_string`: `strtol`'s number of seconds, times
/// 60, 3600 or 86400 where the first character after it is m, h or d
/// (either case), in an `int`. What it would misread is refused, saying how
/// it reads it: a suffix of more than one letter (`300ms` is 300 minutes),
/// another suffix (`1x` is 1 second), no number (`abc` is 0, no duration:
/// it runs until stopped), more seconds than an `int` holds (wrapped).
fn duration_s(g: &Given) -> Result<i64, String> {
    let v = g.value.as_deref().unwrap_or("").trim();
    let split = v
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && (c == '-' || c == '+'))))
        .map_or(v.len(), |(i, _)| i);
    let (num, suffix) = v.split_at(split);
    let n: Option<i64> = num.parse().ok();
    let Some(n) = n else {
        return Err(format!(
            "{} {v}: not a number of seconds (cyclictest would read it as 0, no duration: \
             it would run until stopped)",
            g.name
        ));
    };
    let first = suffix.chars().next().map(|c| c.to_ascii_lowercase());
    let (mult, unit) = match first {
        None => (1, "s"),
        Some('m') => (60, "minute"),
        Some('h') => (3600, "hour"),
        Some('d') => (86_400, "day"),
        Some(_) => (1, "s"),
    };
    if suffix.len() > 1 || (first.is_some() && mult == 1 && suffix != "s" && suffix != "S") {
        let read = if mult == 1 {
            format!("{n} s, ignoring '{suffix}'")
        } else {
            format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
        };
        return Err(format!(
            "{} {v}: cyclictest reads a number of seconds with at most one suffix, m, h or d; \
             it would read this as {read}",
            g.name
        ));
    }
    if n < 0 {
        return Err(format!("{} {v}: must not be negative", g.name));
    }
    match n.checked_mul(mult).filter(|&t| t <= i64::from(i32::MAX)) {
        Some(t) => Ok(t),
        None => Err(format!(
            "{} {v}: beyond cyclictest's int ({} s, about 68 years): it would wrap it to {} s",
            g.name,
            i32::MAX,
            (n as i32).wrapping_mul(mult as i32)
        )),
    }
}

fn path(g: &Given) -> Result<String, String> {
    match g.value.as_deref() {
        Some(v) if !v.is_empty() => Ok(v.to_string()),
        _ => Err(format!("{}: needs a file name", g.name)),
    }
}

/// Parses cyclictest's options (the words after the program name).
/// Errors are one line.
pub fn parse(args: &[String]) -> Result<CtArgs, String> {
    let mut a = CtArgs::default();
    let mut distance_given = false;
    let mut option_affinity = false;
    for g in tokenize(args)? {
        match g.id {
            Id::Affinity => {
                option_affinity = true;
                if a.smp {
                    a.affinity_ignored = true;
                    continue;
                }
                a.placement.pinned = true;
                a.placement.cpus = match g.value.as_deref() {
                    Some("") => return Err(format!("{}: empty CPU set", g.name)),
                    v => v.map(str::to_string),
                };
            }
            Id::Aligned => a.aligned = Some(g.value.as_ref().map_or(Ok(0), |_| non_negative(&g))?),
            Id::Secaligned => {
                a.secaligned = Some(g.value.as_ref().map_or(Ok(0), |_| non_negative(&g))?)
            }
            Id::Breaktrace => a.breaktrace = non_negative(&g)?,
            Id::Clock => a.clock = int(&g)?,
            Id::DefaultSystem => a.default_system = true,
            Id::Distance => {
                a.distance = non_negative(&g)?;
                distance_given = true;
            }
            Id::Duration => a.duration_s = duration_s(&g)?,
            Id::Latency => a.latency = Some(int(&g)?.max(0)),
            Id::Fifo => a.fifo = Some(path(&g)?),
            Id::Histogram | Id::Histofall => {
                a.histofall |= g.id == Id::Histofall;
                let n = int(&g)?;
                if n <= 0 {
                    return Err(format!(
                        "{} {n}: the histogram needs at least 1 bin",
                        g.name
                    ));
                }
                a.histogram = n.min(HIST_MAX);
                a.histogram_clamped = (n > HIST_MAX).then_some(n);
            }
            Id::Histfile => a.histfile = Some(path(&g)?),
            Id::Interval => {
                a.interval = int(&g)?;
                if a.interval < 1 {
                    return Err(format!(
                        "{} {}: the interval must be at least 1 us",
                        g.name, a.interval
                    ));
                }
                if a.interval > MAX_INTERVAL_US {
                    return Err(format!(
                        "{} {}: at most {MAX_INTERVAL_US} us (1 h: a longer wait is not a latency measurement)",
                        g.name, a.interval
                    ));
                }
            }
            Id::Json => a.json = Some(path(&g)?),
            Id::Laptop => a.laptop = true,
            Id::Loops => a.loops = non_negative(&g)?,
            Id::MainAffinity => a.mainaffinity = Some(g.value.clone().unwrap_or_default()),
            Id::Mlockall => a.mlockall = true,
            Id::Refresh => a.refresh_on_max = true,
            Id::Nanosleep => a.nanosleep = true,
            Id::Nsecs => a.nsecs = true,
            Id::Oscope => a.oscope = int(&g)?,
            Id::Priority => {
                a.priority = int(&g)?;
                if !a.policy.is_rt() {
                    a.policy = CtPolicy::Fifo;
                }
            }
            Id::Quiet => a.quiet = true,
            Id::Priospread => a.priospread = true,
            Id::Relative => a.relative = true,
            Id::Resolution => a.resolution = true,
            Id::System => a.system = true,
            Id::Smi => a.smi = true,
            Id::Smp => {
                // cyclictest's -a (with libnuma, as every distribution
                // builds it) turns on its NUMA mode, which -S refuses.
                if option_affinity {
                    return Err(format!(
                        "{} after -a: cyclictest refuses it (FATAL: numa and smp options are \
                         mutually exclusive); put -S first (it then ignores -a) or leave one out",
                        g.name
                    ));
                }
                a.smp = true;
                a.threads = Threads::PerCpu;
                a.placement.pinned = true;
            }
            Id::Spike => a.spike = Some(non_negative(&g)?),
            Id::SpikeNodes => a.spike_nodes = Some(non_negative(&g)?),
            Id::Threads => {
                if a.smp {
                    a.messages.push("WARN: -t ignored due to smp mode".into());
                    continue;
                }
                a.threads = match &g.value {
                    Some(_) => Threads::Count(int(&g)?),
                    None => Threads::PerCpu,
                };
            }
            Id::Tracemark => a.tracemark = true,
            Id::Unbuffered => a.unbuffered = true,
            Id::Verbose => a.verbose = true,
            Id::DbgCyclictest => a.dbg = true,
            Id::Policy => {
                let v = g.value.as_deref().unwrap_or("");
                a.policy = CtPolicy::parse(v).ok_or_else(|| {
                    format!(
                        "{} {v}: not a policy cyclictest knows (other, normal, batch, idle, fifo, rr)",
                        g.name
                    )
                })?;
            }
            Id::Help => {
                a.help = true;
                return Ok(a);
            }
            Id::PosixTimers => a.posix_timers = true,
            Id::DeepestIdleState => a.deepest_idle_state = Some(int(&g)?),
            Id::RtscopeJson => a.rtscope_json = Some(path(&g)?),
            Id::NoRtscopeJson => a.no_rtscope_json = true,
            Id::RtscopeReport => a.rtscope_report = Some(path(&g)?),
        }
    }
    // The checks at the end of cyclictest's process_options, in its order.
    if a.system && a.posix_timers {
        a.messages.extend([
            "WARN: The system option requires clock_nanosleep".to_string(),
            "WARN: and is not compatible with posix_timers".to_string(),
            "WARN: Using clock_nanosleep".to_string(),
        ]);
        a.posix_timers = false;
    }
    if option_affinity && a.affinity_ignored {
        a.messages.push("WARN: -a ignored due to smp mode".into());
    }
    if !(0..=1).contains(&a.clock) {
        return Err(format!(
            "-c {}: use 0 (CLOCK_MONOTONIC) or 1 (CLOCK_REALTIME)",
            a.clock
        ));
    }
    if a.oscope < 1 {
        return Err(format!("-o {}: must be at least 1", a.oscope));
    }
    if a.oscope > 1 && !a.verbose {
        return Err("-o option only meaningful, if verbose (-v)".into());
    }
    if a.histogram > 0 {
        if distance_given {
            a.messages
                .push("WARN: distance is ignored and set to 0, if histogram enabled".into());
        }
        a.distance = 0;
    }
    if !(0..=99).contains(&a.priority) {
        return Err(format!("-p {}: the priority must be 0-99", a.priority));
    }
    if a.priority > 0 && !a.policy.is_rt() {
        a.messages
            .push("policy and priority don't match: setting policy to SCHED_FIFO".into());
        a.policy = CtPolicy::Fifo;
    }
    if let Threads::Count(n) = a.threads {
        if n < 1 {
            return Err(format!("-t {n}: at least 1 thread"));
        }
    }
    if a.aligned.is_some() && a.secaligned.is_some() {
        return Err("-A/--aligned and --secaligned exclude each other".into());
    }
    if a.no_rtscope_json && a.rtscope_json.is_some() {
        return Err("--rtscope-json and --no-rtscope-json exclude each other".into());
    }
    Ok(a)
}

/// The words of a recorded cyclictest command line (a `cyclictest --json`
/// document's `cmdline`: the arguments joined with spaces) after the
/// program's name: after the last word before the first option whose file
/// name is `cyclictest` (`/usr/bin/cyclictest`, `rtscope cyclictest`), or
/// after the first word.
pub fn cmdline_args(cmdline: &str) -> Vec<String> {
    let words: Vec<&str> = cmdline.split_whitespace().collect();
    let first_opt = words
        .iter()
        .position(|w| w.starts_with('-'))
        .unwrap_or(words.len());
    let skip = words[..first_opt]
        .iter()
        .rposition(|w| w.rsplit('/').next() == Some("cyclictest"))
        .map_or(1, |i| i + 1);
    words.iter().skip(skip).map(|w| w.to_string()).collect()
}

/// Parses a recorded cyclictest command line ([`cmdline_args`]).
pub fn parse_cmdline(cmdline: &str) -> Result<CtArgs, String> {
    parse(&cmdline_args(cmdline))
}

/// `rtscope cyclictest --help`: every option and what rtscope does with it.
pub fn help() -> String {
    let mut out = String::from(
        "Runs a cyclictest (rt-tests 2.x) command line unchanged with rtscope's cyclic measurement:\n\
         prints cyclictest's output (status lines, -h histogram, --json) and writes rtscope's\n\
         result document too. Options rtscope cannot honour are named on stderr; those whose\n\
         absence would change the measurement are refused (exit 2).\n\n\
         Usage: rtscope cyclictest [CYCLICTEST OPTIONS]\n\n\
         Options:\n",
    );
    for o in OPTIONS {
        let mut names = match o.short {
            Some(c) => format!("  -{c}, --{}", o.long),
            None => format!("      --{}", o.long),
        };
        if !o.value.is_empty() {
            names.push(' ');
            names.push_str(o.value);
        }
        out.push_str(&format!("{names:<38} {}\n", o.help));
    }
    out.push_str("\nSee docs/cyclictest.md for every option's mapping, with real output.\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(line: &str) -> Result<CtArgs, String> {
        parse(
            &line
                .split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>(),
        )
    }

    fn ok(line: &str) -> CtArgs {
        p(line).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    fn err(line: &str) -> String {
        match p(line) {
            Ok(a) => panic!("{line}: accepted as {a:?}"),
            Err(e) => {
                assert!(!e.contains('\n'), "{e}");
                e
            }
        }
    }

    #[test]
    fn defaults_are_cyclictests() {
        let a = ok("");
        assert_eq!(a, CtArgs::default());
        assert_eq!(a.threads, Threads::Count(1));
        assert_eq!(a.interval, 1000);
        assert_eq!(a.distance, 500);
        assert_eq!(a.priority, 0);
        assert_eq!(a.policy, CtPolicy::Other);
        assert!(!a.placement.pinned);
        assert!(a.messages.is_empty());
    }

    /// The command lines of the integration test, option by option.
    #[test]
    fn common_lines() {
        let a = ok("-l100000000 -m -Sp99 -i200 -h400 -q");
        assert_eq!(a.loops, 100_000_000);
        assert!(a.mlockall && a.smp && a.quiet);
        assert_eq!(a.threads, Threads::PerCpu);
        assert!(a.placement.pinned && a.placement.cpus.is_none());
        assert_eq!((a.priority, a.policy), (99, CtPolicy::Fifo));
        assert_eq!((a.interval, a.histogram, a.distance), (200, 400, 0));

        let a = ok("-m -S -p 95 -i 1000 -h 400 -D 2");
        assert_eq!((a.priority, a.histogram, a.duration_s), (95, 400, 2));

        let a = ok("-t1 -p 80 -n -i 10000 -l 10000");
        assert_eq!(a.threads, Threads::Count(1));
        assert!(a.nanosleep);
        assert_eq!((a.interval, a.loops), (10_000, 10_000));

        let a = ok("-a -t -n -p99");
        assert!(a.placement.pinned && a.placement.cpus.is_none());
        assert_eq!(a.threads, Threads::PerCpu);
        assert_eq!(a.priority, 99);
    }

    #[test]
    fn bundled_short_options_and_their_values() {
        let a = ok("-Sp99");
        assert!(a.smp);
        assert_eq!(a.priority, 99);
        // A value ends the bundle; the rest of the word is the value.
        let a = ok("-mqp80");
        assert!(a.mlockall && a.quiet);
        assert_eq!(a.priority, 80);
        let a = ok("-qmi 250");
        assert_eq!(a.interval, 250);
        // A required value is the next word whatever it looks like.
        assert_eq!(err("-i -5"), "-i -5: the interval must be at least 1 us");
        assert_eq!(err("-p"), "option requires an argument -- 'p'");
        assert_eq!(err("-mz"), "invalid option -- 'z'");
        assert_eq!(err("-Spx"), "-p x: not a whole number");
    }

    #[test]
    fn threads_with_and_without_a_value() {
        assert_eq!(ok("-t").threads, Threads::PerCpu);
        assert_eq!(ok("-t4").threads, Threads::Count(4));
        assert_eq!(ok("-t 4").threads, Threads::Count(4));
        assert_eq!(ok("--threads=3").threads, Threads::Count(3));
        assert_eq!(ok("--threads 3").threads, Threads::Count(3));
        assert_eq!(ok("--threads").threads, Threads::PerCpu);
        // The next word is only taken when it is a number other than 0.
        let a = ok("-t -p 80");
        assert_eq!((a.threads, a.priority), (Threads::PerCpu, 80));
        assert_eq!(
            err("-t 0"),
            "unexpected argument '0' (cyclictest takes options only)"
        );
        assert_eq!(err("-t0"), "-t 0: at least 1 thread");
        assert_eq!(err("-t4x"), "-t 4x: not a whole number");
        assert_eq!(err("-t 4x"), "-t 4x: not a whole number");
        assert_eq!(
            err("-t foo"),
            "unexpected argument 'foo' (cyclictest takes options only)"
        );
    }

    #[test]
    fn affinity_with_and_without_a_cpu_set() {
        let a = ok("-a");
        assert_eq!(
            a.placement,
            Placement {
                pinned: true,
                cpus: None
            }
        );
        assert_eq!(ok("-a 0-1").placement.cpus.as_deref(), Some("0-1"));
        assert_eq!(ok("-a1").placement.cpus.as_deref(), Some("1"));
        assert_eq!(ok("--affinity=3,5").placement.cpus.as_deref(), Some("3,5"));
        assert_eq!(ok("--affinity 2").placement.cpus.as_deref(), Some("2"));
        assert_eq!(ok("-a all").placement.cpus.as_deref(), Some("all"));
        assert_eq!(ok("-a !1").placement.cpus.as_deref(), Some("!1"));
        assert_eq!(ok("-a +1").placement.cpus.as_deref(), Some("+1"));
        assert_eq!(ok("-a 0").placement.cpus.as_deref(), Some("0"));
        // -a then an option: the current affinity.
        let a = ok("-a -t 2");
        assert!(a.placement.pinned && a.placement.cpus.is_none());
        assert_eq!(a.threads, Threads::Count(2));
        assert_eq!(err("--affinity="), "--affinity: empty CPU set");
    }

    #[test]
    fn smp_ignores_later_a_and_t_as_cyclictest_does() {
        let a = ok("-S -t 3 -a 1");
        assert_eq!(a.threads, Threads::PerCpu);
        assert_eq!(a.placement.cpus, None);
        assert!(a.affinity_ignored);
        assert_eq!(
            a.messages,
            [
                "WARN: -t ignored due to smp mode",
                "WARN: -a ignored due to smp mode"
            ]
        );
        // -t before -S: overridden.
        let a = ok("-t 3 -S");
        assert_eq!(a.threads, Threads::PerCpu);
        assert!(a.messages.is_empty());
        // -a before -S: cyclictest 2.40 stops (before: it ran), with or
        // without a CPU set, short or long.
        for line in [
            "-a 1 -t 3 -S",
            "-a0 -S",
            "-a -S",
            "--affinity=0 --smp",
            "-a 0 -Sp90",
        ] {
            let e = err(line);
            assert!(
                e.contains("after -a: cyclictest refuses it (FATAL: numa and smp options are mutually exclusive)"),
                "{line}: {e}"
            );
        }
    }

    #[test]
    fn long_options_with_equals_or_the_next_word_and_abbreviated() {
        for line in [
            "--interval=250 --priority=70 --loops=9 --duration=1m --distance=10",
            "--interval 250 --priority 70 --loops 9 --duration 1m --distance 10",
            "--inter 250 --prior=70 --loo 9 --dur=1m --dis 10",
        ] {
            let a = ok(line);
            assert_eq!(
                (a.interval, a.priority, a.loops, a.duration_s, a.distance),
                (250, 70, 9, 60, 10),
                "{line}"
            );
        }
        assert_eq!(
            err("--prio=5"),
            "option '--prio' is ambiguous; possibilities: '--priority' '--priospread'"
        );
        assert_eq!(err("--bogus"), "unrecognized option '--bogus'");
        assert_eq!(
            err("--mlockall=1"),
            "option '--mlockall' doesn't allow an argument"
        );
        assert_eq!(
            err("--interval"),
            "option '--interval' requires an argument"
        );
        // rtscope's and other versions' options are not abbreviated.
        assert_eq!(err("--rtscope-js=x"), "unrecognized option '--rtscope-js'");
        assert!(ok("--de").default_system);
        assert!(ok("--nanosleep").nanosleep);
        assert!(ok("--smp").smp);
    }

    #[test]
    fn abbreviations_resolve_as_in_cyclictest_2_40() {
        // Unique in 2.40's table.
        assert!(ok("--ml").mlockall);
        assert!(ok("--q").quiet);
        assert!(ok("--ns").nsecs);
        assert_eq!(ok("--lo 3").loops, 3);
        // Ambiguous there.
        assert!(err("--h 5").contains("ambiguous"));
        assert!(err("--s").contains("ambiguous"));
        assert!(err("--sm").contains("'--smi' '--smp'"));
    }

    #[test]
    fn every_option_of_the_table() {
        let a = ok(
            "-A 5 -b 100 -c 1 --default-system -d 20 -D 3h --latency=0 -F /tmp/f -i 300 \
             --json=j.json --laptop -l 7 --mainaffinity=0 -m -M -n -N -p 50 --policy=rr -q \
             -r -R -s --smi --spike=50 --spike-nodes=9 -t 2 --tracemark -u -v -o 3 \
             --dbg_cyclictest --deepest-idle-state=1 --rtscope-json=r.json --rtscope-report=r.html",
        );
        assert_eq!(a.aligned, Some(5));
        assert_eq!(a.breaktrace, 100);
        assert_eq!(a.clock, 1);
        assert!(a.default_system && a.laptop && a.mlockall && a.refresh_on_max);
        assert_eq!(a.distance, 20);
        assert_eq!(a.duration_s, 3 * 3600);
        assert_eq!(a.latency, Some(0));
        assert_eq!(a.fifo.as_deref(), Some("/tmp/f"));
        assert_eq!(a.interval, 300);
        assert_eq!(a.json.as_deref(), Some("j.json"));
        assert_eq!(a.loops, 7);
        assert_eq!(a.mainaffinity.as_deref(), Some("0"));
        assert!(a.nanosleep && a.nsecs && a.quiet && a.relative && a.resolution);
        assert!(a.system && a.smi && a.tracemark && a.unbuffered && a.verbose && a.dbg);
        assert_eq!((a.priority, a.policy), (50, CtPolicy::Rr));
        assert_eq!((a.spike, a.spike_nodes), (Some(50), Some(9)));
        assert_eq!(a.threads, Threads::Count(2));
        assert_eq!(a.oscope, 3);
        assert_eq!(a.deepest_idle_state, Some(1));
        assert_eq!(a.rtscope_json.as_deref(), Some("r.json"));
        assert_eq!(a.rtscope_report.as_deref(), Some("r.html"));
        let a = ok("-x --secaligned 250 -H 100 --histfile=h.txt --priospread");
        assert!(a.posix_timers && a.priospread && a.histofall);
        assert_eq!(a.secaligned, Some(250));
        assert_eq!(a.histogram, 100);
        assert_eq!(a.histfile.as_deref(), Some("h.txt"));
        assert!(ok("--no-rtscope-json").no_rtscope_json);
        assert_eq!(ok("--secaligned").secaligned, Some(0));
        assert_eq!(ok("-A").aligned, Some(0));
        assert_eq!(ok("--latency=-3").latency, Some(0));
    }

    #[test]
    fn help_stops_the_reading() {
        assert!(ok("--help").help);
        assert!(ok("-? -p 500").help);
        assert!(ok("-m --he -p 500").help);
        assert!(ok("-m --help --bogus").help);
        let h = help();
        for o in OPTIONS {
            assert!(
                h.contains(&format!("--{} ", o.long)) || h.contains(&format!("--{}\n", o.long)),
                "{}",
                o.long
            );
        }
    }

    #[test]
    fn priority_and_policy_as_cyclictest_settles_them() {
        // -p makes the policy FIFO, unless it is already RR.
        assert_eq!(ok("-p 10").policy, CtPolicy::Fifo);
        assert_eq!(ok("--policy=rr -p 10").policy, CtPolicy::Rr);
        // A priority with a non-RT policy after it: FIFO, with cyclictest's message.
        let a = ok("-p 10 --policy=batch");
        assert_eq!(a.policy, CtPolicy::Fifo);
        assert_eq!(
            a.messages,
            ["policy and priority don't match: setting policy to SCHED_FIFO"]
        );
        // No priority: the policy as named.
        assert_eq!(ok("--policy=idle").policy, CtPolicy::Idle);
        assert_eq!(ok("--policy=NORMAL").policy, CtPolicy::Other);
        assert_eq!(ok("--policy=fifo").policy, CtPolicy::Fifo);
        assert_eq!(ok("--policy fifo").priority, 0);
        assert!(err("--policy=deadline").contains("not a policy cyclictest knows"));
        assert_eq!(ok("-p 0").priority, 0);
        assert_eq!(ok("-p 99").priority, 99);
        assert_eq!(err("-p 100"), "-p 100: the priority must be 0-99");
        assert_eq!(err("-p -1"), "-p -1: the priority must be 0-99");
    }

    #[test]
    fn durations_as_cyclictest_reads_them() {
        assert_eq!(ok("-D 2").duration_s, 2);
        assert_eq!(ok("-D 2s").duration_s, 2);
        assert_eq!(ok("-D2m").duration_s, 120);
        assert_eq!(ok("-D 2M").duration_s, 120);
        assert_eq!(ok("-D 1h").duration_s, 3600);
        assert_eq!(ok("-D 1H").duration_s, 3600);
        assert_eq!(ok("-D 1d").duration_s, 86_400);
        assert_eq!(ok("-D 1D").duration_s, 86_400);
        assert_eq!(ok("-D 0").duration_s, 0);
        // What cyclictest 2.40 does with each, as the refusal says
        // (before: `1x` and `abc` were said to be read as `x` and `a`).
        for (line, says) in [
            ("-D 300ms", "-D 300ms: cyclictest reads a number of seconds with at most one suffix, m, h or d; it would read this as 300 minutes"),
            ("-D 2min", "it would read this as 2 minutes"),
            ("-D 1h30m", "it would read this as 1 hour"),
            ("-D 1x", "-D 1x: cyclictest reads a number of seconds with at most one suffix, m, h or d; it would read this as 1 s, ignoring 'x'"),
            ("-D 5sec", "it would read this as 5 s, ignoring 'sec'"),
            ("--duration=abc", "--duration abc: not a number of seconds (cyclictest would read it as 0, no duration: it would run until stopped)"),
            ("-D m", "-D m: not a number of seconds"),
            ("-D -5", "-D -5: must not be negative"),
            // Wrapped in cyclictest's int (before: these ran as written).
            ("-D 99999999999d", "-D 99999999999d: beyond cyclictest's int (2147483647 s, about 68 years): it would wrap it to"),
            ("-D 99999999999999999d", "beyond cyclictest's int"),
            ("-D 2147483648", "beyond cyclictest's int"),
        ] {
            let e = err(line);
            assert!(e.starts_with(says) || e.contains(says), "{line}: {e}");
        }
        assert!(err("-D 1h30m").ends_with("as 1 hour"));
        assert_eq!(ok("-D 2147483647").duration_s, 2_147_483_647);
        assert_eq!(ok("-D 24855d").duration_s, 24_855 * 86_400);
    }

    /// Values cyclictest's `atoi` would wrap in its `int` are refused,
    /// saying what it would read (before: `-l 4294967297` ran 4294967297
    /// loops, cyclictest runs 1).
    #[test]
    fn values_atoi_would_wrap_are_refused() {
        for (line, wrapped) in [
            ("-l 4294967297", "1"),
            ("-i 4294967296", "0"),
            ("-p 2147483648", "-2147483648"),
            ("-h -2147483649", "2147483647"),
            ("--loops=99999999999", "1215752191"),
        ] {
            let e = err(line);
            assert!(
                e.contains("beyond cyclictest's int (-2147483648 to 2147483647): its atoi would wrap it to ")
                    && e.ends_with(&format!(" {wrapped}")),
                "{line}: {e}"
            );
        }
        assert_eq!(ok("-l 2147483647").loops, 2_147_483_647);
        assert!(err("-l 99999999999999999999").contains("too large"));
    }

    #[test]
    fn histogram_and_distance() {
        let a = ok("-d 100 -h 50");
        assert_eq!((a.histogram, a.distance), (50, 0));
        assert_eq!(
            a.messages,
            ["WARN: distance is ignored and set to 0, if histogram enabled"]
        );
        // Without -d: no message, still 0.
        let a = ok("-t 2 -h 50");
        assert_eq!(a.distance, 0);
        assert!(a.messages.is_empty());
        assert_eq!(ok("-d 100").distance, 100);
        assert_eq!(ok("-d 0").distance, 0);
        assert_eq!(err("-h 0"), "-h 0: the histogram needs at least 1 bin");
        assert_eq!(err("-H -4"), "-H -4: the histogram needs at least 1 bin");
        let a = ok("-h 2000000");
        assert_eq!(
            (a.histogram, a.histogram_clamped),
            (HIST_MAX, Some(2_000_000))
        );
        assert_eq!(ok("-h 1000000").histogram_clamped, None);
        assert!(!ok("-h 5").histofall);
        assert!(ok("-H 5").histofall);
    }

    #[test]
    fn cyclictests_other_checks() {
        assert_eq!(ok("-c 0").clock, 0);
        assert_eq!(
            err("-c 2"),
            "-c 2: use 0 (CLOCK_MONOTONIC) or 1 (CLOCK_REALTIME)"
        );
        assert_eq!(
            err("-c -1"),
            "-c -1: use 0 (CLOCK_MONOTONIC) or 1 (CLOCK_REALTIME)"
        );
        assert_eq!(err("-o 2"), "-o option only meaningful, if verbose (-v)");
        assert_eq!(err("-v -o 0"), "-o 0: must be at least 1");
        assert_eq!(ok("-v -o 1").oscope, 1);
        assert_eq!(
            err("-A 1 --secaligned"),
            "-A/--aligned and --secaligned exclude each other"
        );
        assert_eq!(err("-i 0"), "-i 0: the interval must be at least 1 us");
        assert_eq!(ok("-i 1").interval, 1);
        assert_eq!(ok("-i 2147483647").interval, 2_147_483_647);
        // Beyond cyclictest's int before the hour is reached.
        assert!(err("-i 3600000001").contains("beyond cyclictest's int"));
        assert_eq!(err("-l -1"), "-l -1: must not be negative");
        assert_eq!(ok("-l 0").loops, 0);
        assert_eq!(err("-d -1"), "-d -1: must not be negative");
        assert_eq!(err("-b x"), "-b x: not a whole number");
        assert!(err("-l 18446744073709551615")
            .starts_with("-l 18446744073709551615: too large (cyclictest's atoi"));
        assert!(err("-p -99999999999999999999").starts_with("-p -99999999999999999999: too large"));
        assert_eq!(err("--json="), "--json: needs a file name");
        assert_eq!(
            err("--rtscope-json=a --no-rtscope-json"),
            "--rtscope-json and --no-rtscope-json exclude each other"
        );
        let a = ok("-s -x");
        assert!(a.system && !a.posix_timers);
        assert_eq!(a.messages.len(), 3);
        assert!(ok("-x").posix_timers);
    }

    #[test]
    fn stray_words_and_the_end_of_options() {
        assert_eq!(
            err("-m foo"),
            "unexpected argument 'foo' (cyclictest takes options only)"
        );
        assert_eq!(
            err("-"),
            "unexpected argument '-' (cyclictest takes options only)"
        );
        assert!(ok("-m --").mlockall);
        assert_eq!(
            err("-m -- -q"),
            "unexpected argument '-q' (cyclictest takes options only)"
        );
    }

    #[test]
    fn look_ahead_words() {
        for (w, yes) in [
            ("4", true),
            ("0", false),
            ("00", false),
            ("+3", true),
            ("-3", true),
            (" 7", true),
            ("x", false),
            ("", false),
        ] {
            assert_eq!(atoi_nonzero(w), yes, "{w:?}");
        }
        for (w, yes) in [
            ("0", true),
            ("0-1", true),
            ("!2", true),
            ("+1", true),
            ("all", true),
            ("-t", false),
            ("x", false),
        ] {
            assert_eq!(looks_like_cpuset(w), yes, "{w:?}");
        }
        assert!(!takes_next(Id::Priority, "4"));
        assert!(takes_next(Id::Aligned, "4"));
        assert!(takes_next(Id::Secaligned, "4"));
        assert!(!takes_next(Id::Threads, "0"));
    }

    #[test]
    fn recorded_command_lines() {
        assert_eq!(
            cmdline_args("cyclictest -m -p 90 --json=a.json"),
            ["-m", "-p", "90", "--json=a.json"]
        );
        assert_eq!(cmdline_args("/usr/bin/cyclictest -q"), ["-q"]);
        assert_eq!(
            cmdline_args("rtscope cyclictest -q -l 5"),
            ["-q", "-l", "5"]
        );
        assert_eq!(cmdline_args("./ct -q"), ["-q"]);
        assert_eq!(cmdline_args(""), Vec::<String>::new());
        assert_eq!(cmdline_args("cyclictest"), Vec::<String>::new());
        // A file named cyclictest after the options is a value, not the program.
        assert_eq!(
            cmdline_args("cyclictest --json cyclictest"),
            ["--json", "cyclictest"]
        );
        let a = parse_cmdline("cyclictest -m -Sp90 -i 500 -h 150 -q --json=x.json").unwrap();
        assert_eq!((a.priority, a.interval, a.histogram), (90, 500, 150));
        assert!(parse_cmdline("cyclictest --bogus").is_err());
    }
}
