//! `rtscope ipc`.

use super::*;

/// Sender and receiver CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuPair(pub usize, pub usize);

/// Parses `A,B` (two CPU numbers, which may be equal).
pub fn cpu_pair(s: &str) -> Result<CpuPair, String> {
    let bad = || format!("'{s}' is not a CPU pair: give sender and receiver CPU as A,B (e.g. 0,1)");
    let (a, b) = s.split_once(',').ok_or_else(bad)?;
    let a = a.trim().parse::<usize>().map_err(|_| bad())?;
    let b = b.trim().parse::<usize>().map_err(|_| bad())?;
    Ok(CpuPair(a, b))
}

#[derive(Debug, Clone, Args)]
pub struct IpcArgs {
    /// Mechanisms, comma-separated, or `all` (`--list` shows them).
    #[arg(short = 'm', long = "mech", value_name = "LIST", default_value = "all")]
    pub mech: String,

    /// List the mechanisms, what they measure and the patterns they support, then exit.
    #[arg(long, exclusive = true)]
    pub list: bool,

    /// Remove the SysV semaphores and message queues that killed ipc runs left
    /// behind (only those provably theirs), print each, then exit.
    #[arg(long, exclusive = true)]
    pub cleanup: bool,

    /// handoff or roundtrip, or both (comma-separated); default: each mechanism's natural one.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "PATTERN")]
    pub pattern: Vec<Pattern>,

    /// threads or processes, or both (comma-separated).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "threads",
        value_name = "PLACEMENT"
    )]
    pub between: Vec<Between>,

    /// Sender and receiver CPUs as A,B (default: the first two online CPUs, or one if there is one).
    #[arg(short = 'a', long = "cpus", value_name = "A,B", value_parser = cpu_pair)]
    pub cpus: Option<CpuPair>,

    /// Priority of the sender (default: the receiver's --priority minus 1).
    #[arg(long, value_name = "PRIO", value_parser = clap::value_parser!(u8).range(1..=99))]
    pub sender_priority: Option<u8>,

    /// Periods of the driving task, comma-separated (one exchange per period; a bare number is us;
    /// each at most 1h).
    #[arg(short = 'i', long, value_name = "DURATION", value_delimiter = ',', default_value = "1ms",
          value_parser = wait_us, allow_hyphen_values = true)]
    pub period: Vec<u64>,

    /// Exchanges per repetition.
    #[arg(short = 'l', long, default_value = "1000", value_parser = positive_u64)]
    pub loops: u64,

    /// Repetitions of each experiment (each gets its own summary).
    #[arg(long, default_value = "1", value_parser = positive_u64)]
    pub repetitions: u64,

    #[command(flatten)]
    pub run: RunArgs,
}

impl IpcArgs {
    /// The options these arguments ask for.
    pub fn options(&self) -> anyhow::Result<IpcOptions> {
        Ok(IpcOptions {
            mech: self.mech.clone(),
            patterns: self.pattern.clone(),
            between: self.between.clone(),
            cpus: self.cpus.map(|p| (p.0, p.1)),
            sender_priority: self.sender_priority,
            periods_ns: self.period.clone(),
            loops: self.loops,
            repetitions: self.repetitions,
            run: self.run.request()?,
        })
    }
}

#[cfg(test)]
mod tests {
    //! `rtscope ipc`'s command line through to its plan.

    use clap::Parser;

    use super::super::{Cli, Command};
    use crate::experiment::ipc::*;

    fn args(extra: &[&str]) -> IpcOptions {
        let mut v = vec!["rtscope", "ipc"];
        v.extend_from_slice(extra);
        match Cli::try_parse_from(v).expect("parses").command {
            Command::Ipc(a) => a.options().expect("valid options"),
            _ => unreachable!(),
        }
    }

    fn parse_err(extra: &[&str]) -> String {
        let mut v = vec!["rtscope", "ipc"];
        v.extend_from_slice(extra);
        Cli::try_parse_from(v)
            .expect_err("must be refused")
            .to_string()
    }

