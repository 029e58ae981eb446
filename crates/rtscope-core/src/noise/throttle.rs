//! Recognising RT throttling among the gaps of a real-time busy loop,
//! without a trace: from the kernel's bandwidth settings and the gaps' timing.
//!
//! Two kernel mechanisms take the CPU away from a runnable SCHED_FIFO/RR task
//! for a fixed share of every period, whatever the machine's noise:
//!
//! - **RT throttling** (`sched_rt_runtime_us` of `sched_rt_period_us`, default
//!   950 000 of 1 000 000): once the CPU's RT tasks have run `runtime` in a
//!   period, its RT run queue is throttled until the period ends. A busy loop
//!   loses about `period − runtime` (50 ms) at the end of every period, the CPU
//!   idling or running normal tasks meanwhile.
//! - **the fair deadline server** (Linux 6.12+, per CPU,
//!   `/sys/kernel/debug/sched/fair_server/cpuN/{runtime,period}`, default
//!   50 ms of 1 s): normal tasks that an RT task starves get `runtime` every
//!   `period`, in one stretch when they are CPU-bound, in slices of a few ms
//!   when they sleep in between.
//!
//! Either shows as one *episode* per period: a single gap of about the lost
//! time, or a burst of gaps a few ms apart that add up to it. [`classify`]
//! groups the long gaps into episodes and takes as throttling the episodes
//! whose noise is about what a [`Budget`] takes each period and that recur
//! with its period (or, in a run too short to show a repetition, the one
//! episode of that length). Everything else stays noise.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The kernel mechanism behind a [`Budget`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mechanism {
    /// `sched_rt_runtime_us` of `sched_rt_period_us`.
    RtRuntime,
    /// The fair deadline server (6.12+).
    FairServer,
}

/// What a bandwidth limit takes from an RT busy loop: `lost_ns` of every
/// `period_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    /// The limit: RT throttling or the fair deadline server.
    pub mechanism: Mechanism,
    /// Its period, ns.
    pub period_ns: u64,
    /// The CPU time an RT busy loop loses each period, ns.
    pub lost_ns: u64,
    /// The kernel's defaults, assumed because the settings were not readable.
    pub assumed: bool,
}

/// The fair server's defaults (`kernel/sched/deadline.c`): 50 ms every 1 s.
pub const FAIR_SERVER_DEFAULT: (u64, u64) = (1_000_000_000, 50_000_000);

impl Budget {
    /// RT throttling from `sched_rt_period_us` and `sched_rt_runtime_us`:
    /// none when it is off (a negative runtime, -1) or cannot stop anything
    /// (a runtime of at least the period), or for a period that is not positive.
    pub fn rt(period_us: i64, runtime_us: i64) -> Option<Budget> {
        if period_us <= 0 || runtime_us < 0 || runtime_us >= period_us {
            return None;
        }
        Some(Budget {
            mechanism: Mechanism::RtRuntime,
            period_ns: period_us as u64 * 1000,
            lost_ns: (period_us - runtime_us) as u64 * 1000,
            assumed: false,
        })
    }

    /// The fair server of `runtime_ns` every `period_ns`: none when its
    /// runtime is 0 (off) or not below its period.
    pub fn fair_server(period_ns: u64, runtime_ns: u64, assumed: bool) -> Option<Budget> {
        (runtime_ns > 0 && runtime_ns < period_ns).then_some(Budget {
            mechanism: Mechanism::FairServer,
            period_ns,
            lost_ns: runtime_ns,
            assumed,
        })
    }

    /// The shortest gap that may be part of an episode: a fiftieth of the
    /// lost time (1 ms of 50 ms).
    pub fn piece_min_ns(&self) -> u64 {
        self.lost_ns / 50
    }

    /// The longest stretch of loop time between two gaps of one episode: a
    /// quarter of the lost time (12.5 ms of 50 ms).
    pub fn join_ns(&self) -> u64 {
        self.lost_ns / 4
    }

    /// Whether an episode of `noise_ns` is about what this budget takes:
    /// from half to one and a half times the lost time (the loop loses less
    /// when other noise already used part of its runtime, the throttle
    /// starts on a tick; more when the loop comes back late).
    pub fn fits(&self, noise_ns: u64) -> bool {
        let (n, l) = (u128::from(noise_ns), u128::from(self.lost_ns));
        2 * n >= l && 2 * n <= 3 * l
    }

    /// Whether an episode of `noise_ns` is more than any throttling: above
    /// one and a half times the lost time.
    pub fn too_long(&self, noise_ns: u64) -> bool {
        2 * u128::from(noise_ns) > 3 * u128::from(self.lost_ns)
    }

