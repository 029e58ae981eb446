//! Read cost: rtscope's measurement next to plain loops written without it.
//!
//! ```text
//! cargo bench -p rtscope-core --bench clock_cost
//! ```
//!
//! For each source, the plain loop reads the clock N times and divides the
//! elapsed time (measured by that same clock) by N: an inline-asm `rdtsc`
//! loop, a `clock_gettime(CLOCK_MONOTONIC)` loop through the vDSO, and a raw
//! `syscall(SYS_clock_gettime)` loop. Next to it: what `rtscope clock`
//! reports for the same source (the consecutive mode of
//! `rtscope_core::clock::measure`: mean and median delta). The two are run
//! alternately 31 times on one CPU and each figure is the median of its 31
//! repetitions, so that a noisy neighbour disturbs both alike.
//!
//! Target: rtscope's reported TSC read cost within 10 % of the plain loop.
//! The bench exits 1 when the target is missed.

use std::hint::black_box;

#[cfg(target_arch = "x86_64")]
use rtscope_core::clock::calibrate;
use rtscope_core::clock::measure::{deltas_into, source_consecutive, summarize, touched_buffer};
use rtscope_core::clock::{Scale, Source, SourceId};

const REPS: usize = 31;

fn clock_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is valid and writable.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn syscall_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: SYS_clock_gettime with a valid clock id and a writable timespec.
    unsafe {
        libc::syscall(
            libc::SYS_clock_gettime,
            libc::CLOCK_MONOTONIC as libc::c_long,
            &mut ts as *mut libc::timespec,
        )
    };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rdtsc_asm() -> u64 {
    let lo: u32;
    let hi: u32;
    // SAFETY: rdtsc reads the time-stamp counter; no memory is touched.
    unsafe { core::arch::asm!("rdtsc", out("eax") lo, out("edx") hi, options(nomem, nostack)) };
    (u64::from(hi) << 32) | u64::from(lo)
}

/// Plain loop: ns per read.
fn plain_once(n: u64, read: &impl Fn() -> u64, to_ns: &impl Fn(u64) -> f64) -> f64 {
    let t0 = read();
    for _ in 0..n {
        black_box(read());
    }
    let t1 = read();
    to_ns(t1 - t0) / (n + 1) as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The plain loop and rtscope's consecutive measurement, interleaved REPS
/// times: (plain ns/read, rtscope mean, rtscope median), each the median over
/// the repetitions.
fn compare(
    id: SourceId,
    n: usize,
    scale: &Scale,
    read: impl Fn() -> u64,
    to_ns: impl Fn(u64) -> f64,
) -> (f64, f64, f64) {
    let src = Source::open(id).expect("source");
    let mut ts = touched_buffer(n);
    let mut d = Vec::with_capacity(n);
    let (mut p, mut m, mut md) = (vec![], vec![], vec![]);
    for _ in 0..REPS {
        p.push(plain_once(n as u64, &read, &to_ns));
        source_consecutive(&src, &mut ts);
        deltas_into(&ts, id.width_bits(), &mut d);
        let s = summarize(&mut d, scale);
        m.push(s.mean_ns);
        md.push(s.p50_ns);
    }
    (median(p), median(m), median(md))
}

fn main() {
    // One CPU, so that no read is split by a migration.
    let cpus = rtscope_core::units::online_cpus();
    let _ = rtscope_core::sys::set_affinity(&cpus[cpus.len() - 1..]);
    let mut rows: Vec<(String, f64, f64, f64)> = Vec::new();
    #[allow(unused_mut)] // only x86-64 has a target to miss
    let mut ok = true;

    #[cfg(target_arch = "x86_64")]
    {
        let tsc = Source::open(SourceId::Tsc).expect("tsc");
        let cal = calibrate::calibrate_source(&tsc, 500_000_000);
        let scale = Scale::from_hz(cal.hz);
        println!(
            "TSC {:.3} MHz (± {:.3} ppm, calibrated over 500 ms)",
            cal.hz / 1e6,
            cal.uncertainty_ppm
        );
        let (raw, mean, median) = compare(SourceId::Tsc, 200_000, &scale, rdtsc_asm, |t| {
            scale.to_ns_f64(t as f64)
        });
        rows.push(("tsc (inline-asm rdtsc)".into(), raw, mean, median));
        let diff = (mean - raw).abs() / raw;
        if diff > 0.10 {
            ok = false;
        }
        println!(
            "target: rtscope TSC mean {mean:.2} ns vs plain loop {raw:.2} ns: {:+.1} % -> {}",
            (mean - raw) / raw * 100.0,
            if diff <= 0.10 {
                "within 10 %"
            } else {
                "MISSED (more than 10 %)"
            }
        );
    }
    let ns = Scale::ns();
    let (raw, mean, median) = compare(SourceId::Monotonic, 200_000, &ns, clock_ns, |t| t as f64);
    rows.push(("monotonic (vDSO clock_gettime)".into(), raw, mean, median));
    let (raw, mean, median) = compare(SourceId::MonotonicSyscall, 100_000, &ns, syscall_ns, |t| {
        t as f64
    });
    rows.push(("monotonic-syscall (raw syscall)".into(), raw, mean, median));

    println!();
    println!(
        "{:<32} {:>14} {:>14} {:>16} {:>8}",
        "source", "plain loop ns", "rtscope mean", "rtscope median", "diff"
    );
    for (name, raw, mean, median) in &rows {
        println!(
            "{name:<32} {raw:>14.2} {mean:>14.2} {median:>16.2} {:>7.1}%",
            (mean - raw) / raw * 100.0
        );
    }
    if !ok {
        std::process::exit(1);
    }
}
