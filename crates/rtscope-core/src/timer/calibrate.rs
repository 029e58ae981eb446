//! Calibration for static compensation: measure a wait API's lateness at a
//! few delays and keep the median, per API and scheduling policy. A
//! calibration is part of a `timer` result and can be saved and loaded.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::wait::{OneShotWait, WaitApi};
use crate::cyclic::Clock;
use crate::result::{read_json_object, DocError};

/// The largest calibration file read (a saved calibration is a few KiB, a
/// whole timer result far less than this).
pub const MAX_CALIBRATION_BYTES: u64 = 16 << 20;

/// The largest median lateness (and offset) a calibration may hold, ns: a
/// timer a second late at its median is not one compensation can help, and
/// a larger figure (1e18, `i64::MAX`) is a damaged or forged file, which
/// would make every compensated wait return at once.
pub const MAX_CALIBRATED_OFFSET_NS: u64 = 1_000_000_000;

/// The delays a calibration measures by default: the study's range.
pub const DEFAULT_CALIBRATION_DELAYS_NS: [u64; 3] = [320_000, 1_000_000, 5_000_000];

/// One API × policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationEntry {
    /// The wait API calibrated.
    pub api: WaitApi,
    /// `fifo`, `other`, ...
    pub policy: String,
    /// The delays measured, ns.
    pub delays_ns: Vec<u64>,
    /// The offset static compensation subtracts at each delay: the median
    /// lateness, corrected by the checking pass (see [`measure`]).
    pub medians_ns: Vec<u64>,
    /// The offset static compensation subtracts: the median of all wakes.
    pub offset_ns: u64,
    /// Wakes measured per delay (in each of the two passes).
    pub wakes_per_delay: usize,
    /// The checking pass's median error at each delay, signed (how far the
    /// uncompensated medians were off; already added into `medians_ns`).
    /// Empty in calibrations saved before the checking pass existed.
    #[serde(default)]
    pub residual_ns: Vec<i64>,
}

impl CalibrationEntry {
    /// The lateness expected at `delay_ns`: the medians interpolated linearly
    /// between the calibrated delays (the nearest one's outside their range;
    /// `offset_ns` without per-delay medians). Lateness grows with the delay
    /// on Linux (measured here: 18 µs at 320 µs, 41 µs at 5 ms), so one
    /// offset for every delay over-compensates short sleeps and
    /// under-compensates long ones.
    pub fn offset_at(&self, delay_ns: u64) -> u64 {
        let pts: Vec<(u64, u64)> = self
            .delays_ns
            .iter()
            .copied()
            .zip(self.medians_ns.iter().copied())
            .collect();
        let (Some(first), Some(last)) = (pts.first(), pts.last()) else {
            return self.offset_ns;
        };
        if delay_ns <= first.0 {
            return first.1;
        }
        if delay_ns >= last.0 {
            return last.1;
        }
        for w in pts.windows(2) {
            let ((d0, m0), (d1, m1)) = (w[0], w[1]);
            if delay_ns <= d1 && d1 > d0 {
                let f = (delay_ns - d0) as f64 / (d1 - d0) as f64;
                return (m0 as f64 + f * (m1 as f64 - m0 as f64)).round().max(0.0) as u64;
            }
        }
        last.1
    }
}

/// A set of calibrations.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Calibration {
    /// One entry per API and policy.
    pub entries: Vec<CalibrationEntry>,
}

impl Calibration {
    /// The offset for `api` under `policy`, if calibrated.
    pub fn offset(&self, api: WaitApi, policy: &str) -> Option<u64> {
        self.entries
            .iter()
            .find(|e| e.api == api && e.policy == policy)
            .map(|e| e.offset_ns)
    }

    /// The offset for `api` under `policy` at `delay_ns`
    /// ([`CalibrationEntry::offset_at`]), if calibrated.
    pub fn offset_at(&self, api: WaitApi, policy: &str, delay_ns: u64) -> Option<u64> {
        self.entries
            .iter()
            .find(|e| e.api == api && e.policy == policy)
            .map(|e| e.offset_at(delay_ns))
    }

