//! A parsed cyclictest command line turned into rtscope's cyclic options:
//! what cyclictest would run (threads, CPUs, interval and distance,
//! policy and priority, wait, clock, end, break), what rtscope cannot
//! honour (named, one line each), and what it refuses because running
//! without it would measure something else.

use rtscope_core::cyclic::WakeMethod;
use rtscope_core::named::MeasureClock;
use rtscope_core::rt::Policy;
use rtscope_core::units::{format_cpu_list, parse_cpu_list};

use super::args::{CtArgs, CtPolicy, Threads};
use crate::experiment::cyclic::CyclicOptions;
use crate::experiment::cyclic_trace::TraceMode;
use crate::experiment::run::{RtChoice, RunRequest};
use crate::output::cyclictest::Style;

/// The CPUs cyclictest would see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    /// The CPUs this process may run on (what `-S`, `-t` and `-a` without
    /// a list use: cyclictest's `numa_num_task_cpus` and current affinity).
    pub allowed: Vec<usize>,
    /// The online CPUs (`-a all`).
    pub online: Vec<usize>,
}

impl Machine {
    /// This machine and process (`Cpus_allowed_list` of
    /// `/proc/self/status`, within the online CPUs).
    pub fn this() -> Machine {
        let online = rtscope_core::units::online_cpus();
        let allowed = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| allowed_list(&s))
            .map(|a| {
                a.into_iter()
                    .filter(|c| online.contains(c))
                    .collect::<Vec<_>>()
            })
            .filter(|a| !a.is_empty())
            .unwrap_or_else(|| online.clone());
        Machine { allowed, online }
    }
}

/// The `Cpus_allowed_list:` of a `/proc/PID/status` text.
fn allowed_list(status: &str) -> Option<Vec<usize>> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(|v| parse_cpu_list(v.trim()).ok())
}

/// What a cyclictest line asks of rtscope.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The measurement (outputs not set).
    pub options: CyclicOptions,
    /// cyclictest's display.
    pub style: Style,
    /// Options not honoured, one line each (stderr, and the document's warnings).
    pub notes: Vec<String>,
    /// What cyclictest itself would say (`defaulting realtime priority to 3`).
    pub messages: Vec<String>,
}

/// A CPU set of `-a`: a list (`0-3,6`) or `all`.
fn cpu_set(v: &str, m: &Machine) -> Result<Vec<usize>, String> {
    if v == "all" {
        return Ok(m.online.clone());
    }
    if v.starts_with(['!', '+']) || v.contains(':') {
        return Err(format!(
            "-a {v}: libnuma's '!', '+' and ':' CPU set forms are not supported: list the CPUs (0-3,6) or give 'all'"
        ));
    }
    parse_cpu_list(v).map_err(|_| format!("-a {v}: not a CPU list (such as 0-3,6)"))
}