    /// How far from a whole number of periods two fitting episodes may end:
    /// a tenth of the period (the fair server's period restarts when its
    /// tasks wake).
    pub fn tolerance_ns(&self) -> u64 {
        self.period_ns / 10
    }

    /// How far from a whole number of periods a shorter episode may end from
    /// a fitting one: a 25th of the lost time (2 ms of 50 ms). RT throttling
    /// ends where the period timer unthrottles the run queue, the same phase
    /// every period (to 0.1 ms on this VM), however short the throttle was
    /// (a loop that lost time to other noise in the period reaches its
    /// runtime later, and is throttled for less).
    pub fn aligned_ns(&self) -> u64 {
        self.lost_ns / 25
    }

    /// The whole number of periods nearest to `d`, if at least one.
    fn periods(&self, d: u64) -> Option<u64> {
        let p = self.period_ns.max(1);
        let k = (d + p / 2) / p;
        (k >= 1).then_some(k * p)
    }

    /// How far apart two linked episodes may end: three periods and the
    /// tolerance (one or two periods without throttling may lie between them).
    pub fn reach_ns(&self) -> u64 {
        3 * self.period_ns + self.tolerance_ns()
    }

    /// Whether two fitting episodes ending `d` ns apart recur with the period.
    pub fn periodic(&self, d: u64) -> bool {
        self.periods(d)
            .is_some_and(|kp| d.abs_diff(kp) <= self.tolerance_ns())
    }

    /// Whether a shorter episode ending `d` ns from a fitting one is on its phase.
    pub fn aligned(&self, d: u64) -> bool {
        self.periods(d)
            .is_some_and(|kp| d.abs_diff(kp) <= self.aligned_ns())
    }
}

/// The budgets that may stop an RT busy loop on a CPU: RT throttling from
/// `sched_rt_period_us`/`sched_rt_runtime_us`, then the fair server (`fair`:
/// its `(period_ns, runtime_ns)` where read; else, on a kernel that has one
/// (`fair_server_kernel`), its defaults, marked assumed).
pub fn budgets(
    rt_period_us: Option<i64>,
    rt_runtime_us: Option<i64>,
    fair: Option<(u64, u64)>,
    fair_server_kernel: bool,
) -> Vec<Budget> {
    let rt = match (rt_period_us, rt_runtime_us) {
        (p, Some(r)) => Budget::rt(p.unwrap_or(1_000_000), r),
        _ => None,
    };
    let fair = match fair {
        Some((p, r)) => Budget::fair_server(p, r, false),
        None if fair_server_kernel => {
            Budget::fair_server(FAIR_SERVER_DEFAULT.0, FAIR_SERVER_DEFAULT.1, true)
        }
        None => None,
    };
    rt.into_iter().chain(fair).collect()
}

/// Whether a kernel release (`6.18.44-fc`) is 6.12 or later: the fair
/// deadline server's first release.
pub fn fair_server_kernel(release: &str) -> bool {
    let mut it = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().ok());
    match (it.next().flatten(), it.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= (6, 12),
        _ => false,
    }
}

/// The fair server's `(period, runtime)` of `cpu`, in ns, from a debugfs
/// mounted at `debugfs`: none where the files are absent or unreadable (not
/// mounted, no fair server, or kernel lockdown, which refuses them even to root).
pub fn read_fair_server(debugfs: &Path, cpu: usize) -> Option<(u64, u64)> {
    let dir = debugfs.join(format!("sched/fair_server/cpu{cpu}"));
    let num = |f: &str| -> Option<u64> {
        std::fs::read_to_string(dir.join(f))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    Some((num("period")?, num("runtime")?))
}

/// A throttling episode: gaps that follow each other within the budget's
/// join distance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Episode {
    /// The first gap's start and the last gap's end, ns.
    pub start_ns: u64,
    /// The last gap's end, ns.
    pub end_ns: u64,
    /// Its gaps' summed length, ns.
    pub noise_ns: u64,
    /// Its gaps.
    pub gaps: u64,
}

/// Why episodes were taken as throttling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    /// Their length fits and they recur with the period.
    Period,
    /// The run is shorter than three periods, too short to show a
    /// repetition: its only episode of a fitting length.
    Length,
}

/// The throttling one budget explains.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Found {
    /// The budget.
    pub budget: Budget,
    /// Why its episodes were taken as throttling.
    pub evidence: Evidence,
    /// The episodes it explains.
    pub episodes: Vec<Episode>,
}

