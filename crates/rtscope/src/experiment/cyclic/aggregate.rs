//! The aggregator: drains the threads' rings into their recorders and the
//! union, feeds the live views and checkpoints, and says what the counters
//! warn of (missed periods, uncalibrated threads).

use super::*;

/// The warning of more than 1 % of the periods missed ([`run::Overload`]):
/// the union's (the last series), or when it stays within 1 %, each
/// thread's beyond it, labelled (one thread of many).
/// A deadline run that missed most of its periods is told of its runtime
/// budget ([`budget_note`]).
pub(super) fn missed_warnings(series: &[Series]) -> Vec<String> {
    let Some((all, threads)) = series.split_last() else {
        return vec![];
    };
    if let Some(w) = run::Overload::of(all).missed {
        let budget = threads.iter().find_map(budget_note);
        return vec![w + budget.as_deref().unwrap_or("")];
    }
    if threads.len() < 2 {
        return vec![];
    }
    threads
        .iter()
        .filter_map(|s| {
            let w = run::Overload::of(s).missed?;
            Some(format!(
                "{}: {w}{}",
                s.label,
                budget_note(s).unwrap_or_default()
            ))
        })
        .collect()
}

/// With `--policy deadline`, where a thread missed most of its periods:
/// what its runtime budget was, as the likeliest cause (a job that
/// outgrows its runtime is throttled by the kernel to its next period).
fn budget_note(s: &Series) -> Option<String> {
    let runtime = s.attributes.get("dl_runtime_ns")?.as_u64()?;
    let period = s.attributes.get("dl_period_ns")?.as_u64()?;
    let missed = u128::from(s.counters.overruns);
    let due = u128::from(s.stats.count) + u128::from(s.counters.dropped) + missed;
    (missed * 2 > due).then(|| {
        format!(
            "; most periods missed in a deadline run is most often its runtime budget: \
             --dl-runtime {} of every {} is too short for one wake-up, and the kernel throttles \
             the thread to its next period: give it a larger --dl-runtime",
            format_ns(runtime),
            format_ns(period)
        )
    })
}

/// Per-thread state of the aggregator.
pub(super) struct ThreadView {
    pub(super) plan: ThreadPlan,
    pub(super) state: Option<ThreadState>,
    /// With `--policy deadline`: what the kernel holds, and the thread's
    /// grid counters.
    pub(super) deadline: Option<(DeadlineReady, std::sync::Arc<GridCounters>)>,
    pub(super) rec: SeriesRecorder,
    pub(super) last: Option<Sample>,
    pub(super) us_bins: Option<MicrosecondBins>,
    pub(super) source: RingSource,
}

impl ThreadView {
    pub(super) fn label(&self) -> String {
        format!("thread {}", self.plan.index)
    }

    pub(super) fn status(&self, priority: i32) -> ThreadStatus {
        let st = &self.rec.stats;
        ThreadStatus {
            index: self.plan.index,
            tid: self.state.as_ref().map_or(0, |s| s.tid),
            priority,
            period_ns: self.plan.period_ns,
            count: st.count(),
            min_ns: st.min(),
            act_ns: self.last.map_or(0, |s| s.latency_ns),
            mean_ns: st.mean(),
            max_ns: st.max(),
            overruns: self.rec.overruns,
        }
    }
}

/// The aggregator's view of the whole run.
pub(super) struct Aggregate {
    pub(super) threads: Vec<ThreadView>,
    pub(super) all: SeriesRecorder,
    /// `--raw`: every sample as CSV, and the first write error.
    pub(super) raw: Option<(OutFile, Option<String>)>,
    /// `--trace`: kernel events joined with the samples.
    pub(super) tracer: Option<crate::experiment::cyclic_trace::Tracer>,
    /// `--stream`, `--listen`, `--live`: fed snapshots by the aggregator.
    pub(super) live: Option<crate::live::Sinks>,
}

impl Aggregate {
    /// Joins the measurement threads (the stop flag is raised), then takes in
    /// what they pushed after the last drain: the wake-up that came before they
    /// saw the flag, a break sample. Returns each thread's end.
    pub(super) fn join(
        &mut self,
        handles: Vec<JoinHandle<Option<LoopEnd>>>,
    ) -> Vec<(usize, Option<LoopEnd>)> {
        let ends = handles
            .into_iter()
            .enumerate()
            .map(|(i, h)| (i, h.join().unwrap_or(None)))
            .collect();
        self.drain();
        ends
    }

    /// Drains every ring; returns the number of samples taken in.
    pub(super) fn drain(&mut self) -> usize {
        let mut n = 0;
        let nthreads = self.threads.len();
        let mut hub = self.live.as_mut().map(|l| &mut l.hub);
        for (ti, t) in self.threads.iter_mut().enumerate() {
            let (rec, all, last, bins) = (&mut t.rec, &mut self.all, &mut t.last, &mut t.us_bins);
            let (idx, period) = (t.plan.index, t.plan.period_ns);
            let raw = &mut self.raw;
            let tracer = &mut self.tracer;
            let hub = &mut hub;
            n += t.source.drain(|s| {
                rec.record(s);
                if let Some(h) = hub.as_deref_mut() {
                    h.record(ti, s);
                    h.record(nthreads, s);
                }
                if let Some(tr) = tracer.as_mut() {
                    tr.sample(idx, s);
                }
                all.record_in(s, period);
                if let Some(b) = bins.as_mut() {
                    b.record(s.latency_ns, s.seq);
                }
                if let Some((w, err)) = raw.as_mut() {
                    if let Err(e) =
                        writeln!(w, "{idx},{},{},{},{}", s.cpu, s.seq, s.t_ns, s.latency_ns)
                    {
                        err.get_or_insert_with(|| e.to_string());
                    }
                }
                *last = Some(*s);
            });
        }
        if let Some(tr) = self.tracer.as_mut() {
            tr.pump();
        }
        n
    }