/// Resolves `a` for machine `m` (errors: one line, a usage error to the caller).
pub fn resolve(a: &CtArgs, m: &Machine) -> Result<Resolved, String> {
    if a.priospread {
        return Err(
            "--priospread is refused: rtscope runs every measurement thread at one priority, so the run would measure something else"
                .into(),
        );
    }
    if let Some(l) = a.latency.filter(|l| *l > 0) {
        return Err(format!(
            "--latency={l} is refused: rtscope holds /dev/cpu_dma_latency at 0 (or leaves it alone with --default-system), so the run would measure other idle states"
        ));
    }
    let mut notes = Vec::new();
    let mut messages = Vec::new();
    let list = a
        .placement
        .cpus
        .as_deref()
        .map(|v| cpu_set(v, m))
        .transpose()?;
    if let Some(l) = &list {
        if l.is_empty() {
            return Err("-a: an empty CPU set".into());
        }
        if let Some(bad) = l.iter().find(|c| !m.online.contains(c)) {
            return Err(format!(
                "-a: CPU {bad} is not online (online CPUs: {})",
                format_cpu_list(&m.online)
            ));
        }
    }
    let pool = list.clone().unwrap_or_else(|| m.allowed.clone());
    let threads = match a.threads {
        Threads::Count(n) => usize::try_from(n).map_err(|_| format!("-t {n}: too many"))?,
        Threads::PerCpu => pool.len(),
    };
    let mut priority = a.priority;
    if a.policy.is_rt() && priority == 0 {
        priority = (threads as i64).saturating_add(1);
        messages.push(format!("defaulting realtime priority to {priority}"));
        if priority > 99 {
            return Err(format!(
                "{threads} threads: cyclictest's default priority (threads + 1 = {priority}) is above 99: give -p"
            ));
        }
    }
    let (policy, style_policy) = match a.policy {
        CtPolicy::Fifo => (Policy::Fifo, "fifo".to_string()),
        CtPolicy::Rr => (Policy::Rr, "rr".to_string()),
        // Without a priority cyclictest runs its threads as SCHED_OTHER
        // whatever --policy names (its "batch/other").
        p => (Policy::Other, format!("{}/other", p.name())),
    };
    let rt = RtChoice {
        policy,
        priority: if policy.is_rt() { priority as i32 } else { 0 },
        no_rt: false,
        default_system: a.default_system || a.laptop,
    };
    if a.default_system {
        messages.push("WARN: not setting cpu_dma_latency from cyclictest".into());
    } else if a.laptop {
        messages.push("WARN: not setting cpu_dma_latency to save battery power".into());
    }
    let wake = if a.system {
        WakeMethod::Nanosleep
    } else if a.posix_timers {
        WakeMethod::PosixTimer
    } else if a.relative {
        WakeMethod::Relative
    } else {
        WakeMethod::Absolute
    };
    let clock = if a.clock == 1 {
        MeasureClock::Realtime
    } else {
        MeasureClock::Monotonic
    };
    let break_above_ns = (a.breaktrace > 0).then(|| {
        // cyclictest breaks when the latency in its unit exceeds -b:
        // in whole us, above b us means at least (b + 1) us.
        if a.nsecs {
            a.breaktrace as u64
        } else {
            (a.breaktrace as u64)
                .saturating_mul(1000)
                .saturating_add(999)
        }
    });
    let mut trace = TraceMode::Off;
    if a.tracemark {
        if a.breaktrace == 0 {
            notes.push(not_honoured(
                "--tracemark",
                "it has no effect without -b (as in cyclictest)",
            ));
        } else if clock != MeasureClock::Monotonic || wake != WakeMethod::Absolute {
            notes.push(not_honoured(
                "--tracemark",
                "rtscope's trace of the late samples needs CLOCK_MONOTONIC and an absolute clock_nanosleep (no -c 1, -r, -s or -x)",
            ));
        } else {
            trace = TraceMode::Auto;
        }
    }
    // Options rtscope does not act on: named.
    let named: [(bool, &str, &str); 11] = [
        (a.fifo.is_some(), "-F/--fifo", "rtscope cyclic --stream gives the figures while a run goes on"),
        (a.mainaffinity.is_some(), "--mainaffinity", "rtscope's aggregator thread is not pinned"),
        (a.resolution, "-R/--resolution", "rtscope clock measures what reading each clock costs"),
        (a.smi, "--smi", "SMIs are not counted"),
        (a.spike.is_some() || a.spike_nodes.is_some(), "--spike", "the result document keeps the worst samples with their times (--spikes of rtscope cyclic)"),
        (a.verbose, "-v/--verbose", "every sample is not printed; rtscope cyclic --raw FILE writes them all"),
        (a.dbg, "--dbg_cyclictest", "nothing to debug in cyclictest"),
        (a.secaligned.is_some(), "--secaligned", "the threads start together at one common time, not at a full second"),
        (a.aligned.is_some_and(|o| o > 0), "-A/--aligned USEC", "the threads start together at one common time; the offset is not applied"),
        (a.deepest_idle_state.is_some(), "--deepest-idle-state", "/dev/cpu_dma_latency held at 0 keeps every CPU out of deep idle states"),
        (a.histfile.is_some() && a.histogram == 0, "--histfile", "it has no effect without -h (as in cyclictest)"),
    ];
    for (given, name, why) in named {
        if given {
            notes.push(not_honoured(name, why));
        }
    }
    if a.mlockall && rt.default_system {
        notes.push(not_honoured(
            "-m/--mlockall",
            "with --default-system or --laptop rtscope leaves memory unlocked",
        ));
    }
    if a.nsecs && a.histogram > 0 {
        notes.push(
            "-N with -h: the histogram keeps 1 us bins (cyclictest's are 1 ns wide with -N)".into(),
        );
    }
    if let Some(n) = a.histogram_clamped {
        notes.push(format!(
            "-h {n}: cyclictest's largest histogram is 1000000 bins (1 s): 1000000 are kept"
        ));
    }
    let options = CyclicOptions {
        threads: Some(threads),
        cpus: a.placement.pinned.then_some(pool),
        period_ns: (a.interval as u64).saturating_mul(1000),
        distance_ns: (a.distance as u64).saturating_mul(1000),
        loops: (a.loops > 0).then_some(a.loops as u64),
        duration_ns: (a.duration_s > 0)
            .then(|| (a.duration_s as u64).saturating_mul(1_000_000_000)),
        clock,
        wake,
        run: RunRequest {
            rt,
            ..RunRequest::default()
        },
        histogram_max_ns: if a.histogram > 0 {
            a.histogram as u64 * 1000
        } else {
            CyclicOptions::default().histogram_max_ns
        },
        break_above_ns,
        trace,
        trace_outliers_ns: (trace != TraceMode::Off)
            .then_some(break_above_ns)
            .flatten(),
        ..CyclicOptions::default()
    };
    let style = Style {
        quiet: a.quiet,
        nsecs: a.nsecs,
        refresh_on_max: a.refresh_on_max,
        histogram: a.histogram > 0,
        histofall: a.histofall,
        policy: style_policy,
    };
    Ok(Resolved {
        options: CyclicOptions {
            cyclictest: Some(style.clone()),
            ..options
        },
        style,
        notes,
        messages,
    })
}