    fn plan_err(extra: &[&str]) -> String {
        let e = plan(&args(extra)).expect_err("must be refused");
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_USAGE);
        e.to_string()
    }

    #[test]
    fn plan_all_uses_natural_patterns() {
        let p = plan(&args(&["--no-rt"])).unwrap();
        assert_eq!(p.sessions.len(), MECHANISMS.len());
        for (s, m) in p.sessions.iter().zip(MECHANISMS) {
            assert_eq!(s.mechanism, m.name);
            assert_eq!(s.pattern, m.natural);
            assert_eq!(s.between, Between::Threads);
            assert_eq!(s.period_ns, 1_000_000);
        }
        assert_eq!((p.loops, p.repetitions), (1000, 1));
    }

    #[test]
    fn plan_cross_product_of_lists() {
        let p = plan(&args(&[
            "--mech",
            "futex,pipe",
            "--pattern",
            "handoff,roundtrip",
            "--between",
            "threads,processes",
            "--period",
            "10ms,30ms,50ms",
            "--repetitions",
            "50",
            "--no-rt",
        ]))
        .unwrap();
        assert_eq!(p.sessions.len(), 2 * 2 * 2 * 3);
        assert_eq!(p.repetitions, 50);
        assert!(p.sessions.iter().any(|s| s.mechanism == "pipe"
            && s.pattern == Pattern::Handoff
            && s.period_ns == 30_000_000));
    }

    #[test]
    fn all_with_unsupported_pattern_skips_explicit_refuses() {
        let p = plan(&args(&["--pattern", "roundtrip", "--no-rt"])).unwrap();
        assert!(p.sessions.iter().all(|s| s.mechanism != "mutex"));
        assert_eq!(p.skipped, vec!["mutex roundtrip".to_string()]);
        let e = plan_err(&["--mech", "mutex", "--pattern", "roundtrip"]);
        assert!(
            e.contains("mutex does not support --pattern roundtrip"),
            "{e}"
        );
    }

    #[test]
    fn bad_input_is_refused() {
        let e = plan_err(&["--mech", "futex,carrier-pigeon"]);
        assert!(e.contains("unknown mechanism 'carrier-pigeon'"), "{e}");
        assert!(plan_err(&["--mech", "futex,,pipe"]).contains("empty"));
        assert!(parse_err(&["--repetitions", "0"]).contains("at least 1"));
        assert!(parse_err(&["--period", "0"]).contains("greater than 0"));
        assert!(parse_err(&["-l", "0"]).contains("at least 1"));
        assert!(parse_err(&["--cpus", "1"]).contains("CPU pair"));
        assert!(parse_err(&["--pattern", "sideways"]).contains("sideways"));
        assert!(plan_err(&["--cpus", "0,4096"]).contains("not online"));
        assert!(plan_err(&["-l", "1000000", "--repetitions", "1000"]).contains("at most"));
    }

    #[test]
    fn priorities_and_placement() {
        let p = plan(&args(&["-p", "80"])).unwrap();
        assert_eq!((p.receiver_priority, p.sender_priority), (80, 79));
        let p = plan(&args(&["-p", "1"])).unwrap();
        assert_eq!(p.sender_priority, 1);
        let p = plan(&args(&["-p", "80", "--sender-priority", "90"])).unwrap();
        assert_eq!(p.sender_priority, 90);
        let p = plan(&args(&["--no-rt"])).unwrap();
        assert_eq!((p.receiver_priority, p.sender_priority), (0, 0));
        let p = plan(&args(&["--cpus", "0,0", "--no-rt"])).unwrap();
        assert_eq!((p.sender_cpu, p.receiver_cpu), (Some(0), Some(0)));
        assert!(p.placement.contains("same CPU"));
        let s = &p.sessions[0];
        assert_eq!(p.suffix(s), "threads cpu0->cpu0 1ms");
    }
}