/// Which of `gaps` (`(start_ns, len_ns)`, in any order) are throttling, for
/// a run of `run_ns`: one flag per gap, and what each budget explains (in
/// the order of `budgets`; a gap goes to the first budget that explains it).
///
/// Per budget: the gaps of at least [`Budget::piece_min_ns`] not yet taken,
/// in time order, form episodes (a gap starting within [`Budget::join_ns`]
/// of the previous one's end joins its episode); episodes
/// [`too_long`](Budget::too_long) for the budget are left out. Two episodes
/// whose noise [`fits`](Budget::fits) and that end whole periods apart
/// ([`Budget::periodic`]), up to three ([`Budget::reach_ns`]), are throttling, and so is a shorter episode that
/// ends on the phase of a fitting one ([`Budget::aligned`]: a throttle cut
/// short because other noise used part of the period) — unless that makes
/// more than one a period (then it is noise that mimics the pattern). In a
/// run shorter than three periods with a single fitting episode and no
/// such pair, that episode is throttling.
pub fn classify(gaps: &[(u64, u64)], budgets: &[Budget], run_ns: u64) -> (Vec<bool>, Vec<Found>) {
    let mut taken = vec![false; gaps.len()];
    let mut order: Vec<usize> = (0..gaps.len()).collect();
    order.sort_by_key(|&i| gaps[i]);
    let mut found = Vec::new();
    for b in budgets {
        // Episodes, with the gaps they hold.
        let mut eps: Vec<(Episode, Vec<usize>)> = Vec::new();
        for &i in &order {
            let (start, len) = gaps[i];
            if taken[i] || len < b.piece_min_ns() {
                continue;
            }
            let end = start + len;
            match eps.last_mut() {
                Some((e, members)) if start.saturating_sub(e.end_ns) <= b.join_ns() => {
                    e.end_ns = e.end_ns.max(end);
                    e.noise_ns += len;
                    e.gaps += 1;
                    members.push(i);
                }
                _ => eps.push((
                    Episode {
                        start_ns: start,
                        end_ns: end,
                        noise_ns: len,
                        gaps: 1,
                    },
                    vec![i],
                )),
            }
        }
        eps.retain(|(e, _)| !b.too_long(e.noise_ns));
        let fits: Vec<bool> = eps.iter().map(|(e, _)| b.fits(e.noise_ns)).collect();
        // Links between episodes that end whole periods apart, up to
        // [`Budget::reach_ns`]: two that fit, or one that fits and a shorter
        // one on its phase. Episodes are in time order (each starts after
        // the one before it ends).
        let mut linked = vec![false; eps.len()];
        let mut rest = eps.iter().enumerate();
        while let Some((i, (first, _))) = rest.next() {
            for (j, (later, _)) in rest.clone() {
                let d = later.end_ns.saturating_sub(first.end_ns);
                if d > b.reach_ns() {
                    break;
                }
                let link = match (fits[i], fits[j]) {
                    (true, true) => b.periodic(d),
                    (true, false) | (false, true) => b.aligned(d),
                    (false, false) => false,
                };
                if link {
                    linked[i] = true;
                    linked[j] = true;
                }
            }
        }
        let n_linked = linked.iter().filter(|&&l| l).count() as u64;
        let n_fit = fits.iter().filter(|&&f| f).count();
        // At most one episode a period (and one more for where the run cut it).
        let most = run_ns / (b.period_ns - b.tolerance_ns()).max(1) + 1;
        let (keep, evidence): (Vec<bool>, Evidence) = if n_linked > 0 && n_linked <= most {
            (linked, Evidence::Period)
        } else if n_linked == 0 && n_fit == 1 && run_ns < 3 * b.period_ns {
            (fits, Evidence::Length)
        } else {
            continue;
        };
        let mut episodes = Vec::new();
        for ((e, members), k) in eps.into_iter().zip(keep) {
            if k {
                for i in members {
                    taken[i] = true;
                }
                episodes.push(e);
            }
        }
        found.push(Found {
            budget: *b,
            evidence,
            episodes,
        });
    }
    (taken, found)
}

/// What one budget explains, as the result document records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FoundReport {
    /// The budget.
    pub budget: Budget,
    /// Why its episodes were taken as throttling.
    pub evidence: Evidence,
    /// Episodes it explains.
    pub episodes: u64,
    /// Gaps in them.
    pub gaps: u64,
    /// Their summed length, ns.
    pub noise_ns: u64,
    /// `noise_ns` as a share of the run, per cent.
    pub pct: f64,
    /// Mean episode length, ns.
    pub mean_episode_ns: u64,
    /// Longest episode, ns.
    pub max_episode_ns: u64,
}