    /// Adds or replaces an entry.
    pub fn insert(&mut self, e: CalibrationEntry) {
        self.entries
            .retain(|x| !(x.api == e.api && x.policy == e.policy));
        self.entries.push(e);
    }

    /// Writes the calibration as JSON, atomically. A calibration without an
    /// entry (a run stopped before its first calibration ended) is refused:
    /// it would replace a good file with one that loads nothing.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        if self.entries.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "nothing was calibrated (stopped before the first calibration ended): not written, the file is left as it was",
            ));
        }
        let mut text = serde_json::to_vec_pretty(self).map_err(io::Error::other)?;
        text.push(b'\n');
        crate::file::write_atomic(path, &text)
    }

    /// Reads a calibration written by [`save`](Self::save) (or the
    /// `calibration` section of a `timer` result). Only a regular file of at
    /// most [`MAX_CALIBRATION_BYTES`] is read: a device (`/dev/zero`), a FIFO
    /// or a larger file is refused before anything is read.
    pub fn load(path: &Path) -> Result<Self, String> {
        Self::load_at_most(path, MAX_CALIBRATION_BYTES)
    }

    /// [`load`](Self::load) with the size limit in bytes.
    fn load_at_most(path: &Path, limit: u64) -> Result<Self, String> {
        let name = path.display();
        let not_cal = || format!("{name}: not an rtscope timer calibration");
        match std::fs::metadata(path) {
            Err(e) => return Err(format!("{name}: {e}")),
            Ok(m) if m.is_dir() => return Err(format!("{name}: is a directory")),
            // A FIFO would block, a device go on: neither is a saved file.
            Ok(m) if !m.is_file() => return Err(format!("{}: not a regular file", not_cal())),
            Ok(_) => {}
        }
        let text = read_json_object(path, limit).map_err(|e| read_error(&name.to_string(), e))?;
        let v: serde_json::Value =
            serde_json::from_slice(&text).map_err(|e| format!("{name}: not JSON: {e}"))?;
        // A whole result document carries it under plan.calibration.
        let v = v
            .get("plan")
            .and_then(|p| p.get("calibration"))
            .cloned()
            .unwrap_or(v);
        let cal: Self = serde_json::from_value(v)
            .map_err(|e| format!("{}: not an rtscope timer calibration: {e}", path.display()))?;
        cal.check()
            .map_err(|e| format!("{name}: inconsistent timer calibration: {e}"))?;
        Ok(cal)
    }

    /// Checks what static compensation relies on: at least one entry, one
    /// per API and policy, and in each a median per delay (a residual per
    /// delay, if any), the delays increasing, every median and the offset
    /// at most [`MAX_CALIBRATED_OFFSET_NS`].
    pub fn check(&self) -> Result<(), String> {
        if self.entries.is_empty() {
            return Err("no entry".into());
        }
        for (i, e) in self.entries.iter().enumerate() {
            let (d, m, r) = (e.delays_ns.len(), e.medians_ns.len(), e.residual_ns.len());
            let what = format!("{} {}", e.api, e.policy);
            if self.entries[..i]
                .iter()
                .any(|x| x.api == e.api && x.policy == e.policy)
            {
                return Err(format!(
                    "{what}: two entries (only the first would be used): keep one"
                ));
            }
            let too_late = |v: u64| v > MAX_CALIBRATED_OFFSET_NS;
            if let Some((delay, med)) = e
                .delays_ns
                .iter()
                .zip(&e.medians_ns)
                .find(|(_, m)| too_late(**m))
            {
                return Err(format!(
                    "{what}: a median lateness of {med} ns at {delay} ns is not plausible (at most {MAX_CALIBRATED_OFFSET_NS} ns)"
                ));
            }
            if too_late(e.offset_ns) {
                return Err(format!(
                    "{what}: an offset of {} ns is not plausible (at most {MAX_CALIBRATED_OFFSET_NS} ns)",
                    e.offset_ns
                ));
            }
            if d == 0 {
                return Err(format!("{what}: no delay"));
            }
            if m != d {
                return Err(format!("{what}: {m} medians_ns for {d} delays_ns"));
            }
            if r != 0 && r != d {
                return Err(format!("{what}: {r} residual_ns for {d} delays_ns"));
            }
            if e.delays_ns.windows(2).any(|w| w[0] >= w[1]) {
                return Err(format!("{what}: delays_ns not increasing"));
            }
        }
        Ok(())
    }
}

