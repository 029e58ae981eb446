//! The `Host` check of the HTTP server (`--listen` and `rtscope serve`):
//! what stops a DNS-rebinding page from reading a server bound to loopback.
//!
//! A page on `http://evil.example/` whose name the attacker then points at
//! 127.0.0.1 can fetch `http://evil.example:8080/raw/...` from the victim's
//! browser and read the answer (same origin): the only trace of the attack
//! on the server's side is the `Host` header, which names the attacker's
//! domain. So:
//!
//! - **Loopback binds** (127.0.0.0/8, `::1`) answer only requests whose
//!   `Host` is a loopback name or address: `localhost` (and `*.localhost`,
//!   which browsers resolve to loopback themselves), `127.x.y.z`, `[::1]`,
//!   each with or without a port, and the names given with `--allow-host
//!   NAME` (an SSH tunnel's or a reverse proxy's name). Others get `421`.
//! - **Other binds** (`--listen-any`): the server is reachable by address
//!   from the network anyway. Without `--allow-host` every `Host` is
//!   answered (a dashboard may use any name of the board); with it, the
//!   check applies as on loopback, and any IP address literal is accepted
//!   too (a rebinding page cannot make a browser send one: its `Host` is
//!   always the attacker's name).
//!
//! A request without `Host` (HTTP/1.0 tools) is answered: browsers always
//! send one. A request target in absolute form (`GET http://h/ HTTP/1.1`)
//! is checked by its authority too.

use std::net::{IpAddr, SocketAddr};

use anyhow::Result;

use crate::error::usage;

/// The most `--allow-host` names.
pub const MAX_ALLOWED: usize = 32;

/// Which `Host` headers a server answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostCheck {
    /// Whether the check applies at all.
    on: bool,
    /// Any IP literal is accepted (non-loopback binds); else only loopback ones.
    any_ip: bool,
    /// `--allow-host` names, lower case, without a trailing dot.
    names: Vec<String>,
}

impl HostCheck {
    /// No check (tests of other things).
    pub fn off() -> Self {
        HostCheck {
            on: false,
            any_ip: true,
            names: vec![],
        }
    }

    /// The check for a server bound to `bound`, with the `--allow-host`
    /// names (checked with [`check_names`]).
    pub fn for_bind(bound: &SocketAddr, names: &[String]) -> Self {
        let loopback = bound.ip().is_loopback();
        HostCheck {
            on: loopback || !names.is_empty(),
            any_ip: !loopback,
            names: names
                .iter()
                .map(|n| allowed_host(n).unwrap_or_else(|| normal(n)))
                .collect(),
        }
    }

    /// Whether a request with these `Host` values (and this request
    /// target's authority, if it has one) is answered.
    pub fn allows(&self, hosts: &[&[u8]], authority: Option<&str>) -> bool {
        if !self.on {
            return true;
        }
        if hosts.len() > 1 {
            return false;
        }
        hosts
            .iter()
            .map(|h| std::str::from_utf8(h).ok())
            .chain(authority.map(Some))
            .all(|h| h.is_some_and(|h| self.allows_one(h)))
    }

    fn allows_one(&self, value: &str) -> bool {
        let Some(host) = host_part(value.trim()) else {
            return false;
        };
        let host = normal(host);
        if host == "localhost" || host.ends_with(".localhost") {
            return true;
        }
        let ip = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .map(|h| h.parse::<std::net::Ipv6Addr>().ok().map(IpAddr::V6))
            .unwrap_or_else(|| host.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4));
        if let Some(ip) = ip {
            let loopback = match ip {
                IpAddr::V4(a) => a.is_loopback(),
                IpAddr::V6(a) => {
                    a.is_loopback() || a.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
                }
            };
            return loopback || self.any_ip || self.names.contains(&host);
        }
        self.names.contains(&host)
    }
}

/// The host of a `Host` value (`name`, `name:port`, `[v6]`, `[v6]:port`);
/// `None` for what is none of these.
fn host_part(v: &str) -> Option<&str> {
    let port_ok = |p: &str| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit());
    if v.starts_with('[') {
        let end = v.find(']')?;
        let rest = &v[end + 1..];
        return (rest.is_empty() || rest.strip_prefix(':').is_some_and(port_ok))
            .then_some(&v[..=end]);
    }
    let host = match v.rsplit_once(':') {
        Some((h, p)) if port_ok(p) => h,
        Some(_) => return None,
        None => v,
    };
    (!host.is_empty()).then_some(host)
}