/// The line naming an option rtscope does not act on.
fn not_honoured(option: &str, why: &str) -> String {
    format!("cyclictest option {option} is not honoured: {why}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::cyclictest::args::parse;
    use proptest::strategy::Strategy;

    fn machine() -> Machine {
        Machine {
            allowed: vec![0, 1, 2, 3],
            online: vec![0, 1, 2, 3, 4, 5],
        }
    }

    fn r(line: &str) -> Resolved {
        let a = parse(
            &line
                .split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>(),
        )
        .unwrap_or_else(|e| panic!("{line}: {e}"));
        resolve(&a, &machine()).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    fn refused(line: &str) -> String {
        let a = parse(
            &line
                .split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>(),
        )
        .unwrap();
        resolve(&a, &machine()).expect_err(line)
    }

    #[test]
    fn cyclictests_default_is_one_unpinned_sched_other_thread() {
        let o = r("").options;
        assert_eq!((o.threads, o.cpus.clone()), (Some(1), None));
        assert_eq!(o.run.rt.policy, Policy::Other);
        assert_eq!(o.run.rt.priority, 0);
        assert_eq!((o.period_ns, o.distance_ns), (1_000_000, 500_000));
        assert_eq!((o.loops, o.duration_ns), (None, None));
        assert_eq!(
            (o.wake, o.clock),
            (WakeMethod::Absolute, MeasureClock::Monotonic)
        );
        assert!(!o.run.rt.default_system);
        assert_eq!(o.break_above_ns, None);
        assert_eq!(o.trace, TraceMode::Off);
        let s = r("").style;
        assert_eq!(s.policy, "other/other");
        assert!(!s.histogram && !s.quiet);
        assert_eq!(o.cyclictest, Some(s));
    }

    #[test]
    fn threads_and_cpus() {
        // -S: one per allowed CPU, pinned.
        let o = r("-S -p 90").options;
        assert_eq!((o.threads, o.cpus), (Some(4), Some(vec![0, 1, 2, 3])));
        // -t: one per allowed CPU, unpinned; -t N: N.
        let o = r("-t").options;
        assert_eq!((o.threads, o.cpus), (Some(4), None));
        assert_eq!(r("-t 7").options.threads, Some(7));
        // -a alone: one thread, pinned to the first allowed CPU.
        let o = r("-a").options;
        assert_eq!((o.threads, o.cpus), (Some(1), Some(vec![0, 1, 2, 3])));
        // -a LIST -t: one per listed CPU; -a all: every online CPU.
        let o = r("-a 4-5 -t").options;
        assert_eq!((o.threads, o.cpus), (Some(2), Some(vec![4, 5])));
        assert_eq!(r("-a all -t").options.threads, Some(6));
        // -a before -S: refused, as cyclictest refuses it.
        let e = parse(&["-a", "5", "-S"].map(String::from)).unwrap_err();
        assert!(e.contains("mutually exclusive"), "{e}");
        assert_eq!(
            refused("-a 9"),
            "-a: CPU 9 is not online (online CPUs: 0-5)"
        );
        assert!(refused("-a !1").contains("not supported"));
        assert!(refused("-a +1").contains("not supported"));
        assert!(refused("-a 1:2").contains("not supported"));
        assert_eq!(refused("-a 3-1"), "-a 3-1: not a CPU list (such as 0-3,6)");
    }

    #[test]
    fn priority_and_policy() {
        let x = r("-p 80");
        assert_eq!(
            (x.options.run.rt.policy, x.options.run.rt.priority),
            (Policy::Fifo, 80)
        );
        assert_eq!(x.style.policy, "fifo");
        assert!(x.messages.is_empty());
        let x = r("--policy=rr -p 7");
        assert_eq!(
            (x.options.run.rt.policy, x.options.run.rt.priority),
            (Policy::Rr, 7)
        );
        assert_eq!(x.style.policy, "rr");
        // An RT policy without a priority: threads + 1, as cyclictest says.
        let x = r("-t 3 --policy=fifo");
        assert_eq!(x.options.run.rt.priority, 4);
        assert_eq!(x.messages, ["defaulting realtime priority to 4"]);
        assert_eq!(r("-p 0").options.run.rt.priority, 2);
        assert!(refused("-t 99 -p 0").contains("above 99"));
        assert_eq!(r("-t 98 -p 0").options.run.rt.priority, 99);
        // batch and idle without a priority run as SCHED_OTHER, as in cyclictest.
        let x = r("--policy=batch");
        assert_eq!(
            (x.options.run.rt.policy, x.options.run.rt.priority),
            (Policy::Other, 0)
        );
        assert_eq!(x.style.policy, "batch/other");
        assert_eq!(r("--policy=idle").style.policy, "idle/other");
    }

    #[test]
    fn wake_clock_and_end() {
        assert_eq!(r("-r").options.wake, WakeMethod::Relative);
        assert_eq!(r("-s").options.wake, WakeMethod::Nanosleep);
        assert_eq!(r("-x").options.wake, WakeMethod::PosixTimer);
        assert_eq!(r("-x -r").options.wake, WakeMethod::PosixTimer);
        assert_eq!(r("-s -x").options.wake, WakeMethod::Nanosleep);
        assert_eq!(r("-s -r").options.wake, WakeMethod::Nanosleep);
        assert_eq!(r("-n").options.wake, WakeMethod::Absolute);
        assert_eq!(r("-c 1").options.clock, MeasureClock::Realtime);
        let o = r("-l 10 -D 2m -i 250 -d 30 -t 2").options;
        assert_eq!(o.loops, Some(10));
        assert_eq!(o.duration_ns, Some(120_000_000_000));
        assert_eq!((o.period_ns, o.distance_ns), (250_000, 30_000));
        assert_eq!(r("-l 0 -D 0").options.loops, None);
        assert_eq!(r("-l 0 -D 0").options.duration_ns, None);
    }

    #[test]
    fn histogram_and_break() {
        let x = r("-h 150 -q -N -M -H 20");
        assert_eq!(x.options.histogram_max_ns, 20_000);
        assert!(x.style.histogram && x.style.histofall && x.style.quiet);
        assert!(x.style.nsecs && x.style.refresh_on_max);
        assert!(x.notes.iter().any(|n| n.contains("1 us bins")));
        assert_eq!(r("").options.histogram_max_ns, 400_000);
        assert_eq!(r("-h 1").options.histogram_max_ns, 1000);
        // Above 100 us in whole us: 101 us or more.
        assert_eq!(r("-b 100").options.break_above_ns, Some(100_999));
        assert_eq!(r("-b 100 -N").options.break_above_ns, Some(100));
        assert_eq!(r("-b 0").options.break_above_ns, None);
        let x = r("-b 100 --tracemark");
        assert_eq!(x.options.trace, TraceMode::Auto);
        assert_eq!(x.options.trace_outliers_ns, Some(100_999));
        assert!(x.notes.is_empty());
        let x = r("--tracemark");
        assert_eq!(x.options.trace, TraceMode::Off);
        assert_eq!(x.options.trace_outliers_ns, None);
        assert_eq!(x.notes.len(), 1);
        let x = r("-b 5 --tracemark -r");
        assert_eq!(x.options.trace, TraceMode::Off);
        assert!(x.notes[0].contains("needs CLOCK_MONOTONIC"));
        assert_eq!(r("-b 5 --tracemark -c 1").options.trace, TraceMode::Off);
        let x = r("-h 2000000");
        assert_eq!(x.options.histogram_max_ns, 1_000_000_000);
        assert_eq!(x.notes.len(), 1);
    }

    #[test]
    fn system_settings() {
        let x = r("--default-system");
        assert!(x.options.run.rt.default_system);
        assert_eq!(
            x.messages,
            ["WARN: not setting cpu_dma_latency from cyclictest"]
        );
        let x = r("--laptop -m");
        assert!(x.options.run.rt.default_system);
        assert_eq!(
            x.messages,
            ["WARN: not setting cpu_dma_latency to save battery power"]
        );
        assert!(x.notes[0].starts_with("cyclictest option -m/--mlockall is not honoured"));
        assert!(r("-m").notes.is_empty());
        assert!(r("--latency=0").notes.is_empty());
        assert!(refused("--latency=10").starts_with("--latency=10 is refused"));
        assert!(refused("--priospread -p 10").starts_with("--priospread is refused"));
    }

    #[test]
    fn what_is_not_honoured_is_named_once_each() {
        let x = r(
            "-F /tmp/f --mainaffinity=0 -R --smi --spike=5 --spike-nodes=3 -v -o 2 \
                   --dbg_cyclictest --secaligned 10 --deepest-idle-state=1 --histfile=h",
        );
        assert_eq!(x.notes.len(), 10, "{:#?}", x.notes);
        for n in &x.notes {
            assert!(
                n.starts_with("cyclictest option ") && n.contains(" is not honoured: "),
                "{n}"
            );
            assert!(!n.contains('\n'));
        }
        assert!(r("-A").notes.is_empty());
        assert_eq!(r("-A 20").notes.len(), 1);
        assert!(r("--histfile=h -h 5").notes.is_empty());
        assert!(r("-m -n -u -q -M").notes.is_empty());
    }

    /// The largest values cyclictest's int holds are not an overflow (the
    /// plan's limits refuse them); larger ones are refused as it would wrap them.
    #[test]
    fn huge_values_saturate() {
        let x = r("-t 2 -i 2147483647 -d 2147483647 -b 2147483647");
        assert_eq!(x.options.period_ns, 2_147_483_647_000);
        assert_eq!(x.options.distance_ns, 2_147_483_647_000);
        assert_eq!(x.options.break_above_ns, Some(2_147_483_647_999));
        let e = parse(&["-d", "9223372036854775807"].map(String::from)).unwrap_err();
        assert!(e.contains("beyond cyclictest's int"), "{e}");
        assert!(refused("-t 2147483647 --policy=fifo").contains("above 99"));
        assert!(crate::experiment::cyclic::plan(&x.options).is_err());
    }

    /// Cases the property below found once, kept so that they stay fixed.
    #[test]
    fn lines_the_property_found() {
        for line in ["-t0 -?", "-t 0 -h 5 -?"] {
            let words: Vec<String> = line.split_whitespace().map(String::from).collect();
            if let Ok(a) = parse(&words) {
                if let Ok(x) = resolve(&a, &machine()) {
                    let _ = crate::experiment::cyclic::plan(&x.options);
                }
            }
        }
    }

    proptest::proptest! {
        /// Any command line: parsed and resolved, or one line of error; never a panic.
        #[test]
        fn any_line_is_read_or_refused_in_one_line(
            words in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::sample::select(vec![
                        "-a", "-t", "-S", "-p", "-i", "-d", "-D", "-l", "-h", "-H", "-b", "-N",
                        "-q", "-m", "-n", "-r", "-s", "-x", "-A", "-c", "-o", "-v", "-M",
                        "--policy=fifo", "--policy=idle", "--latency=0", "--priospread",
                        "--secaligned", "--tracemark", "--json=-", "--laptop", "--", "-Sp99",
                        "-t0", "-a0-1", "-a!1", "--dur", "--prio", "--smp", "-?",
                    ]).prop_map(String::from),
                    "-?[0-9]{1,20}[mhdsx]?",
                    "\\PC{0,6}",
                ],
                0..10,
            ),
        ) {
            if let Ok(a) = crate::experiment::cyclictest::args::parse(&words) {
                match resolve(&a, &machine()) {
                    Ok(x) => {
                        let _ = crate::experiment::cyclic::plan(&x.options);
                    }
                    Err(e) => proptest::prop_assert!(!e.contains('\n'), "{}", e),
                }
            } else if let Err(e) = crate::experiment::cyclictest::args::parse(&words) {
                proptest::prop_assert!(!e.is_empty() && !e.contains('\n'), "{}", e);
            }
        }
    }

    #[test]
    fn the_allowed_cpus_of_a_status_file() {
        let s = "Name:\tx\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1,4\nMems_allowed:\t1\n";
        assert_eq!(allowed_list(s), Some(vec![0, 1, 4]));
        assert_eq!(allowed_list("Name: x\n"), None);
        let m = Machine::this();
        assert!(!m.allowed.is_empty());
        assert!(m.allowed.iter().all(|c| m.online.contains(c)));
    }
}