/// The median of `v` (sorted in place); 0 when empty.
pub fn median(v: &mut [u64]) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[v.len() / 2]
}

/// What [`measure`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Measured {
    /// The offset to subtract at each delay: the uncompensated median
    /// lateness plus the median residual error of a pass that subtracted it.
    pub medians_ns: Vec<u64>,
    /// The same over all delays (the median of all wakes, corrected alike).
    pub offset_ns: u64,
    /// The median error of the checking pass at each delay (signed): how far
    /// the first pass's medians were from what the compensated sleeps saw.
    pub residual_ns: Vec<i64>,
}

/// Rounds of [`measure`] discarded before it records (the wait path and the
/// machine's idle state settle into the pattern of the measurement).
pub fn warmup_rounds(n: usize) -> usize {
    n.div_ceil(10).max(3)
}

/// One pass of `rounds` rounds over `delays_ns`, interleaved, each sleep
/// woken `offsets[j]` before its deadline; pushes `woke − deadline` per delay
/// into `out` (when given). Returns false when `stop` ended it.
fn pass<W: OneShotWait, C: Clock>(
    wait: &mut W,
    clock: &C,
    delays_ns: &[u64],
    offsets: &[u64],
    rounds: usize,
    stop: &dyn Fn() -> bool,
    mut out: Option<&mut [Vec<i64>]>,
) -> io::Result<bool> {
    for _ in 0..rounds {
        for (j, (&d, &o)) in delays_ns.iter().zip(offsets).enumerate() {
            if stop() {
                return Ok(false);
            }
            let t0 = clock.now();
            let deadline = t0 + d;
            let target = deadline.saturating_sub(o).max(t0);
            let mut now = t0;
            while now < target {
                wait.wait_until(target, now)?;
                now = clock.now();
            }
            if let Some(out) = out.as_deref_mut() {
                out[j].push(now as i64 - deadline as i64);
            }
        }
    }
    Ok(true)
}

/// The median of signed values (sorted in place); 0 when empty.
fn median_i64(v: &mut [i64]) -> i64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[v.len() / 2]
}

/// Calibrates static compensation for `wait` at each of `delays_ns`, the
/// delays interleaved as a sweep measures them: [`warmup_rounds`] rounds
/// discarded, `n` rounds of uncompensated lateness (its median per delay),
/// then `n` rounds that subtract those medians, whose median error (the
/// residual) is added back. The second pass calibrates the sleep as it will
/// be used: a sleep shortened by the offset is not late by exactly the
/// uncompensated median (measured here: the compensated wakes sat 0.6 µs
/// early with a one-pass calibration). `stop` ends it early (medians of what
/// was measured; 0 where nothing was).
pub fn measure<W: OneShotWait, C: Clock>(
    wait: &mut W,
    clock: &C,
    delays_ns: &[u64],
    n: usize,
    stop: &dyn Fn() -> bool,
) -> io::Result<Measured> {
    let zeros = vec![0u64; delays_ns.len()];
    // Reserved before measuring (a clone would not keep the capacity).
    let reserve = || -> Vec<Vec<i64>> { delays_ns.iter().map(|_| Vec::with_capacity(n)).collect() };
    let (mut first, mut second) = (reserve(), reserve());
    if pass(wait, clock, delays_ns, &zeros, warmup_rounds(n), stop, None)?
        && pass(wait, clock, delays_ns, &zeros, n, stop, Some(&mut first))?
    {
        let offsets: Vec<u64> = first
            .iter()
            .map(|v| median_i64(&mut v.clone()).max(0) as u64)
            .collect();
        pass(wait, clock, delays_ns, &offsets, n, stop, Some(&mut second))?;
    }
    let mut all1: Vec<i64> = first.iter().flatten().copied().collect();
    let mut all2: Vec<i64> = second.iter().flatten().copied().collect();
    let residual_ns: Vec<i64> = second.iter_mut().map(|v| median_i64(v)).collect();
    let medians_ns = first
        .iter_mut()
        .zip(&residual_ns)
        .map(|(v, r)| (median_i64(v) + r).max(0) as u64)
        .collect();
    let offset_ns = (median_i64(&mut all1) + median_i64(&mut all2)).max(0) as u64;
    Ok(Measured {
        medians_ns,
        offset_ns,
        residual_ns,
    })
}

