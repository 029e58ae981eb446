//! `--redact` (report, compare, serve): a result document stripped of what
//! identifies the machine and its people before it is shared. The host
//! name and the kernel command line (which holds addresses, device serials,
//! root UUIDs) are replaced whole; in every other string of the document
//! (command line, plan, warnings, attributes, loads) the host name, the user
//! name of a home directory (`/home/NAME/`, `/Users/NAME/`) and IP addresses
//! (v4, and v6 written with at least three colons) are replaced.

use rtscope_core::result::ResultDocument;

/// What a redacted value reads.
pub const REDACTED: &str = "(redacted)";

/// The names one document's strings are searched for.
#[derive(Debug, Clone, Default)]
struct Secrets {
    host: Option<String>,
}

/// `doc` with the identifying fields replaced (see the module).
pub fn document(doc: &ResultDocument) -> ResultDocument {
    let secrets = Secrets {
        host: doc
            .system
            .hostname
            .clone()
            .filter(|h| !h.is_empty() && h != REDACTED),
    };
    let mut d = doc.clone();
    if d.system.hostname.is_some() {
        d.system.hostname = Some(REDACTED.into());
    }
    if d.system.cmdline.is_some() {
        d.system.cmdline = Some(REDACTED.into());
    }
    // Every other string, through the JSON form (the document's fields
    // are plain data; what does not round-trip is left as it was).
    if let Ok(mut v) = serde_json::to_value(&d) {
        walk(&mut v, &secrets);
        if let Ok(back) = serde_json::from_value::<ResultDocument>(v) {
            d = back;
        }
    }
    d
}

fn walk(v: &mut serde_json::Value, s: &Secrets) {
    use serde_json::Value as V;
    match v {
        V::String(x) => *x = redact_text(x, s.host.as_deref()),
        V::Array(a) => a.iter_mut().for_each(|x| walk(x, s)),
        V::Object(o) => o.values_mut().for_each(|x| walk(x, s)),
        _ => {}
    }
}

/// A path or file name as shown on a page: home directories' user names out.
pub fn path_text(p: &str) -> String {
    redact_text(p, None)
}

/// `text` with the host name, home directories' user names and IP
/// addresses replaced.
pub fn redact_text(text: &str, host: Option<&str>) -> String {
    let mut t = text.to_string();
    if let Some(h) = host {
        t = replace_word(&t, h, "(host)");
    }
    for home in ["/home/", "/Users/"] {
        let mut out = String::new();
        let mut rest = t.as_str();
        while let Some(i) = rest.find(home) {
            out.push_str(&rest[..i + home.len()]);
            rest = &rest[i + home.len()..];
            let end = rest.find(['/', ' ', '\'', '"']).unwrap_or(rest.len());
            if end > 0 {
                out.push_str("(user)");
            }
            rest = &rest[end..];
        }
        out.push_str(rest);
        t = out;
    }
    addresses(&t)
}

/// `text` with each whole-word `word` replaced (a host named `vm` leaves
/// `kvm-clock` alone).
fn replace_word(text: &str, word: &str, with: &str) -> String {
    let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_');
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(word) {
        let before = if i == 0 {
            out.chars().last()
        } else {
            rest[..i].chars().last()
        };
        let after = rest[i + word.len()..].chars().next();
        out.push_str(&rest[..i]);
        if part(before) || part(after) {
            out.push_str(word);
        } else {
            out.push_str(with);
        }
        rest = &rest[i + word.len()..];
    }
    out.push_str(rest);
    out
}

