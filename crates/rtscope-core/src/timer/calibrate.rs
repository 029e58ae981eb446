//! Calibration for static compensation: measure a wait API's lateness at a
//! few delays and keep the median, per API and scheduling policy. A
//! calibration is part of a `timer` result and can be saved and loaded.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::wait::{OneShotWait, WaitApi};
use crate::cyclic::Clock;

/// The delays a calibration measures by default: the study's range.
pub const DEFAULT_CALIBRATION_DELAYS_NS: [u64; 3] = [320_000, 1_000_000, 5_000_000];

/// One API × policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationEntry {
    pub api: WaitApi,
    /// `fifo`, `other`, ...
    pub policy: String,
    pub delays_ns: Vec<u64>,
    /// The median lateness at each delay.
    pub medians_ns: Vec<u64>,
    /// The offset static compensation subtracts: the median of all wakes.
    pub offset_ns: u64,
    /// Wakes measured per delay.
    pub wakes_per_delay: usize,
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

    /// Writes the calibration as JSON.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        let mut text = serde_json::to_vec_pretty(self).map_err(io::Error::other)?;
        text.push(b'\n');
        crate::file::write_atomic(path, &text)
    }

    /// Reads a calibration written by [`save`](Self::save) (or the
    /// `calibration` section of a `timer` result).
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let v: serde_json::Value = serde_json::from_slice(&text)
            .map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
        // A whole result document carries it under plan.calibration.
        let v = v
            .get("plan")
            .and_then(|p| p.get("calibration"))
            .cloned()
            .unwrap_or(v);
        serde_json::from_value(v)
            .map_err(|e| format!("{}: not an rtscope timer calibration: {e}", path.display()))
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

/// Measures the lateness of `wait` (uncompensated) at each of `delays_ns`,
/// `n` wakes each, interleaved; `stop` ends it early. Returns the medians per
/// delay and the median of all wakes.
pub fn measure<W: OneShotWait, C: Clock>(
    wait: &mut W,
    clock: &C,
    delays_ns: &[u64],
    n: usize,
    stop: &dyn Fn() -> bool,
) -> io::Result<(Vec<u64>, u64)> {
    let mut per: Vec<Vec<u64>> = delays_ns.iter().map(|_| Vec::with_capacity(n)).collect();
    'outer: for _ in 0..n {
        for (j, &d) in delays_ns.iter().enumerate() {
            if stop() {
                break 'outer;
            }
            let t0 = clock.now();
            let target = t0 + d;
            let mut now = t0;
            while now < target {
                wait.wait_until(target, now)?;
                now = clock.now();
            }
            per[j].push(now - target);
        }
    }
    let mut all: Vec<u64> = per.iter().flatten().copied().collect();
    let medians = per.iter_mut().map(|v| median(v)).collect();
    Ok((medians, median(&mut all)))
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::timer::sleep::sim::{SimClock, SimWait};

    #[test]
    fn offset_is_interpolated_between_calibrated_delays() {
        let e = CalibrationEntry {
            api: WaitApi::ClockNanosleep,
            policy: "fifo".into(),
            delays_ns: vec![1_000, 3_000],
            medians_ns: vec![100, 300],
            offset_ns: 200,
            wakes_per_delay: 1,
        };
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
        let (med, all) = measure(&mut w, &c, &[100_000, 200_000], 50, &|| false).unwrap();
        assert_eq!(med.len(), 2);
        assert!(
            med.iter().all(|&m| (50_000..=50_002).contains(&m)),
            "{med:?}"
        );
        assert!((50_000..=50_002).contains(&all));
        // A stop ends it at once.
        let (med, _) = measure(&mut w, &c, &[100_000], 50, &|| true).unwrap();
        assert_eq!(med, vec![0]);
    }

    #[test]
    fn save_load_round_trip_and_lookup() {
        let mut cal = Calibration::default();
        let e = CalibrationEntry {
            api: WaitApi::Timerfd,
            policy: "fifo".into(),
            delays_ns: vec![1000],
            medians_ns: vec![42_000],
            offset_ns: 42_000,
            wakes_per_delay: 10,
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
}