/// The one-line error for a calibration file `read_json_object` refused.
fn read_error(name: &str, e: DocError) -> String {
    let not_cal = format!("{name}: not an rtscope timer calibration");
    match e {
        DocError::TooLarge { limit_mib, .. } => format!("{not_cal}: larger than {limit_mib} MiB"),
        DocError::Io { source, .. } => format!("{name}: {source}"),
        _ => not_cal,
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::timer::sleep::sim::{SimClock, SimWait};

    /// A SCHED_FIFO entry without residuals.
    fn fifo_entry(
        api: WaitApi,
        delays_ns: Vec<u64>,
        medians_ns: Vec<u64>,
        offset_ns: u64,
        wakes_per_delay: usize,
    ) -> CalibrationEntry {
        CalibrationEntry {
            api,
            policy: "fifo".into(),
            delays_ns,
            medians_ns,
            offset_ns,
            wakes_per_delay,
            residual_ns: vec![],
        }
    }

    #[test]
    fn offset_is_interpolated_between_calibrated_delays() {
        let e = fifo_entry(
            WaitApi::ClockNanosleep,
            vec![1_000, 3_000],
            vec![100, 300],
            200,
            1,
        );
        assert_eq!(e.offset_at(0), 100);
        assert_eq!(e.offset_at(1_000), 100);
        assert_eq!(e.offset_at(1_500), 150);
        assert_eq!(e.offset_at(2_999), 300);
        assert_eq!(e.offset_at(9_000), 300);
        let none = CalibrationEntry {
            delays_ns: vec![],
            medians_ns: vec![],
            ..e
        };
        assert_eq!(none.offset_at(1_500), 200);
    }

    #[test]
    fn interpolation_uses_the_segment_around_the_delay() {
        let e = fifo_entry(
            WaitApi::ClockNanosleep,
            vec![1_000, 2_000, 4_000],
            vec![100, 200, 600],
            200,
            1,
        );
        assert_eq!(e.offset_at(1_500), 150);
        assert_eq!(e.offset_at(2_000), 200);
        assert_eq!(e.offset_at(3_000), 400);
        assert_eq!(e.offset_at(3_500), 500);
    }

    #[test]
    fn lookup_by_api_and_policy() {
        let entry = |api, policy: &str, m: u64| CalibrationEntry {
            api,
            policy: policy.into(),
            delays_ns: vec![1_000, 3_000],
            medians_ns: vec![m, 3 * m],
            offset_ns: 2 * m,
            wakes_per_delay: 1,
            residual_ns: vec![],
        };
        let mut cal = Calibration::default();
        cal.insert(entry(WaitApi::Timerfd, "fifo", 10));
        cal.insert(entry(WaitApi::Timerfd, "other", 20));
        cal.insert(entry(WaitApi::ClockNanosleep, "fifo", 30));
        // Same API, other policy (and the reverse) are entries of their own.
        assert_eq!(cal.entries.len(), 3);
        assert_eq!(cal.offset_at(WaitApi::Timerfd, "fifo", 2_000), Some(20));
        assert_eq!(cal.offset_at(WaitApi::Timerfd, "other", 2_000), Some(40));
        assert_eq!(
            cal.offset_at(WaitApi::ClockNanosleep, "fifo", 3_000),
            Some(90)
        );
        assert_eq!(cal.offset_at(WaitApi::ClockNanosleep, "other", 2_000), None);
        assert_eq!(cal.offset_at(WaitApi::Nanosleep, "fifo", 2_000), None);
        assert_eq!(cal.offset(WaitApi::Timerfd, "other"), Some(40));
        // Replacing one leaves the others.
        cal.insert(entry(WaitApi::Timerfd, "other", 50));
        assert_eq!(cal.entries.len(), 3);
        assert_eq!(cal.offset(WaitApi::Timerfd, "other"), Some(100));
        assert_eq!(cal.offset(WaitApi::Timerfd, "fifo"), Some(20));
    }

    #[test]
    fn median_is_the_middle_element() {
        assert_eq!(median(&mut []), 0);
        assert_eq!(median(&mut [7]), 7);
        assert_eq!(median(&mut [9, 1, 5]), 5);
        // Even count: the upper of the two middle values.
        assert_eq!(median(&mut [40, 10, 30, 20]), 30);
    }

    #[test]
    fn calibration_takes_the_median_per_delay_and_overall() {
        let now = Cell::new(0);
        let mut w = SimWait {
            now: &now,
            lateness: |i: usize| {
                if i % 10 == 0 {
                    1_000_000
                } else {
                    50_000 + (i % 3) as u64
                }
            },
            calls: 0,
        };
        let c = SimClock {
            now: &now,
            read_cost: 0,
        };
        let m = measure(&mut w, &c, &[100_000, 200_000], 50, &|| false).unwrap();
        let med = &m.medians_ns;
        assert_eq!(med.len(), 2);
        assert!(
            med.iter().all(|&m| (50_000..=50_002).contains(&m)),
            "{med:?}"
        );
        assert!((50_000..=50_002).contains(&m.offset_ns), "{m:?}");
        // The lateness does not depend on the sleep: nothing to correct.
        assert!(m.residual_ns.iter().all(|r| r.abs() <= 2), "{m:?}");
        // Warm-up, then two passes of 50 rounds over 2 delays, one wait each.
        assert_eq!(w.calls, 2 * (warmup_rounds(50) + 2 * 50));
        // A stop ends it at once.
        let m = measure(&mut w, &c, &[100_000], 50, &|| true).unwrap();
        assert_eq!(m.medians_ns, vec![0]);
        assert_eq!(m.residual_ns, vec![0]);
    }

    #[test]
    fn warm_up_is_a_tenth_of_the_rounds_and_at_least_three() {
        assert_eq!(warmup_rounds(0), 3);
        assert_eq!(warmup_rounds(1), 3);
        assert_eq!(warmup_rounds(50), 5);
        assert_eq!(warmup_rounds(101), 11);
    }

    /// An offset that reaches back to the start of the sleep makes no wait
    /// call: the error is then how early the offset wakes it.
    #[test]
    fn a_pass_does_not_wait_when_the_offset_covers_the_delay() {
        let now = Cell::new(1_000);
        let mut w = SimWait {
            now: &now,
            lateness: |_| 7,
            calls: 0,
        };
        let c = SimClock {
            now: &now,
            read_cost: 0,
        };
        let mut out = vec![Vec::new(), Vec::new()];
        let done = pass(
            &mut w,
            &c,
            &[1_000, 1_000],
            &[5_000, 400],
            1,
            &|| false,
            Some(&mut out),
        )
        .unwrap();
        assert!(done);
        // The first sleep waits for nothing; the second waits once, to
        // 600 ns after its start, and wakes 7 ns late.
        assert_eq!(w.calls, 1);
        assert_eq!(out, vec![vec![-1_000], vec![-393]]);
    }

    /// A wait late by 10 µs plus 2 % of the sleep: a sleep shortened by the
    /// offset is less late than the uncompensated one.
    struct LengthLate<'a> {
        now: &'a Cell<u64>,
    }

    impl OneShotWait for LengthLate<'_> {
        fn wait_until(&mut self, target: u64, now: u64) -> io::Result<()> {
            let late = 10_000 + target.saturating_sub(now) / 50;
            self.now.set(self.now.get().max(target) + late);
            Ok(())
        }
    }

    #[test]
    fn checking_pass_corrects_for_a_lateness_that_depends_on_the_sleep() {
        let now = Cell::new(0);
        let c = SimClock {
            now: &now,
            read_cost: 0,
        };
        let mut w = LengthLate { now: &now };
        let m = measure(&mut w, &c, &[100_000, 1_000_000], 20, &|| false).unwrap();
        // Uncompensated: 12 000 and 30 000. Shortened by that: 11 760 and
        // 29 400, so the residuals are −240 and −600.
        assert_eq!(m.residual_ns, vec![-240, -600], "{m:?}");
        assert_eq!(m.medians_ns, vec![11_760, 29_400], "{m:?}");
        // With the corrected offset a sleep errs by < 0.1 % of the first
        // pass's error (240 ns, 600 ns).
        for (&d, &o) in [100_000u64, 1_000_000].iter().zip(&m.medians_ns) {
            let t0 = c.now();
            w.wait_until(t0 + d - o, t0).unwrap();
            let err = c.now() as i64 - (t0 + d) as i64;
            assert!(err.abs() < 20, "delay {d}: error {err}");
        }
        // The overall offset: median of the first pass + median residual.
        assert_eq!(m.offset_ns, 30_000 - 240);
    }

    #[test]
    fn save_load_round_trip_and_lookup() {
        let mut cal = Calibration::default();
        let e = CalibrationEntry {
            residual_ns: vec![-3],
            ..fifo_entry(WaitApi::Timerfd, vec![1000], vec![42_000], 42_000, 10)
        };
        cal.insert(e.clone());
        cal.insert(e);
        assert_eq!(cal.entries.len(), 1);
        assert_eq!(cal.offset(WaitApi::Timerfd, "fifo"), Some(42_000));
        assert_eq!(cal.offset(WaitApi::Timerfd, "other"), None);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("cal.json");
        cal.save(&p).unwrap();
        assert_eq!(Calibration::load(&p).unwrap(), cal);
        // Also from a result document's plan.
        let doc = serde_json::json!({"plan": {"calibration": cal}});
        std::fs::write(&p, doc.to_string()).unwrap();
        assert_eq!(Calibration::load(&p).unwrap(), cal);
        std::fs::write(&p, "{\"x\":1}").unwrap();
        assert!(Calibration::load(&p)
            .unwrap_err()
            .contains("not an rtscope timer calibration"));
    }

    #[test]
    fn read_errors_say_what_went_wrong() {
        let io = DocError::Io {
            path: "c.json".into(),
            source: std::io::Error::from_raw_os_error(libc::EACCES),
        };
        assert_eq!(
            read_error("c.json", io),
            "c.json: Permission denied (os error 13)"
        );
    }

    #[test]
    fn load_refuses_devices_fifos_and_large_files_before_reading() {
        let e = Calibration::load(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(
            e,
            "/dev/zero: not an rtscope timer calibration: not a regular file"
        );
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("cal.fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // No writer: opening it would block for ever.
        assert!(Calibration::load(&fifo)
            .unwrap_err()
            .ends_with("not a regular file"));
        assert!(Calibration::load(dir.path())
            .unwrap_err()
            .ends_with("is a directory"));
        assert!(Calibration::load(&dir.path().join("none"))
            .unwrap_err()
            .contains("No such file"));
        let p = dir.path().join("big.json");
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(MAX_CALIBRATION_BYTES + 1).unwrap();
        assert_eq!(
            Calibration::load(&p).unwrap_err(),
            format!(
                "{}: not an rtscope timer calibration: larger than 16 MiB",
                p.display()
            )
        );
        // A binary file is refused at its first byte.
        f.set_len(MAX_CALIBRATION_BYTES).unwrap();
        assert_eq!(
            Calibration::load(&p).unwrap_err(),
            format!("{}: not an rtscope timer calibration", p.display())
        );
        // The limit is inclusive.
        let one = fifo_entry(WaitApi::Timerfd, vec![1000], vec![42_000], 42_000, 10);
        let text = serde_json::to_string(&Calibration { entries: vec![one] }).unwrap();
        std::fs::write(&p, &text).unwrap();
        let n = text.len() as u64;
        assert!(Calibration::load_at_most(&p, n).is_ok());
        assert!(Calibration::load_at_most(&p, n - 1)
            .unwrap_err()
            .contains("larger than"));
    }

    #[test]
    fn an_empty_calibration_is_never_saved_and_leaves_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("cal.json");
        let e = Calibration::default().save(&p).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().starts_with("nothing was calibrated"));
        assert!(!p.exists());
        std::fs::write(&p, "good").unwrap();
        assert!(Calibration::default().save(&p).is_err());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "good");
    }

    #[test]
    fn inconsistent_calibrations_are_refused() {
        let good = fifo_entry(
            WaitApi::ClockNanosleep,
            vec![1000, 2000],
            vec![10, 20],
            15,
            10,
        );
        let cal = |e: &CalibrationEntry| Calibration {
            entries: vec![e.clone()],
        };
        assert_eq!(cal(&good).check(), Ok(()));
        let with = |f: &dyn Fn(&mut CalibrationEntry)| {
            let mut e = good.clone();
            f(&mut e);
            cal(&e).check()
        };
        assert_eq!(with(&|e| e.residual_ns = vec![1, -1]), Ok(()));
        assert_eq!(
            with(&|e| e.delays_ns = vec![1000]),
            Err("clock_nanosleep fifo: 2 medians_ns for 1 delays_ns".into())
        );
        assert_eq!(
            with(&|e| e.medians_ns = vec![10]),
            Err("clock_nanosleep fifo: 1 medians_ns for 2 delays_ns".into())
        );
        assert_eq!(
            with(&|e| {
                e.delays_ns.clear();
                e.medians_ns.clear();
            }),
            Err("clock_nanosleep fifo: no delay".into())
        );
        assert_eq!(
            with(&|e| e.residual_ns = vec![1]),
            Err("clock_nanosleep fifo: 1 residual_ns for 2 delays_ns".into())
        );
        assert_eq!(
            with(&|e| e.delays_ns = vec![2000, 2000]),
            Err("clock_nanosleep fifo: delays_ns not increasing".into())
        );
        assert_eq!(
            with(&|e| e.delays_ns = vec![2000, 1000]),
            Err("clock_nanosleep fifo: delays_ns not increasing".into())
        );
        assert_eq!(Calibration::default().check(), Err("no entry".into()));
        // Issue 36: medians of 1e18 or i64::MAX loaded (every compensated
        // wait returned at once), and so did two entries of one API and
        // policy (the second silently ignored).
        for big in [1_000_000_000_000_000_000u64, i64::MAX as u64, u64::MAX] {
            assert_eq!(
                with(&|e| e.medians_ns = vec![10, big]),
                Err(format!("clock_nanosleep fifo: a median lateness of {big} ns at 2000 ns is not plausible (at most 1000000000 ns)"))
            );
            assert_eq!(
                with(&|e| e.offset_ns = big),
                Err(format!("clock_nanosleep fifo: an offset of {big} ns is not plausible (at most 1000000000 ns)"))
            );
        }
        assert_eq!(
            with(&|e| e.medians_ns = vec![10, MAX_CALIBRATED_OFFSET_NS]),
            Ok(())
        );
        let mut twice = cal(&good);
        twice.entries.push(good.clone());
        assert_eq!(
            twice.check(),
            Err(
                "clock_nanosleep fifo: two entries (only the first would be used): keep one".into()
            )
        );
        let mut other = good.clone();
        other.policy = "other".into();
        twice.entries[1] = other;
        assert_eq!(twice.check(), Ok(()));
        // Loading checks.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("cal.json");
        let mut e = good.clone();
        e.medians_ns.pop();
        std::fs::write(&p, serde_json::to_string(&cal(&e)).unwrap()).unwrap();
        assert_eq!(
            Calibration::load(&p).unwrap_err(),
            format!(
                "{}: inconsistent timer calibration: clock_nanosleep fifo: 1 medians_ns for 2 delays_ns",
                p.display()
            )
        );
    }
}