/// IPv4 (`10.1.2.3`) and IPv6 (three or more colons between hex digits)
/// addresses replaced by `(address)`.
fn addresses(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    let chars: Vec<char> = t.chars().collect();
    let mut i = 0;
    let is_tok = |c: char| c.is_ascii_hexdigit() || c == '.' || c == ':';
    while i < chars.len() {
        let boundary = i == 0 || !(chars[i - 1].is_ascii_alphanumeric() || chars[i - 1] == '.');
        if boundary && is_tok(chars[i]) {
            let mut j = i;
            while j < chars.len() && is_tok(chars[j]) {
                j += 1;
            }
            let tok: String = chars[i..j].iter().collect();
            let tok_trim = tok.trim_end_matches(['.', ':']);
            let after_ok = j == chars.len() || !chars[j].is_ascii_alphanumeric();
            if after_ok && (is_ipv4(tok_trim) || is_ipv6(tok_trim)) {
                out.push_str("(address)");
                out.push_str(&tok[tok_trim.len()..]);
                i = j;
                continue;
            }
            out.push_str(&tok);
            i = j;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

fn is_ipv4(s: &str) -> bool {
    // `a.b.c.d`, or `a.b.c.d:port`.
    let host = s.split(':').next().unwrap_or(s);
    let parts: Vec<&str> = host.split('.').collect();
    parts.len() == 4
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 3 && p.parse::<u16>().is_ok_and(|n| n <= 255))
        && (host.len() == s.len() || s[host.len() + 1..].parse::<u16>().is_ok())
}

fn is_ipv6(s: &str) -> bool {
    s.matches(':').count() >= 3
        && s.chars().any(|c| c.is_ascii_hexdigit())
        && s.parse::<std::net::Ipv6Addr>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts() {
        assert_eq!(
            redact_text("/home/alice/runs/a.json on box7", Some("box7")),
            "/home/(user)/runs/a.json on (host)"
        );
        assert_eq!(redact_text("/Users/bob", None), "/Users/(user)");
        assert_eq!(
            redact_text("vm: tsc kvm-clock vm2 vm, my-vm (vm)", Some("vm")),
            "(host): tsc kvm-clock vm2 (host), my-vm ((host))"
        );
        assert_eq!(redact_text("/home/", None), "/home/");
        assert_eq!(
            redact_text("peer 192.168.1.20:9000, ip=10.0.0.1.", None),
            "peer (address), ip=(address)."
        );
        assert_eq!(
            redact_text("addr fe80::1:2:3 and ::1", None),
            "addr (address) and ::1"
        );
        // Not addresses: versions, durations, times, CPU lists.
        for keep in [
            "rtscope 0.1.0",
            "1.2.3.4.5",
            "kernel 6.18.44-fc",
            "12:30:45",
            "999.1.1.1",
            "cpus 0-3",
            "v1.2.3.4x",
        ] {
            assert_eq!(redact_text(keep, None), keep);
        }
    }

    #[test]
    fn documents() {
        let mut d = ResultDocument::new(
            "cyclic",
            serde_json::json!({"json": "/home/carol/out.json", "peer": "10.1.2.3"}),
            Default::default(),
            vec![],
        );
        d.system.hostname = Some("lab-box-7".into());
        d.system.cmdline = Some("root=UUID=1234 ip=10.9.9.9".into());
        d.command_line = vec![
            "rtscope".into(),
            "--json".into(),
            "/home/carol/out.json".into(),
        ];
        d.warnings = vec!["lab-box-7 is busy".into()];
        let r = document(&d);
        let text = String::from_utf8(r.to_json()).unwrap();
        for gone in ["lab-box-7", "carol", "10.1.2.3", "10.9.9.9", "UUID=1234"] {
            assert!(!text.contains(gone), "{gone} in {text}");
        }
        assert_eq!(r.system.hostname.as_deref(), Some(REDACTED));
        assert_eq!(r.system.cmdline.as_deref(), Some(REDACTED));
        assert_eq!(r.warnings, ["(host) is busy"]);
        assert_eq!(r.command_line[2], "/home/(user)/out.json");
        // Absent stays absent.
        let r = document(&ResultDocument::new(
            "x",
            serde_json::json!({}),
            Default::default(),
            vec![],
        ));
        assert_eq!(r.system.hostname, None);
        assert_eq!(r.system.cmdline, None);
    }

    // Tests written against the mutants cargo-mutants left (docs/testing.md).

    #[test]
    fn paths_lose_the_user_name_only() {
        assert_eq!(
            path_text("/home/alice/runs/box7.json"),
            "/home/(user)/runs/box7.json"
        );
        assert_eq!(path_text("runs/a.json"), "runs/a.json");
    }

    #[test]
    fn whole_words_only() {
        // Back to back: neither is a word of its own.
        assert_eq!(redact_text("vmvm", Some("vm")), "vmvm");
        assert_eq!(redact_text("a-vmvm vm", Some("vm")), "a-vmvm (host)");
        assert_eq!(
            redact_text("vm_x x_vm vm.x", Some("vm")),
            "vm_x x_vm (host).x"
        );
    }

    #[test]
    fn home_directories_end_at_a_slash_space_or_quote() {
        assert_eq!(
            redact_text("'/home/dave' \"/Users/eve\" /home/fay x", None),
            "'/home/(user)' \"/Users/(user)\" /home/(user) x"
        );
        // No name between the slashes: nothing to hide.
        assert_eq!(redact_text("/home//x", None), "/home//x");
    }

    #[test]
    fn addresses_at_their_edges() {
        for (text, want) in [
            ("10.0.0.100", "(address)"),
            ("10.0.0.255", "(address)"),
            ("at 10.0.0.1:65535", "at (address)"),
            ("fe80::1:2", "(address)"),
            // Not addresses: a part over 255 or of four digits, IPv6 with
            // two colons (as a time has), a port over 65535, a token
            // inside a word.
            ("10.0.0.256", "10.0.0.256"),
            ("fe80::1", "fe80::1"),
            ("0001.2.3.4", "0001.2.3.4"),
            ("10.0.0.1:65536", "10.0.0.1:65536"),
            ("a10.0.0.1", "a10.0.0.1"),
            ("x10.0.0.1", "x10.0.0.1"),
            ("(.10.0.0.1)", "(.10.0.0.1)"),
            ("10.0.0.1z", "10.0.0.1z"),
        ] {
            assert_eq!(redact_text(text, None), want, "{text}");
        }
    }

    #[test]
    fn redacting_twice_changes_nothing_more() {
        let mut d =
            ResultDocument::new("cyclic", serde_json::json!({}), Default::default(), vec![]);
        d.system.hostname = Some("box".into());
        d.warnings = vec!["box: 10.0.0.1".into()];
        let once = document(&d);
        assert_eq!(once.warnings, ["(host): (address)"]);
        assert_eq!(document(&once), once);
        assert_eq!(once.system.hostname.as_deref(), Some(REDACTED));
        // An empty host name is no name to look for.
        d.system.hostname = Some(String::new());
        let r = document(&d);
        assert_eq!(r.warnings, ["box: (address)"]);
    }
}