/// A CPU's throttling, as the result document records it (the series
/// attribute `throttling` of `rtscope noise`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The limits that could stop the loop, looked for in this order.
    pub budgets: Vec<Budget>,
    /// The gaps taken as throttling (in every episode found), their summed
    /// length, and that as a share of the run, per cent.
    pub episodes: u64,
    /// Gaps taken as throttling.
    pub gaps: u64,
    /// Their summed length, ns.
    pub noise_ns: u64,
    /// That as a share of the run, per cent.
    pub pct: f64,
    /// What each budget explains.
    pub found: Vec<FoundReport>,
}

/// `part` of a run of `run_ns`, per cent (0 for a run of no length).
fn share(part: u64, run_ns: u64) -> f64 {
    if run_ns > 0 {
        100.0 * part as f64 / run_ns as f64
    } else {
        0.0
    }
}

impl Report {
    /// The report of what [`classify`] found with `budgets` in a run of `run_ns`.
    pub fn new(budgets: &[Budget], found: &[Found], run_ns: u64) -> Report {
        let found: Vec<FoundReport> = found
            .iter()
            .map(|f| {
                let n = f.episodes.len() as u64;
                let noise: u64 = f.episodes.iter().map(|e| e.noise_ns).sum();
                FoundReport {
                    budget: f.budget,
                    evidence: f.evidence,
                    episodes: n,
                    gaps: f.episodes.iter().map(|e| e.gaps).sum(),
                    noise_ns: noise,
                    pct: share(noise, run_ns),
                    mean_episode_ns: noise / n.max(1),
                    max_episode_ns: f.episodes.iter().map(|e| e.noise_ns).max().unwrap_or(0),
                }
            })
            .collect();
        let noise_ns = found.iter().map(|f| f.noise_ns).sum();
        Report {
            budgets: budgets.to_vec(),
            episodes: found.iter().map(|f| f.episodes).sum(),
            gaps: found.iter().map(|f| f.gaps).sum(),
            noise_ns,
            pct: share(noise_ns, run_ns),
            found,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;

    /// `sched_rt_runtime_us=950000` of 1 s: 50 ms a second.
    fn rt() -> Budget {
        Budget::rt(1_000_000, 950_000).unwrap()
    }

    /// A small deterministic generator (no dependency, same series every run).
    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        *seed >> 33
    }

    /// Noise as this VM shows it: a gap every ~2 ms of 1-80 µs, a 3-5 ms
    /// kworker gap now and then, over `run_ns`.
    fn real_noise(run_ns: u64, seed: u64) -> Vec<(u64, u64)> {
        let mut s = seed;
        let mut t = 0;
        let mut v = Vec::new();
        loop {
            t += 1_000_000 + lcg(&mut s) % 2_000_000;
            if t >= run_ns {
                return v;
            }
            let len = if lcg(&mut s) % 400 == 0 {
                3 * MS + lcg(&mut s) % (2 * MS)
            } else {
                1_000 + lcg(&mut s) % 80_000
            };
            v.push((t, len));
        }
    }

    /// Inserts `throttle` gaps into `noise`, dropping the noise they overlap.
    fn with(mut noise: Vec<(u64, u64)>, throttle: &[(u64, u64)]) -> Vec<(u64, u64)> {
        noise.retain(|&(s, l)| {
            throttle
                .iter()
                .all(|&(ts, tl)| s + l + 1_000 < ts || s > ts + tl + 1_000)
        });
        noise.extend_from_slice(throttle);
        noise.sort();
        noise
    }

    fn flagged(gaps: &[(u64, u64)], flags: &[bool]) -> Vec<(u64, u64)> {
        gaps.iter()
            .zip(flags)
            .filter(|(_, &f)| f)
            .map(|(g, _)| *g)
            .collect()
    }

    #[test]
    fn budgets_from_the_settings() {
        assert_eq!(
            Budget::rt(1_000_000, 950_000),
            Some(Budget {
                mechanism: Mechanism::RtRuntime,
                period_ns: S,
                lost_ns: 50 * MS,
                assumed: false
            })
        );
        // -1 is off; a runtime of the whole period stops nothing; nonsense periods.
        assert_eq!(Budget::rt(1_000_000, -1), None);
        assert_eq!(Budget::rt(1_000_000, 1_000_000), None);
        assert_eq!(Budget::rt(1_000_000, 999_999).unwrap().lost_ns, 1_000);
        assert_eq!(Budget::rt(1_000_000, 0).unwrap().lost_ns, S);
        assert_eq!(Budget::rt(0, 0), None);
        assert_eq!(Budget::rt(-5, 0), None);
        assert_eq!(
            Budget::fair_server(S, 50 * MS, true),
            Some(Budget {
                mechanism: Mechanism::FairServer,
                period_ns: S,
                lost_ns: 50 * MS,
                assumed: true
            })
        );
        assert_eq!(Budget::fair_server(S, 0, false), None);
        assert_eq!(Budget::fair_server(S, S, false), None);
        assert!(Budget::fair_server(S, S - 1, false).is_some());
    }

    #[test]
    fn which_budgets_apply() {
        let fair_default = Budget::fair_server(S, 50 * MS, true).unwrap();
        // This VM: RT throttling on, a 6.18 kernel whose fair server is unreadable.
        assert_eq!(
            budgets(Some(1_000_000), Some(950_000), None, true),
            vec![rt(), fair_default]
        );
        // The fair server as read (here 20 ms of 500 ms), RT throttling off.
        assert_eq!(
            budgets(Some(1_000_000), Some(-1), Some((500 * MS, 20 * MS)), true),
            vec![Budget::fair_server(500 * MS, 20 * MS, false).unwrap()]
        );
        // Its runtime 0: off.
        assert_eq!(budgets(None, Some(-1), Some((S, 0)), true), vec![]);
        // An older kernel, no fair server; the period unreadable: 1 s.
        assert_eq!(budgets(None, Some(950_000), None, false), vec![rt()]);
        assert_eq!(budgets(Some(1_000_000), None, None, false), vec![]);
    }

    #[test]
    fn kernels_with_the_fair_server() {
        for (release, has) in [
            ("6.18.44-fc-v657", true),
            ("6.12.0", true),
            ("6.11.9-rt", false),
            ("5.15.0-91-generic", false),
            ("7.0", true),
            ("6", false),
            ("", false),
            ("x.y", false),
        ] {
            assert_eq!(fair_server_kernel(release), has, "{release}");
        }
    }

    #[test]
    fn fair_server_settings_from_debugfs() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("sched/fair_server/cpu1");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("period"), "1000000000\n").unwrap();
        std::fs::write(dir.join("runtime"), "50000000\n").unwrap();
        assert_eq!(read_fair_server(d.path(), 1), Some((S, 50 * MS)));
        // Another CPU, or a file missing or not a number: none.
        assert_eq!(read_fair_server(d.path(), 0), None);
        std::fs::write(dir.join("runtime"), "lots\n").unwrap();
        assert_eq!(read_fair_server(d.path(), 1), None);
        std::fs::remove_file(dir.join("period")).unwrap();
        assert_eq!(read_fair_server(d.path(), 1), None);
    }

    #[test]
    fn budget_limits() {
        let b = rt();
        assert_eq!(b.piece_min_ns(), MS);
        assert_eq!(b.join_ns(), 12_500_000);
        assert_eq!(b.tolerance_ns(), 100 * MS);
        // From half to one and a half times the lost 50 ms.
        assert!(!b.fits(25 * MS - 1));
        assert!(b.fits(25 * MS));
        assert!(b.fits(75 * MS));
        assert!(!b.fits(75 * MS + 1));
        // Whole periods apart, within 100 ms; linked up to 3.1 s.
        assert_eq!(b.reach_ns(), 3_100 * MS);
        assert!(b.periodic(S));
        assert!(b.periodic(900 * MS));
        assert!(!b.periodic(900 * MS - 1));
        assert!(b.periodic(1_100 * MS));
        assert!(!b.periodic(1_100 * MS + 1));
        assert!(b.periodic(3 * S + 100 * MS));
        assert!(b.periodic(4 * S));
        assert!(!b.periodic(0));
        assert!(!b.periodic(500 * MS));
        assert!(b.periodic(2 * S - 50 * MS));
        assert!(!b.periodic(1_500 * MS));
        // On the phase: within 2 ms of one to three periods.
        assert_eq!(b.aligned_ns(), 2 * MS);
        assert!(b.aligned(S));
        assert!(b.aligned(S - 2 * MS));
        assert!(!b.aligned(S - 2 * MS - 1));
        assert!(b.aligned(3 * S + 2 * MS));
        assert!(!b.aligned(3 * S + 2 * MS + 1));
        assert!(b.aligned(4 * S));
        assert!(!b.aligned(2 * MS));
        // Above 75 ms is more than throttling.
        assert!(!b.too_long(75 * MS));
        assert!(b.too_long(75 * MS + 1));
    }

    /// A ~48.7 ms gap at the end of every second, as this VM shows it.
    fn throttle_gaps(n: u64, len: u64) -> Vec<(u64, u64)> {
        (1..=n).map(|k| (k * S - len, len)).collect()
    }

    #[test]
    fn a_gap_once_a_second_is_throttling() {
        let t = throttle_gaps(4, 48_700_000);
        let (flags, found) = classify(&t, &[rt()], 5 * S);
        assert_eq!(flags, vec![true; 4]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].budget, rt());
        assert_eq!(found[0].evidence, Evidence::Period);
        assert_eq!(
            found[0].episodes[1],
            Episode {
                start_ns: 2 * S - 48_700_000,
                end_ns: 2 * S,
                noise_ns: 48_700_000,
                gaps: 1
            }
        );
    }

    #[test]
    fn real_noise_mixed_in_stays_noise() {
        let t = throttle_gaps(9, 48_700_000);
        let gaps = with(real_noise(10 * S, 7), &t);
        assert!(gaps.iter().any(|g| g.1 >= 3 * MS && g.1 < 10 * MS));
        let (flags, found) = classify(&gaps, &[rt()], 10 * S);
        assert_eq!(flagged(&gaps, &flags), t);
        assert_eq!(found[0].episodes.len(), 9);
        // The same noise without throttling: nothing.
        let noise = real_noise(10 * S, 7);
        let (flags, found) = classify(&noise, &[rt()], 10 * S);
        assert!(!flags.contains(&true));
        assert!(found.is_empty());
    }

    #[test]
    fn no_throttling_configured_takes_nothing() {
        let t = throttle_gaps(4, 48_700_000);
        let budgets = budgets(Some(1_000_000), Some(-1), None, false);
        let (flags, found) = classify(&t, &budgets, 5 * S);
        assert_eq!(flags, vec![false; 4]);
        assert!(found.is_empty());
    }

    #[test]
    fn gaps_that_do_not_repeat_are_noise() {
        // Two 50 ms gaps 400 ms apart, then nothing, in a 10 s run.
        let g = [(S, 50 * MS), (1_450 * MS, 50 * MS)];
        let (flags, found) = classify(&g, &[rt()], 10 * S);
        assert_eq!(flags, vec![false, false]);
        assert!(found.is_empty());
        // One 50 ms gap in a 10 s run: it did not repeat when it should have.
        let (flags, _) = classify(&g[..1], &[rt()], 10 * S);
        assert_eq!(flags, vec![false]);
    }

    #[test]
    fn too_many_to_be_once_a_period() {
        // A 50 ms gap every 100 ms: each has partners a second away, but ten
        // a second is no throttling.
        let g: Vec<(u64, u64)> = (1..50).map(|k| (k * 100 * MS, 50 * MS)).collect();
        let (flags, found) = classify(&g, &[rt()], 5 * S);
        assert!(!flags.contains(&true));
        assert!(found.is_empty());
        // One a period, plus the one the run's end may cut: 6 in a 5 s run
        // (5 s / 900 ms + 1), 7 is one too many.
        let g6: Vec<(u64, u64)> = (0..6).map(|k| (k * 900 * MS, 50 * MS)).collect();
        assert_eq!(classify(&g6, &[rt()], 5 * S).0, vec![true; 6]);
        let g7: Vec<(u64, u64)> = (0..7).map(|k| (k * 900 * MS, 50 * MS)).collect();
        assert_eq!(classify(&g7, &[rt()], 5 * S).0, vec![false; 7]);
    }

    #[test]
    fn a_short_run_takes_its_one_gap_by_length() {
        // `check --measure`'s 2 s: one full period, one throttle gap.
        let g = with(real_noise(2 * S, 3), &[(1_400 * MS, 48_700_000)]);
        let (flags, found) = classify(&g, &[rt()], 2 * S);
        assert_eq!(flagged(&g, &flags), vec![(1_400 * MS, 48_700_000)]);
        assert_eq!(found[0].evidence, Evidence::Length);
        // Not from three periods on; not a gap that does not fit.
        let one = [(1_400 * MS, 48_700_000)];
        assert_eq!(classify(&one, &[rt()], 3 * S - 1).0, vec![true]);
        assert_eq!(classify(&one, &[rt()], 3 * S).0, vec![false]);
        assert_eq!(classify(&[(S, 24 * MS)], &[rt()], S).0, vec![false]);
        // Two fitting episodes that are not a period apart: not throttling.
        let two = [(200 * MS, 50 * MS), (700 * MS, 50 * MS)];
        assert_eq!(classify(&two, &[rt()], 2 * S).0, vec![false, false]);
    }

    /// The fair server handing a CPU-starved task its 50 ms in slices: ~2.5 ms
    /// gaps with ~2 ms of loop between them, a burst every ~1.045 s (as
    /// `noise` traced it on this VM while a normal task woke every 2 ms).
    fn fair_bursts(n: u64) -> Vec<(u64, u64)> {
        let mut v = Vec::new();
        for k in 0..n {
            let mut t = 300 * MS + k * 1_045 * MS;
            for i in 0..20 {
                let len = 2_200_000 + (i % 4) * 200_000;
                v.push((t, len));
                t += len + 2_000_000;
            }
        }
        v
    }

    #[test]
    fn slices_of_the_fair_server_add_up_to_an_episode() {
        let f = fair_bursts(3);
        let gaps = with(real_noise(4 * S, 11), &f);
        let fair = Budget::fair_server(S, 50 * MS, true).unwrap();
        let (flags, found) = classify(&gaps, &[fair], 4 * S);
        assert_eq!(flagged(&gaps, &flags), f);
        assert_eq!(found[0].episodes.len(), 3);
        assert_eq!(found[0].episodes[0].gaps, 20);
        // Five slices each of 2.2, 2.4, 2.6 and 2.8 ms.
        assert_eq!(found[0].episodes[0].noise_ns, 50 * MS);
        assert_eq!(found[0].episodes[0].start_ns, 300 * MS);
    }

    #[test]
    fn episodes_join_within_a_quarter_of_the_lost_time() {
        // Two 20 ms gaps 12.5 ms apart are one 40 ms episode; 12.5 ms + 1 ns
        // apart, two 20 ms episodes, each too short.
        let join = |sep: u64| {
            let mut v = Vec::new();
            for k in 1..4u64 {
                v.push((k * S, 20 * MS));
                v.push((k * S + 20 * MS + sep, 20 * MS));
            }
            classify(&v, &[rt()], 5 * S)
        };
        let (flags, found) = join(12_500_000);
        assert_eq!(flags, vec![true; 6]);
        assert_eq!(found[0].episodes[0].noise_ns, 40 * MS);
        assert_eq!(found[0].episodes[0].end_ns, S + 52_500_000);
        assert_eq!(join(12_500_001).0, vec![false; 6]);
        // Gaps under 1 ms neither join nor add: 48.9 ms stays 48.9 ms.
        let mut v = throttle_gaps(3, 48_900_000);
        v.push((S + 5 * MS, MS - 1));
        v.push((2 * S + 5 * MS, MS));
        let (flags, found) = classify(&v, &[rt()], 4 * S);
        assert_eq!(flags, vec![true, true, true, false, true]);
        assert_eq!(found[0].episodes[0].noise_ns, 48_900_000);
        assert_eq!(found[0].episodes[1].noise_ns, 48_900_000 + MS);
        assert_eq!(found[0].episodes[1].gaps, 2);
    }

    #[test]
    fn the_first_budget_that_explains_a_gap_takes_it() {
        // RT throttling and the fair server with the same 50 ms of 1 s: RT
        // throttling (first) takes the gaps; a 200 ms budget of 2 s takes its own.
        let fair = Budget::fair_server(S, 50 * MS, true).unwrap();
        let big = Budget::fair_server(2 * S, 200 * MS, false).unwrap();
        let mut g = throttle_gaps(5, 48 * MS);
        g.extend([(1_300 * MS, 200 * MS), (3_300 * MS, 210 * MS)]);
        let (flags, found) = classify(&g, &[rt(), fair, big], 6 * S);
        assert_eq!(flags, vec![true; 7]);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].budget, rt());
        assert_eq!(found[0].episodes.len(), 5);
        assert_eq!(found[1].budget, big);
        assert_eq!(found[1].episodes.len(), 2);
    }

    #[test]
    fn the_report_sums_and_averages_the_episodes() {
        let fair = Budget::fair_server(2 * S, 200 * MS, false).unwrap();
        let ep = |noise_ns: u64, gaps: u64| Episode {
            start_ns: 0,
            end_ns: noise_ns,
            noise_ns,
            gaps,
        };
        let found = [
            Found {
                budget: rt(),
                evidence: Evidence::Period,
                episodes: vec![ep(48 * MS, 1), ep(50 * MS, 1), ep(49 * MS, 1)],
            },
            Found {
                budget: fair,
                evidence: Evidence::Length,
                episodes: vec![ep(201 * MS, 20)],
            },
        ];
        let r = Report::new(&[rt(), fair], &found, 10 * S);
        assert_eq!(r.budgets, vec![rt(), fair]);
        assert_eq!((r.episodes, r.gaps, r.noise_ns), (4, 23, 348 * MS));
        assert!((r.pct - 3.48).abs() < 1e-9, "{}", r.pct);
        assert_eq!(
            r.found[0],
            FoundReport {
                budget: rt(),
                evidence: Evidence::Period,
                episodes: 3,
                gaps: 3,
                noise_ns: 147 * MS,
                pct: 1.47,
                mean_episode_ns: 49 * MS,
                max_episode_ns: 50 * MS,
            }
        );
        assert_eq!(r.found[1].mean_episode_ns, 201 * MS);
        assert!((r.found[1].pct - 2.01).abs() < 1e-9, "{}", r.found[1].pct);
        assert_eq!(r.found[1].gaps, 20);
        // Nothing found: zeros; a run of no length: 0 %.
        let none = Report::new(&[rt()], &[], 3 * S);
        assert_eq!((none.episodes, none.gaps, none.noise_ns), (0, 0, 0));
        assert_eq!(none.pct, 0.0);
        assert!(none.found.is_empty());
        let empty = Report::new(&[rt(), fair], &found, 0);
        assert_eq!((empty.pct, empty.found[0].pct), (0.0, 0.0));
        // As the document holds it.
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["found"][0]["budget"]["mechanism"], "rt_runtime");
        assert_eq!(v["found"][0]["evidence"], "period");
        assert_eq!(v["found"][1]["evidence"], "length");
        assert_eq!(serde_json::from_value::<Report>(v).unwrap(), r);
    }

    /// What this VM showed under load: a 15.5 ms gap (the fair server) that
    /// used up part of the second period's runtime, so that its throttle
    /// lasted 20.1 ms, ending on the period's phase as the 52.1 ms one does.
    #[test]
    fn a_throttle_cut_short_ends_on_the_phase() {
        let shortened = (1_976_300 * 1_000, 20_127_000); // ends 1.996427 s
        let full = (2_944_300 * 1_000, 52_119_000); // ends 2.996419 s
        let fair = (1_852_900 * 1_000, 15_490_000);
        let g = with(real_noise(3 * S, 5), &[fair, shortened, full]);
        let (flags, found) = classify(&g, &[rt()], 3 * S);
        assert_eq!(flagged(&g, &flags), vec![shortened, full]);
        assert_eq!(found[0].evidence, Evidence::Period);
        assert_eq!(found[0].episodes.len(), 2);
        // On the phase to 2 ms, not beyond.
        let at = |end: u64| {
            let g = [(end - 20 * MS, 20 * MS), (2 * S - 50 * MS, 50 * MS)];
            classify(&g, &[rt()], 3 * S).0
        };
        assert_eq!(at(S + 2 * MS), vec![true, true]);
        assert_eq!(at(S - 2 * MS), vec![true, true]);
        assert_eq!(at(S + 2 * MS + 1), vec![false, false]);
        // Two short ones on each other's phase: no fitting one, no throttling.
        let g = [(S - 20 * MS, 20 * MS), (2 * S - 20 * MS, 20 * MS)];
        assert_eq!(classify(&g, &[rt()], 3 * S).0, vec![false, false]);
        // Too long for throttling: out, and no anchor for a short one.
        let g = [(S - 80 * MS, 80 * MS), (2 * S - 20 * MS, 20 * MS)];
        assert_eq!(classify(&g, &[rt()], 3 * S).0, vec![false, false]);
    }

    #[test]
    fn episodes_are_linked_up_to_three_periods_apart() {
        // Fitting episodes ending 1 s and 4.05 s (three periods and 50 ms),
        // 1 s and 4.1 s (the reach), 1 s and 5 s (four periods): not the last.
        let pair = |end: u64| {
            let g = [(S - 50 * MS, 50 * MS), (end - 50 * MS, 50 * MS)];
            classify(&g, &[rt()], 6 * S).0
        };
        assert_eq!(pair(4_050 * MS), vec![true, true]);
        assert_eq!(pair(4_100 * MS), vec![true, true]);
        assert_eq!(pair(5 * S), vec![false, false]);
        // A short one on the phase four periods away: not linked either.
        let g = [(S - 50 * MS, 50 * MS), (5 * S - 20 * MS, 20 * MS)];
        assert_eq!(classify(&g, &[rt()], 6 * S).0, vec![false, false]);
        // Many short episodes in between do not stop the search.
        let mut g: Vec<(u64, u64)> = (1..200).map(|k| (k * 15 * MS, 2 * MS)).collect();
        g.extend([(4 * S - 50 * MS, 50 * MS), (7 * S - 50 * MS, 50 * MS)]);
        let (flags, _) = classify(&g, &[rt()], 8 * S);
        assert_eq!(flags[199..], [true, true]);
        assert!(!flags[..199].contains(&true));
    }

    #[test]
    fn an_empty_run() {
        assert_eq!(classify(&[], &[rt()], 0), (vec![], vec![]));
        assert_eq!(classify(&[(0, 50 * MS)], &[], S), (vec![false], vec![]));
    }
}
