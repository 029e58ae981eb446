//! Parsing and formatting of the units users type: durations (`300us`, `1.5ms`,
//! `10m`, `2d`) and CPU lists (`0-3,6`).
//!
//! Durations are kept as integer nanoseconds everywhere in rtscope. A bare
//! number takes a default unit chosen by the caller (cyclictest reads `-i 300`
//! as microseconds and `-D 10` as seconds; rtscope does the same).

use thiserror::Error;

/// What went wrong when parsing a user-supplied value.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseError {
    #[error("'{0}' is not a duration (expected a number with a unit: ns, us, ms, s, m, h, d)")]
    /// Not a number with a unit.
    BadDuration(String),
    #[error("'{0}': negative durations are not allowed")]
    /// A negative duration.
    Negative(String),
    #[error("'{0}' is too large")]
    /// Too large for the unit's range (u64 ns).
    Overflow(String),
    #[error("'{0}' is not a CPU list (expected e.g. 0-3,6)")]
    /// Not a CPU list.
    BadCpuList(String),
}

/// A time unit, with its length in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds.
    Ns,
    /// Microseconds.
    Us,
    /// Milliseconds.
    Ms,
    /// Seconds.
    S,
    /// Minutes.
    Min,
    /// Hours.
    H,
    /// Days.
    D,
}

impl Unit {
    /// Nanoseconds in one of this unit.
    pub fn ns(self) -> u64 {
        match self {
            Unit::Ns => 1,
            Unit::Us => 1_000,
            Unit::Ms => 1_000_000,
            Unit::S => 1_000_000_000,
            Unit::Min => 60_000_000_000,
            Unit::H => 3_600_000_000_000,
            Unit::D => 86_400_000_000_000,
        }
    }

    fn from_suffix(s: &str) -> Option<Unit> {
        Some(match s {
            "ns" | "nsec" => Unit::Ns,
            "us" | "µs" | "usec" => Unit::Us,
            "ms" | "msec" => Unit::Ms,
            "s" | "sec" => Unit::S,
            "m" | "min" => Unit::Min,
            "h" => Unit::H,
            "d" => Unit::D,
            _ => return None,
        })
    }
}

/// Parses a duration into nanoseconds. A bare number is read in `default_unit`.
/// Decimals are accepted (`1.5ms`); the result is rounded to the nearest ns.
pub fn parse_duration_ns(input: &str, default_unit: Unit) -> Result<u64, ParseError> {
    let s = input.trim();
    if s.starts_with('-') {
        return Err(ParseError::Negative(input.to_string()));
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    if num.is_empty() || num.matches('.').count() > 1 || num == "." {
        return Err(ParseError::BadDuration(input.to_string()));
    }
    let unit = if suffix.is_empty() {
        default_unit
    } else {
        Unit::from_suffix(suffix.trim()).ok_or_else(|| ParseError::BadDuration(input.into()))?
    };
    let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
    let int: u64 = if int_part.is_empty() {
        0
    } else {
        int_part
            .parse()
            .map_err(|_| ParseError::Overflow(input.to_string()))?
    };
    let mut total = int
        .checked_mul(unit.ns())
        .ok_or_else(|| ParseError::Overflow(input.to_string()))?;
    if !frac_part.is_empty() {
        // Fraction in units of 1e-digits, scaled exactly in u128.
        let digits = frac_part.len().min(18) as u32;
        let frac: u128 = frac_part[..digits as usize]
            .parse()
            .map_err(|_| ParseError::BadDuration(input.to_string()))?;
        let scale = 10u128.pow(digits);
        let add = (frac * unit.ns() as u128 + scale / 2) / scale;
        total = total
            .checked_add(add as u64)
            .ok_or_else(|| ParseError::Overflow(input.to_string()))?;
    }
    Ok(total)
}

/// Formats nanoseconds with the largest unit that keeps it readable: `950ns`,
/// `12.3us`, `1ms`, `2.5s`.
pub fn format_ns(ns: u64) -> String {
    let (v, u) = if ns < 1_000 {
        return format!("{ns}ns");
    } else if ns < 1_000_000 {
        (ns as f64 / 1e3, "us")
    } else if ns < 1_000_000_000 {
        (ns as f64 / 1e6, "ms")
    } else {
        (ns as f64 / 1e9, "s")
    };
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}{u}")
}