/// A name as compared: lower case, without a trailing dot.
fn normal(n: &str) -> String {
    n.trim_end_matches('.').to_ascii_lowercase()
}

/// Checks the `--allow-host` names: at most [`MAX_ALLOWED`], each a host
/// name or an IP address, optionally with a port (see [`allowed_host`]).
pub fn check_names(names: &[String]) -> Result<()> {
    if names.len() > MAX_ALLOWED {
        return Err(usage(format!(
            "--allow-host: at most {MAX_ALLOWED} names (got {})",
            names.len()
        )));
    }
    for n in names {
        if allowed_host(n).is_none() {
            let shown = crate::output::printable(n);
            return Err(usage(format!(
                "--allow-host '{shown}': not a host name or IP address (a name such as dash.example.org, 10.0.0.5 or [fd00::5], optionally with :PORT)"
            )));
        }
    }
    Ok(())
}

/// The host an `--allow-host` argument names, as compared (lower case,
/// no trailing dot, IPv6 in brackets), or `None` when it is none: a host
/// name of RFC 1123 labels (1 to 63 letters, digits and `-`, not starting
/// or ending with `-`, joined by `.`; one trailing `.`; at most 253 bytes;
/// the last label not all digits), an IPv4 address, or an IPv6 address
/// (bare or in brackets); then optionally `:PORT` (1 to 65535; an IPv6
/// address only in brackets). The port is not compared: a `Host` is
/// answered for its host whatever its port.
pub fn allowed_host(n: &str) -> Option<String> {
    if n.parse::<std::net::Ipv6Addr>().is_ok() {
        return Some(format!("[{}]", n.to_ascii_lowercase()));
    }
    let (host, port) = match n.strip_prefix('[') {
        Some(rest) => {
            let (v6, after) = rest.split_once(']')?;
            v6.parse::<std::net::Ipv6Addr>().ok()?;
            let port = match after {
                "" => None,
                a => Some(a.strip_prefix(':')?),
            };
            (&n[..v6.len() + 2], port)
        }
        None => match n.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (n, None),
        },
    };
    if let Some(p) = port {
        let ok = !p.is_empty()
            && p.bytes().all(|b| b.is_ascii_digit())
            && p.parse::<u16>().is_ok_and(|p| p > 0);
        if !ok {
            return None;
        }
    }
    if host.starts_with('[') || host.parse::<std::net::Ipv4Addr>().is_ok() {
        return Some(host.to_ascii_lowercase());
    }
    let name = host.strip_suffix('.').unwrap_or(host);
    let label_ok = |l: &str| {
        (1..=63).contains(&l.len())
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    let last_numeric = name
        .rsplit('.')
        .next()
        .is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit()));
    (name.len() <= 253 && name.split('.').all(label_ok) && !last_numeric)
        .then(|| name.to_ascii_lowercase())
}