    /// The since-start figures of every series, `all` last (live snapshots).
    pub(super) fn snapshot_series(&self) -> Vec<crate::live::SeriesSnapshot> {
        let mut v: Vec<_> = self
            .threads
            .iter()
            .map(|t| {
                crate::live::SeriesSnapshot::from_recorder(&t.label(), &t.rec, t.source.dropped())
            })
            .collect();
        let dropped = self.threads.iter().map(|t| t.source.dropped()).sum();
        v.push(crate::live::SeriesSnapshot::from_recorder(
            "all", &self.all, dropped,
        ));
        v
    }

    /// Publishes a snapshot to the live sinks that are due.
    pub(super) fn publish(&mut self) {
        if let Some(mut l) = self.live.take() {
            l.hub.tick(|| self.snapshot_series());
            self.live = Some(l);
        }
    }

    /// Sends the last snapshot and ends the live sinks; their warnings.
    pub(super) fn end_live(&mut self) -> Vec<String> {
        match self.live.take() {
            Some(l) => l.finish(|| self.snapshot_series()),
            None => vec![],
        }
    }

    pub(super) fn statuses(&self, priority: i32) -> Vec<ThreadStatus> {
        self.threads.iter().map(|t| t.status(priority)).collect()
    }

    /// The series: one per thread, then `all`; with the drop, overload and
    /// negative warnings.
    pub(super) fn series(&self) -> (Vec<Series>, Vec<String>) {
        let mut series: Vec<Series> = Vec::new();
        let mut total_dropped = 0;
        let mut uncalibrated = 0;
        for t in &self.threads {
            let dropped = t.source.dropped();
            total_dropped += dropped;
            let mut s = t.rec.to_series(&t.label(), dropped);
            let a = &mut s.attributes;
            a.insert("thread".into(), json!(t.plan.index));
            a.insert("period_ns".into(), json!(t.plan.period_ns));
            a.insert("cpus".into(), json!(t.plan.cpus));
            if let Some(st) = &t.state {
                a.insert("tid".into(), json!(st.tid));
                a.insert("policy".into(), json!(st.policy));
                a.insert("priority".into(), json!(st.priority));
                a.insert("timer_slack_ns".into(), json!(st.timer_slack_ns));
            }
            if let Some((d, c)) = &t.deadline {
                let p = &d.granted;
                uncalibrated += u64::from(d.calibration.is_none());
                a.insert("dl_runtime_ns".into(), json!(p.runtime_ns));
                a.insert("dl_deadline_ns".into(), json!(p.deadline_ns));
                a.insert("dl_period_ns".into(), json!(p.period_ns));
                a.insert(
                    "dl_calibration_window_ns".into(),
                    json!(d.calibration.map(|c| c.window_ns)),
                );
                a.insert(
                    "dl_reanchored".into(),
                    json!(c.reanchored.load(Ordering::Relaxed)),
                );
                a.insert("dl_early".into(), json!(c.early.load(Ordering::Relaxed)));
            }
            series.push(s);
        }
        let mut all = self.all.to_series("all", total_dropped);
        all.attributes
            .insert("threads".into(), json!(self.threads.len()));
        series.push(all);
        let mut warnings = Vec::new();
        // More than 1 % dropped or missed: the loud warnings (see `execute`).
        let overload = run::Overload::of(&series[series.len() - 1]);
        match overload.dropped {
            Some(w) => warnings.push(w),
            None if total_dropped > 0 => warnings.push(format!(
                "{total_dropped} samples dropped: the aggregator could not keep up"
            )),
            None => {}
        }
        warnings.extend(missed_warnings(&series));
        if self.all.negative > 0 {
            warnings.push(format!(
                "{} samples had negative latency (the clock was stepped)",
                self.all.negative
            ));
        }
        if let Some(w) = uncalibrated_warning(uncalibrated) {
            warnings.push(w);
        }
        (series, warnings)
    }

    /// The document as of now (checkpoints).
    pub(super) fn document(&self, run: &Run, plan: &CyclicPlan, end: EndReason) -> ResultDocument {
        let (series, warnings) = self.series();
        let mut doc = run.document(plan.experiment, plan, series, end, warnings);
        self.threshold(plan, &mut doc);
        doc
    }

    pub(super) fn threshold(&self, plan: &CyclicPlan, doc: &mut ResultDocument) {
        doc.threshold = plan.fail_above_ns.map(|t| Threshold {
            fail_above_ns: t,
            exceeded: self.all.above_threshold > 0,
            samples_above: self.all.above_threshold,
        });
    }
}

/// The warning of a deadline run whose threads could not read the kernel's
/// deadline: their periods were estimated.
pub(super) fn uncalibrated_warning(threads: u64) -> Option<String> {
    (threads > 0).then(|| {
        format!(
            "{threads} deadline threads could not read their deadline from the kernel \
             (/proc/thread-self/sched): their periods are estimated from the start, where \
             latencies are at most the start's wake-up latency high, and after a wake-up later \
             than the deadline from that wake-up, where they are a lower bound (docs/cyclic.md)"
        )
    })
}
