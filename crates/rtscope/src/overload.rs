//! Whether a run could keep up: the share of its samples dropped and of its
//! periods missed, judged the same way for a finished series and for the live
//! view's snapshots (a module below the experiments and the sinks, which both
//! use it).

use rtscope_core::result::Series;

/// The share of a run's samples dropped, or of its periods missed, above
/// which the run says so whatever `-q` asks: one in this many (1 %).
pub const OVERLOAD_ONE_IN: u64 = 100;

/// What a series' counters say of a machine that could not keep up with the
/// measurement: more than one in [`OVERLOAD_ONE_IN`] of the samples dropped (the
/// rings to the aggregator were full), or of the periods missed (wake-ups
/// after the following deadline). Such a run's statistics describe a few
/// samples of an overloaded machine, so these warnings are printed even with
/// `-q` ([`warning_lines`]) besides going into the document.
#[derive(Debug, Default, PartialEq)]
pub struct Overload {
    pub dropped: Option<String>,
    pub missed: Option<String>,
}

impl Overload {
    /// Reads the counters of `s` (a run's total: `all` when there are
    /// several threads).
    pub fn of(s: &Series) -> Overload {
        Overload::of_counts(&OverloadCounts {
            count: s.stats.count,
            dropped: s.counters.dropped,
            missed: s.counters.overruns,
            late: s.counters.overrun_samples,
            max_ns: s.stats.max_ns,
            corrected: s.corrected.is_some(),
        })
    }

    /// [`of`](Self::of) from the counters alone (the live view's snapshots).
    pub fn of_counts(c: &OverloadCounts) -> Overload {
        let (count, dropped, missed) = (c.count, c.dropped, c.missed);
        let taken = count + dropped;
        let due = taken + missed;
        let advice = "the period is below what this machine can serve \
             (a longer period, or a CPU left free of real-time threads, fixes it)";
        Overload {
            dropped: above_share(dropped, taken).then(|| {
                format!(
                    "{} of the samples were dropped ({dropped} of {taken}: the rings to the \
                     aggregator were full), the statistics describe only those kept: {advice}",
                    percent(dropped, taken)
                )
            }),
            missed: above_share(missed, due).then(|| {
                let late = c.late;
                let why = if late > 0 && missed >= STALL_PERIODS * late {
                    format!(
                        "{late} late wake-up{} of up to {} skipped them: the threads were held \
                         off the CPU that long (the host, RT throttling, a task of higher priority)",
                        if late == 1 { "" } else { "s" },
                        rtscope_core::units::format_ns(c.max_ns.max(0) as u64)
                    )
                } else {
                    advice.to_string()
                };
                let counted = if c.corrected {
                    "; the figures over the intended periods count each at its lateness, \
                     those over the wake-ups leave them out"
                } else {
                    ""
                };
                format!(
                    "{} of the periods were missed ({missed} of {due}: wake-ups after the \
                     following deadline): {why}{counted}",
                    percent(missed, due)
                )
            }),
        }
    }

    /// The warnings, dropped first.
    pub fn warnings(&self) -> Vec<String> {
        self.dropped.iter().chain(&self.missed).cloned().collect()
    }
}

/// What [`Overload`] reads of a series.
#[derive(Debug, Default, Clone, Copy)]
pub struct OverloadCounts {
    /// Samples taken.
    pub count: u64,
    /// Samples dropped (the rings were full).
    pub dropped: u64,
    /// Periods missed.
    pub missed: u64,
    /// Late wake-ups (the samples that missed periods).
    pub late: u64,
    pub max_ns: i64,
    /// Whether figures over the intended periods are kept.
    pub corrected: bool,
}

/// Late wake-ups that skipped this many periods each, on average, are
/// stalls (the thread did not run), not a period too short to serve.
pub const STALL_PERIODS: u64 = 10;

/// Whether `part` is more than one in [`OVERLOAD_ONE_IN`] of `whole`.
fn above_share(part: u64, whole: u64) -> bool {
    u128::from(part) * u128::from(OVERLOAD_ONE_IN) > u128::from(whole)
}

/// `part` of `whole` in per cent, one decimal (`99.4%`).
pub(crate) fn percent(part: u64, whole: u64) -> String {
    format!("{:.1}%", part as f64 * 100.0 / whole.max(1) as f64)
}