/// Parses a CPU list such as `0-3,6,8-9` into a sorted, de-duplicated list.
pub fn parse_cpu_list(input: &str) -> Result<Vec<usize>, ParseError> {
    let bad = || ParseError::BadCpuList(input.to_string());
    let mut cpus = Vec::new();
    let s = input.trim();
    if s.is_empty() {
        return Err(bad());
    }
    for part in s.split(',') {
        let part = part.trim();
        if let Some((a, b)) = part.split_once('-') {
            let a: usize = a.trim().parse().map_err(|_| bad())?;
            let b: usize = b.trim().parse().map_err(|_| bad())?;
            if a > b || b >= 65536 {
                return Err(bad());
            }
            cpus.extend(a..=b);
        } else {
            let c: usize = part.parse().map_err(|_| bad())?;
            if c >= 65536 {
                return Err(bad());
            }
            cpus.push(c);
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Formats a CPU list compactly (`0-3,6`).
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

/// The CPUs the kernel reports online (`/sys/devices/system/cpu/online`), or the
/// CPUs this process may run on if that file is unreadable.
pub fn online_cpus() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| parse_cpu_list(s.trim()).ok())
        .unwrap_or_else(|| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (0..n).collect()
        })
}

/// A count or rate with an SI multiplier, one decimal where it is one:
/// `12345.0` -> `12.3k`, `2.5e6` -> `2.5M`, `42.0` -> `42`, `0.5` -> `0.5`.
pub fn format_si(x: f64) -> String {
    let a = x.abs();
    if a >= 1e9 {
        format!("{:.1}G", x / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", x / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", x / 1e3)
    } else if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn si_multipliers_at_their_bounds() {
        assert_eq!(format_si(0.0), "0");
        assert_eq!(format_si(42.0), "42");
        assert_eq!(format_si(0.5), "0.5");
        assert_eq!(format_si(9_999.0), "9999");
        assert_eq!(format_si(9_999.5), "9999.5");
        assert_eq!(format_si(10_000.0), "10.0k");
        assert_eq!(format_si(12_345.0), "12.3k");
        assert_eq!(format_si(999_999.0), "1000.0k");
        assert_eq!(format_si(1_000_000.0), "1.0M");
        assert_eq!(format_si(2_500_000.0), "2.5M");
        assert_eq!(format_si(1e9), "1.0G");
        assert_eq!(format_si(3.25e9), "3.2G");
        assert_eq!(format_si(-12_345.0), "-12.3k");
        assert_eq!(format_si(-2e6), "-2.0M");
        assert_eq!(format_si(-4e9), "-4.0G");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("300us", Unit::Us), Ok(300_000));
        assert_eq!(parse_duration_ns("300", Unit::Us), Ok(300_000));
        assert_eq!(parse_duration_ns("10", Unit::S), Ok(10_000_000_000));
        assert_eq!(parse_duration_ns("1.5ms", Unit::Us), Ok(1_500_000));
        assert_eq!(parse_duration_ns("0.5", Unit::Ms), Ok(500_000));
        assert_eq!(parse_duration_ns("10m", Unit::S), Ok(600_000_000_000));
        assert_eq!(parse_duration_ns("2d", Unit::S), Ok(172_800_000_000_000));
        assert_eq!(parse_duration_ns("1h", Unit::S), Ok(3_600_000_000_000));
        assert_eq!(parse_duration_ns("7ns", Unit::S), Ok(7));
        assert_eq!(parse_duration_ns("0", Unit::S), Ok(0));
        assert!(matches!(
            parse_duration_ns("-5", Unit::Us),
            Err(ParseError::Negative(_))
        ));
        for bad in ["1xs", "", "abc", "1..2ms", ".", "ms", "1 2s"] {
            assert!(parse_duration_ns(bad, Unit::Us).is_err(), "{bad}");
        }
        assert!(matches!(
            parse_duration_ns("99999999999999999999d", Unit::S),
            Err(ParseError::Overflow(_))
        ));
    }

    #[test]
    fn format() {
        assert_eq!(format_ns(950), "950ns");
        assert_eq!(format_ns(12_300), "12.3us");
        assert_eq!(format_ns(1_000_000), "1ms");
        assert_eq!(format_ns(2_500_000_000), "2.5s");
        // Each unit starts at exactly one of itself.
        assert_eq!(format_ns(999), "999ns");
        assert_eq!(format_ns(1_000), "1us");
        assert_eq!(format_ns(999_999_999), "1000ms");
        assert_eq!(format_ns(1_000_000_000), "1s");
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,6"), Ok(vec![0, 1, 2, 3, 6]));
        assert_eq!(parse_cpu_list("3,1,1"), Ok(vec![1, 3]));
        assert_eq!(parse_cpu_list("3-3"), Ok(vec![3]));
        for bad in ["", "a", "3-1", "1-", ",", "1,,2", "-1"] {
            assert!(parse_cpu_list(bad).is_err(), "{bad}");
        }
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
        assert_eq!(format_cpu_list(&[]), "");
    }

    #[test]
    fn online_cpus_are_the_kernels() {
        let cpus = online_cpus();
        let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
        assert_eq!(format_cpu_list(&cpus), text.trim());
    }

    proptest::proptest! {
        #[test]
        fn cpu_list_round_trip(mut v in proptest::collection::vec(0usize..512, 0..40)) {
            v.sort_unstable();
            v.dedup();
            let s = format_cpu_list(&v);
            if v.is_empty() {
                proptest::prop_assert!(parse_cpu_list(&s).is_err());
            } else {
                proptest::prop_assert_eq!(parse_cpu_list(&s).unwrap(), v);
            }
        }

        #[test]
        fn duration_accepts_only_numbers_with_a_unit(s in "\\PC{0,12}") {
            match parse_duration_ns(&s, Unit::Us) {
                Ok(v) => {
                    // Accepted: a number (then a unit) and it reads back the same in ns.
                    let t = s.trim();
                    proptest::prop_assert!(
                        t.starts_with(|c: char| c.is_ascii_digit() || c == '.'),
                        "{:?} accepted as {}", s, v
                    );
                    proptest::prop_assert_eq!(parse_duration_ns(&format!("{v}ns"), Unit::Us), Ok(v));
                }
                Err(e) => {
                    // Refused: one line that quotes the input.
                    let m = e.to_string();
                    let quoted = format!("'{s}'");
                    proptest::prop_assert!(m.contains(&quoted) && !m.contains('\n'), "{}", m);
                }
            }
        }

        #[test]
        fn duration_is_number_times_unit(
            n in 0u64..100_000,
            frac in 0u64..1000,
            k in 0usize..7,
        ) {
            let units = [("ns", Unit::Ns), ("us", Unit::Us), ("ms", Unit::Ms), ("s", Unit::S),
                         ("m", Unit::Min), ("h", Unit::H), ("d", Unit::D)];
            let (suffix, unit) = units[k];
            proptest::prop_assert_eq!(parse_duration_ns(&format!("{n}{suffix}"), Unit::Ns), Ok(n * unit.ns()));
            proptest::prop_assert_eq!(parse_duration_ns(&format!("{n}"), unit), Ok(n * unit.ns()));
            let want = n * unit.ns() + (frac * unit.ns() + 500) / 1000;
            proptest::prop_assert_eq!(
                parse_duration_ns(&format!(" {n}.{frac:03} {suffix}"), Unit::Ns), Ok(want));
            let negative = format!("-{n}{suffix}");
            proptest::prop_assert!(parse_duration_ns(&negative, Unit::Ns).is_err());
        }
    }
}