/// The answer to a request whose `Host` is refused.
pub fn refused() -> super::http::Response {
    super::http::Response::text(
        421,
        "misdirected request: this server answers only its own host names (on a loopback address: localhost, 127.0.0.1, [::1]; add others with --allow-host NAME)\n",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback(names: &[&str]) -> HostCheck {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        HostCheck::for_bind(&"127.0.0.1:8080".parse().unwrap(), &names)
    }

    #[test]
    fn loopback_binds_answer_loopback_names_only() {
        let c = loopback(&[]);
        for ok in [
            "localhost",
            "localhost:8080",
            "LOCALHOST.",
            "app.localhost:1",
            "127.0.0.1",
            "127.0.0.1:8080",
            "127.5.6.7",
            "[::1]",
            "[::1]:8080",
            "[::ffff:127.0.0.1]:80",
        ] {
            assert!(c.allows(&[ok.as_bytes()], None), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8080",
            "localhost.evil.example",
            "10.0.0.1",
            "0.0.0.0:8080",
            "[2001:db8::1]:80",
            "127.0.0.1:80:80",
            "127.0.0.1:port",
            "[::1]x",
            "",
            ":8080",
        ] {
            assert!(!c.allows(&[bad.as_bytes()], None), "{bad}");
        }
        assert!(!c.allows(&[b"\xff"], None));
        // Two Host headers; an absolute target naming another host.
        assert!(!c.allows(&[b"localhost", b"evil.example"], None));
        assert!(!c.allows(&[b"localhost"], Some("evil.example")));
        // No Host at all (HTTP/1.0 tools): answered.
        assert!(c.allows(&[], None));
        let named = loopback(&["Dash.Example.org."]);
        assert!(named.allows(&[b"dash.example.org:443"], None));
        assert!(!named.allows(&[b"other.example.org"], None));
        assert!(!named.allows(&[b"10.0.0.1"], None));
    }

    #[test]
    fn other_binds_check_only_when_names_are_given() {
        let any: SocketAddr = "0.0.0.0:9464".parse().unwrap();
        let open = HostCheck::for_bind(&any, &[]);
        assert!(open.allows(&[b"evil.example"], None));
        let named = HostCheck::for_bind(&any, &["board-7.lab".into()]);
        assert!(named.allows(&[b"board-7.lab:9464"], None));
        assert!(named.allows(&[b"10.1.2.3:9464"], None));
        assert!(named.allows(&[b"[fd00::5]:9464"], None));
        assert!(named.allows(&[b"localhost"], None));
        assert!(!named.allows(&[b"evil.example"], None));
        assert!(HostCheck::off().allows(&[b"x", b"y"], None));
    }

    #[test]
    fn allow_host_names_are_checked() {
        let ok: Vec<String> = ["a.example", "10.0.0.1", "::1", "[::1]", "x-y"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert!(check_names(&ok).is_ok());
        for bad in ["", "a b", "a/b", &"x".repeat(254), &"y".repeat(64)] {
            assert!(check_names(&[bad.to_string()]).is_err(), "{bad}");
        }
        let many: Vec<String> = (0..=MAX_ALLOWED).map(|i| format!("h{i}")).collect();
        assert!(check_names(&many).is_err());
    }

    /// Host names of RFC 1123 labels and IP addresses, each optionally with
    /// a port; nothing else.
    #[test]
    fn allow_host_takes_names_and_addresses_with_a_port() {
        let label = "l".repeat(63);
        let long = [label.as_str(); 4].join(".");
        assert_eq!(long.len(), 255);
        let max = format!("{}.{}", &long[..189], "ab");
        assert_eq!(max.len(), 192);
        for (arg, host) in [
            ("Dash.Example.org", "dash.example.org"),
            ("dash.example.org.", "dash.example.org"),
            ("dash.example.org:8443", "dash.example.org"),
            ("board-7", "board-7"),
            ("7board", "7board"),
            ("10.0.0.5", "10.0.0.5"),
            ("10.0.0.5:9464", "10.0.0.5"),
            ("fd00::5", "[fd00::5]"),
            ("[fd00::5]", "[fd00::5]"),
            ("[fd00::5]:9464", "[fd00::5]"),
            (label.as_str(), label.as_str()),
            (max.as_str(), max.as_str()),
        ] {
            assert_eq!(allowed_host(arg).as_deref(), Some(host), "{arg}");
        }
        let too_long = format!("{}.{}", &long[..250], "abc");
        for bad in [
            "",
            " ",
            "a b",
            " a",
            "*",
            "*.example.org",
            "http://x",
            "x/",
            "a\nb",
            "a\tb",
            "a\u{7f}",
            "\u{e9}t\u{e9}.example",
            ".",
            "..",
            ".a",
            "a..b",
            "-a",
            "a-",
            "a.-b.c",
            "a_b",
            "a:",
            "a:0",
            "a:65536",
            "a:80:80",
            "a:8o",
            ":80",
            "[::1",
            "[::1]x",
            "[::1]:",
            "[a.example]",
            "fd00::5:99999:x",
            "fe80::1%eth0",
            "1.2.3.999",
            "1.2.3",
            "12345",
            too_long.as_str(),
            &"y".repeat(64),
        ] {
            assert_eq!(allowed_host(bad), None, "{bad:?}");
            assert!(check_names(&[bad.to_string()]).is_err(), "{bad:?}");
        }
        // A name given with a port answers for its host at any port.
        let c = loopback(&["dash.example.org:8443", "[fd00::5]"]);
        assert!(c.allows(&[b"dash.example.org"], None));
        assert!(c.allows(&[b"DASH.example.org:80"], None));
        assert!(c.allows(&[b"[fd00::5]:8080"], None));
        assert!(!c.allows(&[b"[fd00::6]:8080"], None));
    }
}
