//! `rtscope report`, `compare`, `pool`, `serve` and `import`: the commands that read results.

use super::*;

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Result documents (JSON) to report on, one section each.
    #[arg(required = true, value_name = "RESULT.json")]
    pub files: Vec<PathBuf>,

    /// Write the HTML report to FILE (required unless --fail-if is given).
    #[arg(
        short = 'o',
        long,
        value_name = "FILE",
        required_unless_present = "fail_if"
    )]
    pub output: Option<PathBuf>,

    /// Check gates on the stored results (see `rtscope cyclic --help`); exit 3 when one fails.
    #[command(flatten)]
    pub gate: GateArgs,

    /// Leave out what identifies the machine before sharing: host name, kernel command line, user names in paths, IP addresses.
    #[arg(long)]
    pub redact: bool,
}

impl ReportArgs {
    /// The command's plain options.
    pub fn options(self) -> crate::report::ReportOptions {
        crate::report::ReportOptions {
            gates: self.gate.options(),
            files: self.files,
            output: self.output,
            redact: self.redact,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Directory of result documents (*.json; not searched recursively).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,

    /// Address to serve on (HOST:PORT; loopback only unless --listen-any).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: String,

    /// Allow a non-loopback address (anyone who can reach it can read every result in DIR).
    #[arg(long)]
    pub listen_any: bool,

    /// Also answer requests for this host name or IP address, optionally with :PORT (repeatable,
    /// at most 32); on loopback only localhost, 127.x and [::1] are answered, so that a
    /// DNS-rebinding page cannot read DIR.
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_host: Vec<String>,

    /// Leave out what identifies the machine from the pages and JSON served: host name, kernel command line, user names in paths, IP addresses.
    #[arg(long)]
    pub redact: bool,

    /// No start line; with --listen HOST:0 only the address bound, on stderr
    /// ("rtscope: listening on http://127.0.0.1:41234/").
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

impl ServeArgs {
    /// The command's plain options.
    pub fn options(self) -> crate::live::serve::ServeOptions {
        crate::live::serve::ServeOptions {
            dir: self.dir,
            listen: self.listen,
            listen_any: self.listen_any,
            allow_hosts: self.allow_host,
            redact: self.redact,
            quiet: self.quiet,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct PoolArgs {
    /// Result documents of single runs of the same experiment with the same settings.
    #[arg(required = true, num_args = 2.., value_name = "RESULT.json")]
    pub files: Vec<PathBuf>,

    /// Where to write the pooled document.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub out: PathBuf,

    /// Print nothing but errors.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

impl PoolArgs {
    /// The command's plain options.
    pub fn options(self) -> crate::experiment::repeat::PoolOptions {
        crate::experiment::repeat::PoolOptions {
            files: self.files,
            out: self.out,
            quiet: self.quiet,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Result documents, or matrix output directories (compared cell by cell);
    /// the first is the baseline.
    #[arg(required = true, num_args = 2.., value_name = "RESULT")]
    pub files: Vec<PathBuf>,

    /// Pair series explicitly: one label per run, e.g. --match 'thread 0=thread 1' (repeatable).
    #[arg(long = "match", value_name = "LABEL=LABEL")]
    pub matches: Vec<String>,

    /// Also write the comparison as a self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Exit with code 3 when a run is clearly worse than the baseline at some percentile.
    #[arg(long)]
    pub fail_if_worse: bool,

    /// Smallest change that counts (percent, e.g. 5 or 5%): no verdict unless the
    /// whole 95% interval lies beyond it.
    #[arg(long, value_name = "PERCENT", default_value = "5%", value_parser = min_effect)]
    pub min_effect: f64,

    /// Tail verdicts: compare how often each run went above DURATION, per hour of
    /// measuring (a bare number is microseconds; at most 1h) [default: the baseline's p99.9].
    #[arg(long, value_name = "DURATION", value_parser = wait_us)]
    pub tail_threshold: Option<u64>,

    /// Leave out what identifies the machine before sharing: host name, kernel command line, user names in paths, IP addresses.
    #[arg(long)]
    pub redact: bool,
}

impl CompareArgs {
    /// The command's plain options.
    pub fn options(self) -> crate::report::compare::CompareOptions {
        crate::report::compare::CompareOptions {
            files: self.files,
            matches: self.matches,
            html: self.html,
            fail_if_worse: self.fail_if_worse,
            min_effect: self.min_effect,
            tail_threshold: self.tail_threshold,
            redact: self.redact,
        }
    }
}

/// `--min-effect`: a percentage in [0, 100), `5` or `5%`, as a fraction.
pub(super) fn min_effect(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%');
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..100.0).contains(&v) => Ok(v / 100.0),
        Ok(_) => Err(format!("'{s}' is out of range (0 to 99.9 percent)")),
        Err(_) => Err(format!("'{s}' is not a percentage (e.g. 5 or 5%)")),
    }
}

/// Where imported data comes from.
#[derive(Debug, Clone, Subcommand)]
pub enum ImportSource {
    /// cyclictest's --json file or its -h histogram text.
    Cyclictest(ImportCyclictestArgs),
}

#[derive(Debug, Clone, Args)]
pub struct ImportCyclictestArgs {
    /// A file written by `cyclictest --json=FILE`.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "histogram",
        required_unless_present = "histogram"
    )]
    pub json: Option<PathBuf>,

    /// cyclictest's `-h`/`-H` histogram output (stdout or --histfile).
    #[arg(long, value_name = "FILE")]
    pub histogram: Option<PathBuf>,

    /// The histogram was written by `cyclictest -N`: bins and values are ns, not µs.
    #[arg(long, requires = "histogram")]
    pub nsecs: bool,

    /// The cyclictest command line the histogram came from (`--cmdline "cyclictest -m -p 90
    /// -h 150 -q"`): its settings go into the plan as `rtscope cyclictest` records them, so
    /// that `compare` sees equal settings as equal (a --json file carries its own).
    #[arg(long, value_name = "LINE", requires = "histogram")]
    pub cmdline: Option<String>,

    /// Write the result document to FILE.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: PathBuf,
}

impl ImportSource {
    /// The command's plain options.
    pub fn options(self) -> crate::import::Import {
        match self {
            ImportSource::Cyclictest(a) => {
                crate::import::Import::Cyclictest(crate::import::CyclictestImport {
                    json: a.json,
                    histogram: a.histogram,
                    nsecs: a.nsecs,
                    cmdline: a.cmdline,
                    output: a.output,
                })
            }
        }
    }
}
