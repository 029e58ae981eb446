//! Field-less enums that users name on the command line and that documents
//! carry as strings (`fifo`, `absolute`, `monotonic`): one table of names per
//! enum gives `name()`, `Display`, `FromStr`, `ALL` and `NAMES`, so that the
//! CLI and the result document never keep a mirror of their own.

use std::fmt;

/// A name that is not one of an enum's names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    /// What was being named (`policy`, `wake method`, ...).
    pub what: &'static str,
    /// What was given.
    pub given: String,
    /// The valid names.
    pub valid: &'static [&'static str],
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown {} '{}' (one of: {})",
            self.what,
            self.given,
            self.valid.join(", ")
        )
    }
}

impl std::error::Error for UnknownName {}

/// `named_enum!(Type, "what", { Type::A => "a", Type::B => "b" })`.
#[macro_export]
macro_rules! named_enum {
    ($t:ty, $what:literal, { $($v:path => $n:literal),+ $(,)? }) => {
        impl $t {
            /// Every value, in table order.
            pub const ALL: &'static [$t] = &[$($v),+];
            /// Every name, in table order.
            pub const NAMES: &'static [&'static str] = &[$($n),+];
            /// The name users type and documents carry.
            pub fn name(self) -> &'static str {
                match self {
                    $($v => $n),+
                }
            }
        }
        impl ::std::fmt::Display for $t {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }
        impl ::std::str::FromStr for $t {
            type Err = $crate::named::UnknownName;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|v| v.name() == s)
                    .ok_or_else(|| $crate::named::UnknownName {
                        what: $what,
                        given: s.to_string(),
                        valid: Self::NAMES,
                    })
            }
        }
    };
}

/// The clock a periodic measurement sleeps on and reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MeasureClock {
    /// `CLOCK_MONOTONIC`.
    Monotonic,
    /// `CLOCK_REALTIME`.
    Realtime,
}

crate::named_enum!(MeasureClock, "clock", {
    MeasureClock::Monotonic => "monotonic",
    MeasureClock::Realtime => "realtime",
});

impl MeasureClock {
    /// The POSIX clock id.
    pub fn id(self) -> crate::sys::ClockId {
        match self {
            MeasureClock::Monotonic => libc::CLOCK_MONOTONIC,
            MeasureClock::Realtime => libc::CLOCK_REALTIME,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::MeasureClock;
    use crate::cyclic::WakeMethod;
    use crate::rt::Policy;

    #[test]
    fn clock_ids() {
        assert_eq!(MeasureClock::Monotonic.id(), libc::CLOCK_MONOTONIC);
        assert_eq!(MeasureClock::Realtime.id(), libc::CLOCK_REALTIME);
    }

    #[test]
    fn names_round_trip_and_match_serde() {
        for p in Policy::ALL {
            assert_eq!(p.name().parse::<Policy>().unwrap(), *p);
            assert_eq!(serde_json::to_value(p).unwrap(), p.name());
        }
        for w in WakeMethod::ALL {
            assert_eq!(w.to_string().parse::<WakeMethod>().unwrap(), *w);
            assert_eq!(serde_json::to_value(w).unwrap(), w.name());
        }
        for c in MeasureClock::ALL {
            assert_eq!(c.name().parse::<MeasureClock>().unwrap(), *c);
        }
        let e = "fifo2".parse::<Policy>().unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown policy 'fifo2' (one of: fifo, rr, other, batch, idle, deadline)"
        );
    }
}
