//! The shape of a `cyclictest --json` document, read as a stream.
//!
//! A JSON tree (`serde_json::Value`) costs about a hundred bytes per histogram
//! bin (a `String` key, a `Value`, a map node), so a 145 MB file of 16
//! threads' histograms took over 2 GB. Here each thread's `histogram` object
//! is read entry by entry into `(bin, count)` pairs (16 bytes each), straight
//! from the file; every other field stays a `Value` (they are few and small).
//! Malformed entries are not an error of the JSON syntax: the first one is
//! kept as text, so the importer can name the thread and the bin.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// A value that is expected to be an object but may be anything.
#[derive(Debug)]
pub enum Obj<T> {
    Object(T),
    /// Something else (its JSON type, for the message).
    Not(&'static str),
}

/// The `thread` object: (name, thread) in the file's order.
pub type Threads = Vec<(String, Obj<Thread>)>;

/// The top level: the `thread` object apart, everything else as a tree.
#[derive(Debug, Default)]
pub struct Doc {
    pub fields: Map<String, Value>,
    /// `None`: no `thread` key.
    pub threads: Option<Obj<Threads>>,
}

/// One thread: its `histogram` apart, its other fields as a tree.
#[derive(Debug, Default)]
pub struct Thread {
    pub fields: Map<String, Value>,
    /// `None`: no `histogram` key.
    pub histogram: Option<Obj<Bins>>,
}

/// A histogram object's entries.
#[derive(Debug, Default)]
pub struct Bins {
    /// `(bin, count)` in the file's order.
    pub pairs: Vec<(u64, u64)>,
    /// The first malformed entry: a key that is not a bin number, or a count
    /// that is not a whole number (with what was found).
    pub bad: Option<String>,
}

/// Implements the visits of everything that is not an object as
/// `Obj::Not(type)`, so that a wrong type is reported by the importer with
/// its context instead of as a JSON syntax error.
macro_rules! not_an_object {
    () => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Obj::Not("a boolean"))
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Obj::Not("a number"))
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Obj::Not("a number"))
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Obj::Not("a number"))
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(Obj::Not("a string"))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Obj::Not("null"))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Obj::Not("an array"))
        }
    };
}

struct DocVisitor;

impl<'de> Visitor<'de> for DocVisitor {
    type Value = Obj<Doc>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a cyclictest JSON document")
    }

    not_an_object!();

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut doc = Doc::default();
        while let Some(k) = map.next_key::<String>()? {
            if k == "thread" {
                doc.threads = Some(map.next_value::<ThreadMap>()?.0);
            } else {
                let v = map.next_value::<Value>()?;
                doc.fields.insert(k, v);
            }
        }
        Ok(Obj::Object(doc))
    }
}

impl<'de> Deserialize<'de> for Obj<Doc> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DocVisitor)
    }
}

struct ThreadMap(Obj<Threads>);

struct ThreadMapVisitor;

impl<'de> Visitor<'de> for ThreadMapVisitor {
    type Value = Obj<Threads>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of threads")
    }

    not_an_object!();

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut v = Vec::new();
        while let Some(k) = map.next_key::<String>()? {
            v.push((k, map.next_value::<Obj<Thread>>()?));
        }
        Ok(Obj::Object(v))
    }
}

impl<'de> Deserialize<'de> for ThreadMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ThreadMapVisitor).map(ThreadMap)
    }
}

struct ThreadVisitor;

impl<'de> Visitor<'de> for ThreadVisitor {
    type Value = Obj<Thread>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a thread object")
    }

    not_an_object!();

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut t = Thread::default();
        while let Some(k) = map.next_key::<String>()? {
            if k == "histogram" {
                t.histogram = Some(map.next_value::<Obj<Bins>>()?);
            } else {
                let v = map.next_value::<Value>()?;
                t.fields.insert(k, v);
            }
        }
        Ok(Obj::Object(t))
    }
}

impl<'de> Deserialize<'de> for Obj<Thread> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ThreadVisitor)
    }
}

struct BinsVisitor;

impl<'de> Visitor<'de> for BinsVisitor {
    type Value = Obj<Bins>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a histogram object")
    }

    not_an_object!();

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut b = Bins::default();
        while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let v = map.next_value::<Value>()?;
            if b.bad.is_some() {
                continue;
            }
            let Ok(bin) = k.parse::<u64>() else {
                b.bad = Some(format!("histogram bin \"{k}\""));
                continue;
            };
            match whole(&v) {
                Some(c) => b.pairs.push((bin, c)),
                None => {
                    b.bad = Some(format!(
                        "histogram bin {bin}: expected a whole number, found {v}"
                    ))
                }
            }
        }
        Ok(Obj::Object(b))
    }
}

impl<'de> Deserialize<'de> for Obj<Bins> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(BinsVisitor)
    }
}

/// A non-negative whole number (also written as `5.0` or `5e3`).
pub fn whole(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < 1.8e19)
            .map(|f| f as u64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Obj<Doc> {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn histograms_become_pairs_and_other_fields_stay() {
        let Obj::Object(d) = parse(
            r#"{"cmdline:":"cyclictest -q","thread":{"0":{"cycles":3,"histogram":{"1":2,"7":1.0},"cpu":1}}}"#,
        ) else {
            panic!("an object")
        };
        assert_eq!(d.fields["cmdline:"], "cyclictest -q");
        let Some(Obj::Object(ts)) = d.threads else {
            panic!("threads")
        };
        assert_eq!(ts.len(), 1);
        let (name, Obj::Object(t)) = &ts[0] else {
            panic!("thread")
        };
        assert_eq!(name, "0");
        assert_eq!(t.fields["cycles"], 3);
        assert_eq!(t.fields["cpu"], 1);
        let Some(Obj::Object(h)) = &t.histogram else {
            panic!("histogram")
        };
        assert_eq!(h.pairs, vec![(1, 2), (7, 1)]);
        assert!(h.bad.is_none());
    }

    #[test]
    fn wrong_types_are_kept_for_the_message() {
        assert!(matches!(parse("[1,2]"), Obj::Not("an array")));
        let Obj::Object(d) = parse(r#"{"thread":{"0":5,"1":{"histogram":"x"}}}"#) else {
            panic!("an object")
        };
        let Some(Obj::Object(ts)) = d.threads else {
            panic!("threads")
        };
        assert!(matches!(ts[0].1, Obj::Not("a number")));
        let Obj::Object(t) = &ts[1].1 else {
            panic!("thread 1")
        };
        assert!(matches!(t.histogram, Some(Obj::Not("a string"))));
        let Obj::Object(d) = parse(r#"{"thread":null}"#) else {
            panic!("an object")
        };
        assert!(matches!(d.threads, Some(Obj::Not("null"))));
    }

    #[test]
    fn the_first_bad_entry_is_named() {
        let Obj::Object(d) = parse(r#"{"thread":{"0":{"histogram":{"1":1,"x":2,"3":-1}}}}"#) else {
            panic!("an object")
        };
        let Some(Obj::Object(ts)) = d.threads else {
            panic!("threads")
        };
        let Obj::Object(t) = &ts[0].1 else {
            panic!("thread")
        };
        let Some(Obj::Object(h)) = &t.histogram else {
            panic!("histogram")
        };
        assert_eq!(h.bad.as_deref(), Some("histogram bin \"x\""));
        assert_eq!(h.pairs, vec![(1, 1)]);
    }
}
