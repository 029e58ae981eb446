//! `--redact` (report, compare, serve): a result document stripped of what
//! identifies the machine and its people before it is shared (the lists in
//! full: docs/report.md, "Redaction"). The host name and the kernel command
//! line are replaced whole. In every other string of the document, its
//! keys, the run names and the paths shown, these are replaced: the host
//! name in any case (and the first label of a dotted one) as `(host)`, or
//! `(host 1)`, `(host 2)` in order of first appearance where the runs come
//! from several hosts; a user's name (`/home/NAME/`, `~NAME/`, `user=NAME`);
//! e-mail, MAC and IP (v4, v6) addresses; device serial numbers, disk ids
//! and file system ids (`(serial)`, `(uuid)`). A host name or address
//! ends at `_` as at `-` or `.` (`nic_db1_10.9.8.7`, `edge01_run.json`).
//!
//! A name that is one of the tool's own words ([`TOOL_WORDS`]: a host named
//! `thread`, `all`, `rt`, `cpu` or `p99`) would, replaced wherever it is a
//! word, mangle the document (the `all` series, the `thread` attribute).
//! Such a name is replaced only where it identifies: in run names, file
//! names and paths shown (every whole word); in a document's strings where
//! it is the whole value under a key that names a host or user (`host`,
//! `node`, `allow_hosts`, `user`, `owner`, `peer`, `server`) or the
//! argument after such an option (`--allow-host thread`), a word of a path
//! (not under `/sys/`, `/proc/`, `/dev/`, `/run/`) or of a file name, a
//! URL's host, either side of an `@`, after `host=`, `node=`, `user=` and
//! the like, or a `NAME:PORT` of its own. Object keys never lose such a
//! name, and `_` joins it to a word (`thread_count`).
//!
//! A [`Redactor`] learns the names to look for from every document and path
//! it is shown and then redacts texts and documents; [`runs`] does both for
//! the runs of one report or comparison, so one run's file name loses
//! another's host name. `serve --redact` numbers hosts once per server
//! process and links to files by [`alias`], a name keyed with a random key
//! per process, so the file names leave no trace in the pages.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::path::Path;
use std::sync::OnceLock;

use rtscope_core::result::ResultDocument;

use super::Run;

/// What a redacted value reads.
pub const REDACTED: &str = "(redacted)";

/// The names texts are searched for (as whole words, in any case).
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    hosts: Vec<String>,
    users: Vec<String>,
    /// Directories whose path reads `DIR` (the one `serve` serves).
    dirs: Vec<String>,
    /// Each host name (lower case) and its host's number, in order of
    /// first appearance: `(host 1)`, `(host 2)` where there are several.
    ids: Vec<(String, usize)>,
}

impl Redactor {
    /// Learns the host name of `doc` and the user names of the home
    /// directories in any of its strings.
    pub fn learn(&mut self, doc: &ResultDocument) {
        if let Some(h) = doc.system.hostname.as_deref() {
            self.learn_host(h);
        }
        if let Ok(v) = serde_json::to_value(doc) {
            self.learn_value(&v);
        }
    }

    /// Learns the user names in `p`: of home directories (`/home/NAME`,
    /// `~NAME/`) and after `user=`, `USER=`, `user: `, `owner=`, `owner: `.
    pub fn learn_path(&mut self, p: &str) {
        for home in [
            "/home/", "/Users/", "~", "user=", "USER=", "user: ", "owner=", "owner: ",
        ] {
            let mut at = 0;
            while let Some(i) = p[at..].find(home).map(|i| i + at) {
                at = i + home.len();
                let end = p[at..].find(HOME_END).map_or(p.len(), |e| e + at);
                let name = &p[at..end];
                // Past `~` or `user=`, a name (a letter first) that starts a
                // word: `~carol/`, not `~5 ms` or `a~b`.
                let word = !p[..i].ends_with(char::is_alphanumeric)
                    && name.starts_with(|c: char| c.is_ascii_alphabetic())
                    && name
                        .chars()
                        .all(|c| c.is_alphanumeric() || "._-".contains(c))
                    && (home != "~" || p[end..].starts_with('/'));
                if home.starts_with('/') || word {
                    add(&mut self.users, name);
                }
                at = end;
            }
        }
    }

    /// Learns a directory whose path (and what is under it) is written
    /// `DIR`, and the user names in it: the directory `serve` serves. The
    /// root and a directory right under it are too short to hide.
    pub fn learn_dir(&mut self, dir: &Path) {
        let d = dir.display().to_string();
        let d = d.trim_end_matches('/');
        self.learn_path(d);
        if d.split('/').filter(|c| !c.is_empty()).count() >= 2 {
            add(&mut self.dirs, d);
        }
    }

    fn learn_host(&mut self, h: &str) {
        let h = h.trim();
        if h == REDACTED || h.eq_ignore_ascii_case("localhost") {
            return;
        }
        // `prod-db-17.example.com` is also written `prod-db-17`.
        let first = h
            .split_once('.')
            .map(|(f, _)| f)
            .filter(|f| f.parse::<u32>().is_err());
        let id = self.id(h).or_else(|| first.and_then(|f| self.id(f)));
        let id = id.unwrap_or(self.count() + 1);
        for n in std::iter::once(h).chain(first) {
            add(&mut self.hosts, n);
            if self.id(n).is_none() {
                self.ids.push((n.to_ascii_lowercase(), id));
            }
        }
    }

    /// How many hosts are known.
    fn count(&self) -> usize {
        self.ids.iter().map(|&(_, id)| id).max().unwrap_or(0)
    }

    /// The number of the host named `name`.
    fn id(&self, name: &str) -> Option<usize> {
        let n = name.to_ascii_lowercase();
        self.ids.iter().find(|(k, _)| *k == n).map(|&(_, id)| id)
    }

    /// What the host name `name` reads: `(host)` where one host is known,
    /// `(host N)` where several are.
    fn host_label(&self, name: &str) -> String {
        match self.id(name) {
            Some(id) if self.count() > 1 => format!("(host {id})"),
            _ => "(host)".into(),
        }
    }

    /// The host names learned, one per host, in order of first appearance.
    fn host_names(&self) -> Vec<String> {
        let first = |id| self.ids.iter().find(|(_, i)| *i == id);
        (1..=self.count())
            .filter_map(|id| Some(first(id)?.0.clone()))
            .collect()
    }

    fn learn_value(&mut self, v: &serde_json::Value) {
        use serde_json::Value as V;
        match v {
            V::String(s) => self.learn_path(s),
            V::Array(a) => a.iter().for_each(|x| self.learn_value(x)),
            V::Object(o) => o.iter().for_each(|(k, x)| {
                self.learn_path(k);
                self.learn_value(x);
            }),
            _ => {}
        }
    }

    /// `text` (a string of a document: an argument, a warning, a plan's
    /// value) with the learned names, home directories' user names, e-mail,
    /// MAC and IP addresses replaced; a name that is one of the tool's own
    /// words only where it identifies (see the module).
    pub fn text(&self, text: &str) -> String {
        self.redact(text, Place::Named)
    }

    /// `text` that names a run or a file (a run's name, a path, a file
    /// name, a directory name): every learned name replaced wherever it is
    /// a whole word, a word of the tool's or not.
    pub fn identity(&self, text: &str) -> String {
        self.redact(text, Place::Identity)
    }

    fn redact(&self, text: &str, place: Place) -> String {
        let mut t = text.to_string();
        for d in &self.dirs {
            t = replace_dir(&t, d);
        }
        t = emails(&t);
        t = addresses(&t);
        t = serials(&t);
        let names = (self.hosts.iter().map(|n| (n, self.host_label(n), true)))
            .chain(self.users.iter().map(|n| (n, "(user)".to_string(), false)));
        for (name, with, host) in names {
            let with = with.as_str();
            // A host name's word ends at `_` too (`nic_db1_eth0`), unless
            // it is one of the tool's words (`thread_count`).
            let joins = !host || tool_word(name);
            t = match place {
                Place::Identity => replace_word(&t, name, with, joins),
                _ if !tool_word(name) => replace_word(&t, name, with, joins),
                Place::Key => t,
                Place::Value => replace_identifying(&t, name, with, false),
                Place::Named => replace_identifying(&t, name, with, true),
            };
        }
        homes(&t)
    }

    /// `doc` with the host name and the kernel command line replaced whole
    /// and every other string and object key through [`text`](Self::text).
    pub fn document(&self, doc: &ResultDocument) -> ResultDocument {
        let mut d = doc.clone();
        if d.system.hostname.is_some() {
            d.system.hostname = Some(REDACTED.into());
        }
        if d.system.cmdline.is_some() {
            d.system.cmdline = Some(REDACTED.into());
        }
        // Every other string and key, through the JSON form. Where that no
        // longer reads back (a name like an enum's value, `loops`), each
        // top-level field is taken redacted where it reads back.
        let Ok(orig) = serde_json::to_value(&d) else {
            return d;
        };
        let mut red = orig.clone();
        self.walk(&mut red, Place::Value);
        if let Ok(back) = serde_json::from_value::<ResultDocument>(red.clone()) {
            return back;
        }
        let (Some(fields), serde_json::Value::Object(mut kept)) = (red.as_object(), orig) else {
            return d;
        };
        for (k, v) in fields {
            let was = kept.insert(k.clone(), v.clone());
            let back = serde_json::from_value::<ResultDocument>(kept.clone().into());
            if let (Err(_), Some(was)) = (back, was) {
                kept.insert(k.clone(), was);
            }
        }
        serde_json::from_value(serde_json::Value::Object(kept)).unwrap_or(d)
    }

    /// Redacts the strings and keys of `v`, whose strings are of `place`.
    fn walk(&self, v: &mut serde_json::Value, place: Place) {
        use serde_json::Value as V;
        match v {
            V::String(x) => *x = self.redact(x, place),
            V::Array(a) => a.iter_mut().for_each(|x| self.walk(x, place)),
            V::Object(o) => {
                let old = std::mem::take(o);
                for (k, mut x) in old {
                    // A value named a serial number or UUID, whole.
                    let lk = k.to_ascii_lowercase();
                    let id = if lk.contains("serial") || lk == "wwn" {
                        Some("(serial)")
                    } else {
                        lk.contains("uuid").then_some("(uuid)")
                    };
                    if let (Some(with), V::String(s)) = (id, &mut x) {
                        if !s.is_empty() {
                            *s = with.into();
                        }
                    }
                    // Under a key that names a host or user, a value that
                    // is only the name is the name.
                    match (&mut x, k.as_str()) {
                        (V::Array(args), "command_line") => self.arguments(args),
                        _ if names_someone(&k) => self.walk(&mut x, Place::Named),
                        _ => self.walk(&mut x, Place::Value),
                    }
                    let k = self.redact(&k, Place::Key);
                    // Two keys that redact alike: the later gets a number.
                    let mut key = k.clone();
                    let mut n = 2;
                    while o.contains_key(&key) {
                        key = format!("{k} ({n})");
                        n += 1;
                    }
                    o.insert(key, x);
                }
            }
            _ => {}
        }
    }

    /// The command line's arguments: the one after an option that names a
    /// host or user (`--allow-host NAME`) is taken as a name.
    fn arguments(&self, args: &mut [serde_json::Value]) {
        let mut named = false;
        for a in args {
            let next = a
                .as_str()
                .is_some_and(|s| s.starts_with('-') && !s.contains('=') && names_someone(s));
            self.walk(a, if named { Place::Named } else { Place::Value });
            named = next;
        }
    }
}

/// Whether a key or option names a host or user (`hostname`, `node`,
/// `allow_hosts`, `--allow-host`, `user`, `owner`, `peer`, `server`).
fn names_someone(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    let words = "host node user owner peer server machine";
    words.split_whitespace().any(|w| k.contains(w))
}

/// Where a string stands in a document, which decides how a name that is
/// one of the tool's own words ([`tool_word`]) is looked for in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// A run's or file's name, a path: every name, as a whole word.
    Identity,
    /// A value under a key that names a host or user, an argument after
    /// such an option, a text outside a document: such a name where it
    /// identifies, and a value that is only the name.
    Named,
    /// Any other value: such a name only where it identifies.
    Value,
    /// An object key (a schema, attribute or counter name): never.
    Key,
}

/// Adds `name` to `names` unless it is empty or known (in any case).
fn add(names: &mut Vec<String>, name: &str) {
    if !name.is_empty() && !names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
        names.push(name.to_string());
        // The longest first, so `prod-db-17.lab` goes before `prod-db-17`.
        names.sort_by_key(|n| std::cmp::Reverse(n.len()));
    }
}

/// Where a home directory's user name ends.
const HOME_END: [char; 6] = ['/', ' ', '\'', '"', ':', ','];

/// `doc` with the identifying fields replaced (see the module).
pub fn document(doc: &ResultDocument) -> ResultDocument {
    let mut r = Redactor::default();
    r.learn(doc);
    r.document(doc)
}

/// The runs of one report or comparison redacted together: names learned
/// from every document and path, then every document, run name and path
/// redacted with all of them. Returns the redactor, for other texts about
/// these runs.
pub fn runs(runs: &mut [Run]) -> Redactor {
    let mut r = Redactor::default();
    learn_runs(&mut r, runs);
    redact_with(&r, runs);
    r
}

/// [`runs`] of the directory `serve` serves: its path written `DIR`.
pub fn served_runs(runs: &mut [Run], dir: &Path) -> Redactor {
    let mut r = served_redactor(dir);
    learn_runs(&mut r, runs);
    remember(&r);
    redact_with(&r, runs);
    r
}

/// Teaches `r` the names in `runs`' documents, paths and names.
pub fn learn_runs(r: &mut Redactor, runs: &[Run]) {
    for run in runs {
        r.learn(&run.doc);
        r.learn_path(&run.path.display().to_string());
        r.learn_path(&run.name);
    }
}

/// `runs`' documents, paths and names redacted by `r` (which has learned
/// them, [`learn_runs`]).
pub fn redact_with(r: &Redactor, runs: &mut [Run]) {
    for run in runs {
        run.doc = r.document(&run.doc);
        run.path = r.identity(&run.path.display().to_string()).into();
        run.name = r.identity(&run.name);
    }
}

/// The host names `serve --redact` has seen, in order: a host keeps its
/// number (`(host 2)`) on every page of one server process.
static SERVED_HOSTS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// A redactor for `serve`: the hosts seen before, in order, and `dir`.
fn served_redactor(dir: &Path) -> Redactor {
    let mut r = Redactor::default();
    if let Ok(hosts) = SERVED_HOSTS.lock() {
        hosts.iter().for_each(|h| r.learn_host(h));
    }
    r.learn_dir(dir);
    r
}

/// Keeps the hosts `r` knows (after those seen before) for the next page.
fn remember(r: &Redactor) {
    if let Ok(mut hosts) = SERVED_HOSTS.lock() {
        for h in r.host_names() {
            if !hosts.contains(&h) {
                hosts.push(h);
            }
        }
    }
}

/// A served document and its file name redacted together (the name may
/// carry the host name), with the served `dir`'s path written `DIR` and
/// the user names in it.
pub fn served(doc: &ResultDocument, name: &str, dir: &Path) -> (ResultDocument, String) {
    let mut r = served_redactor(dir);
    r.learn(doc);
    remember(&r);
    (r.document(doc), r.identity(name))
}

/// A served document redacted, the served `dir`'s path written `DIR`.
pub fn served_document(doc: &ResultDocument, dir: &Path) -> ResultDocument {
    served(doc, "", dir).0
}

/// `text` with each `dir` (a path, or the start of one: `DIR/a.json`)
/// written `DIR`; `/srv/lab` leaves `/srv/lab2` alone.
fn replace_dir(text: &str, dir: &str) -> String {
    let mut out = String::new();
    let mut at = 0;
    while let Some(i) = text[at..].find(dir).map(|i| i + at) {
        let e = i + dir.len();
        let goes_on = text[e..]
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || "._-".contains(c));
        out.push_str(&text[at..i]);
        out.push_str(if goes_on { dir } else { "DIR" });
        at = e;
    }
    out.push_str(&text[at..]);
    out
}

/// An error about the served file `p` with its path replaced by the file's
/// [`alias`] (the path holds the served directory, the name the host).
pub fn served_error(message: &str, p: &Path) -> String {
    let name = p
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into());
    let shown = message.replace(&p.display().to_string(), &alias(&name));
    let mut r = Redactor::default();
    r.learn_path(&p.display().to_string());
    r.text(&shown)
}

/// The name `serve --redact` links to the file `name` by: `r-` and 16 hex
/// digits of a hash keyed with a key drawn once per process, so the name
/// cannot be guessed back from a list of host names.
pub fn alias(name: &str) -> String {
    static KEY: OnceLock<RandomState> = OnceLock::new();
    format!(
        "r-{:016x}.json",
        KEY.get_or_init(RandomState::new).hash_one(name)
    )
}

/// The file in `dir` whose [`alias`] is `alias`.
pub fn unalias(dir: &Path, alias_name: &str) -> Option<String> {
    if !alias_name.starts_with("r-") {
        return None;
    }
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .find(|n| alias(n) == alias_name)
}

/// `text` with each `/home/NAME` and `/Users/NAME` user name replaced.
fn homes(text: &str) -> String {
    let mut t = text.to_string();
    for home in ["/home/", "/Users/"] {
        let mut out = String::new();
        let mut rest = t.as_str();
        while let Some(i) = rest.find(home) {
            out.push_str(&rest[..i + home.len()]);
            rest = &rest[i + home.len()..];
            let end = rest.find(HOME_END).unwrap_or(rest.len());
            if end > 0 {
                out.push_str("(user)");
            }
            rest = &rest[end..];
        }
        out.push_str(rest);
        t = out;
    }
    t
}

/// The tool's own words: the words of the result schema's keys and enum
/// values, of the attribute and counter names the experiments write, of
/// series labels, units and percentiles, and the short words of its prose.
/// A host or user name that is one of them (`thread`, `all`, `rt`, `cpu`,
/// `p99`) is looked for only where it identifies (see the module). Sorted,
/// separated by spaces.
const TOOL_WORDS: &str = "\
    a above absolute accuracy achieved acpi_pm actual adaptive address all alternating an and \
    any api apis arch are armed as assumed at attributes auto available avg batch be beacon \
    before behind below best better between bits block blocks boottime both break buckets \
    budget budgets buffer busy by cache calibration capacity cause causes checked checkpoint \
    checks chip clock clocks clocksource clocksources cmdline comm command compare \
    compensation compensations condvar consecutive context core cores corrected cost count \
    counter counters counts cpu cpumask cpus cycles cyclic cyclictest deadline default delay \
    delays design device differences digits disk distance dl dma drive dropped duration \
    dynamic each early edge enabled end ended entries environment episode episodes epoll error \
    errors euid event eventfd events every evidence exceeded exit expanded experiment expires \
    fail failed fair falling fell fifo first flags for found frequency from full futex gap \
    gaps gate gates get ghz governors hardirq hardware held highest histogram host hostname \
    hpet hwlat hybrid hypervisor hz idle if imported in incomplete index inner instance \
    instances interrupted interrupts interval intervals io ioctl ipc irq irqs is isolcpus it \
    iteration iterations joined json kb kernel khz kind label last latency length level \
    lifetime limit line live load loads local localhost log loop loops lost lowest max mean \
    measures mechanism median memory method mhz min missing mlocked mode model monotonic \
    mounted ms mutex name nanosleep negative net network new next nmi no nocbs nohz noise none \
    nonpreemptible nort not ns nsecs objects observed of off offset ok old on online op or \
    order origin other outer outliers outranked overflows overrun overruns p50 p90 p95 p99 \
    p999 p9999 packets pages pair pairs params pass passed pattern pct per percent period \
    periods pid pie pipe plan points policies policy poll posix preempt preemption prio \
    priority range raw rcu read reads realtime reason received receiver recovered relative \
    release remedy repeat repetitions report reports requested resolution restored result \
    results return ring rising rlimit robin round rows rr rt rtprio rtscope run running runs \
    runtime same sample samples scale sched schedule schema sec select sender sent seq series \
    serve server service session sessions set share short signal significant size skipped \
    slack smi smt socket softirq source sources space sparse spec specs spikes spin stage \
    stages stale start started static statistic stats stddev stress sub sweep switch switched \
    system task text than the then thread threads threshold throttling tick ticks tid time \
    timeline timer timerfd timers times to toggles tool top total trace tracefs tracer tracing \
    tsc tuning unclear unexplained unit unknown unmatched unstamped us used user value vector \
    version virtualization wake wakes wakeup waking warnings warp was what why width window \
    with worse worst yes";

/// Whether `name` is one of [`TOOL_WORDS`], in any case.
fn tool_word(name: &str) -> bool {
    TOOL_WORDS
        .split_whitespace()
        .any(|w| w.eq_ignore_ascii_case(name))
}

/// File name endings that make a word before them part of a file's name.
const FILE_ENDINGS: &str = ".json .html .htm .txt .csv .log .svg .png .xml .prom .gz .dat";

/// Kernel paths: their words are the kernel's, not names.
const KERNEL_PATHS: [&str; 4] = ["/sys/", "/proc/", "/dev/", "/run/"];

/// What before a word says it names a host or user.
const NAMES_BEFORE: &str = "host= host: hostname= hostname: nodename= node= node: user= user: \
    owner= owner: ://";

/// `text` with each whole-word `name` (one of the tool's words) replaced
/// where it identifies: the whole text (with `whole`), a word of a path
/// (not a kernel path) or of a file name, a URL's host, either side of an
/// `@`, after `host=`, `hostname:`, `node=`, `user=`, `owner:` and the
/// like, and a `NAME:PORT` that is a word of its own.
fn replace_identifying(text: &str, name: &str, with: &str, whole: bool) -> String {
    let trimmed = text.trim();
    if whole && trimmed.eq_ignore_ascii_case(name) {
        let at = text.len() - text.trim_start().len();
        return format!("{}{with}{}", &text[..at], &text[at + trimmed.len()..]);
    }
    let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let token_end = |c: char| c.is_whitespace() || "\"'`,;()[]{}<>|".contains(c);
    let lower = text.to_ascii_lowercase();
    let w = name.to_ascii_lowercase();
    let mut out = String::new();
    let mut at = 0;
    while let Some(i) = lower[at..].find(&w).map(|i| i + at) {
        let e = i + w.len();
        let before = text[..i].chars().last();
        let after = text[e..].chars().next();
        out.push_str(&text[at..i]);
        // The token (a run of characters up to a space, quote or bracket)
        // the word is in.
        let s = text[..i]
            .char_indices()
            .rev()
            .find(|&(_, c)| token_end(c))
            .map_or(0, |(k, c)| k + c.len_utf8());
        let f = text[e..].find(token_end).map_or(text.len(), |k| k + e);
        let token = &lower[s..f];
        let after_text = &lower[e..f];
        let path = token.contains('/')
            && !token.contains("://")
            && !KERNEL_PATHS.iter().any(|k| token.starts_with(k));
        let file = FILE_ENDINGS.split_whitespace().any(|x| token.ends_with(x));
        let port = after_text
            .strip_prefix(':')
            .is_some_and(|p| (2..=5).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()))
            && s == i;
        let named = NAMES_BEFORE.split_whitespace().any(|k| {
            let b = lower[..i].trim_end_matches(' ');
            b.ends_with(k) && (b.len() == i || !k.ends_with('/'))
        });
        let mail = before == Some('@') || after == Some('@');
        if !part(before) && !part(after) && (path || file || port || named || mail) {
            out.push_str(with);
        } else {
            out.push_str(&text[i..e]);
        }
        at = e;
    }
    out.push_str(&text[at..]);
    out
}

/// `text` with each whole-word `word` replaced, in any (ASCII) case. A
/// word is letters and digits, and `_` where `underscore` joins words: a
/// host named `vm` leaves `kvm-clock` and `vm2` alone but not `my-vm`,
/// `vm.json` or (unless `underscore`) `vm_run.json`.
fn replace_word(text: &str, word: &str, with: &str, underscore: bool) -> String {
    let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || (underscore && c == '_'));
    let lower = text.to_ascii_lowercase();
    let w = word.to_ascii_lowercase();
    let mut out = String::new();
    let mut at = 0;
    while let Some(i) = lower[at..].find(&w).map(|i| i + at) {
        let before = text[..i].chars().last();
        let after = text[i + w.len()..].chars().next();
        out.push_str(&text[at..i]);
        if part(before) || part(after) {
            out.push_str(&text[i..i + w.len()]);
        } else {
            out.push_str(with);
        }
        at = i + w.len();
    }
    out.push_str(&text[at..]);
    out
}

/// `text` with each e-mail address (`local@domain.tld`) replaced by
/// `(e-mail)`; a systemd unit (`getty@tty1.service`) is no address.
fn emails(text: &str) -> String {
    const UNITS: [&str; 10] = [
        "service", "socket", "timer", "target", "mount", "slice", "scope", "path", "device", "swap",
    ];
    let local = |c: u8| c.is_ascii_alphanumeric() || b"._%+-".contains(&c);
    let domain = |c: u8| c.is_ascii_alphanumeric() || c == b'.' || c == b'-';
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    let mut i = 0;
    while let Some(at) = text[i..].find('@').map(|k| k + i) {
        let mut s = at;
        while s > done && local(b[s - 1]) {
            s -= 1;
        }
        let mut e = at + 1;
        while e < b.len() && domain(b[e]) {
            e += 1;
        }
        while e > at + 1 && (b[e - 1] == b'.' || b[e - 1] == b'-') {
            e -= 1;
        }
        let dom = &text[at + 1..e];
        let tld = dom.rsplit('.').next().unwrap_or("");
        if s < at
            && dom.contains('.')
            && tld.len() >= 2
            && tld.bytes().all(|c| c.is_ascii_alphabetic())
            && !UNITS.contains(&tld)
        {
            out.push_str(&text[done..s]);
            out.push_str("(e-mail)");
            done = e;
            i = e;
        } else {
            i = at + 1;
        }
    }
    out.push_str(&text[done..]);
    out
}

/// The prefixes of the disk names in `/dev/disk/by-id/` that go on with a
/// model and serial number (`usb-Samsung_SSD_860_EVO_S3Z9NB0K123456`).
const DISK_IDS: [&str; 11] = [
    "ata-",
    "usb-",
    "nvme-",
    "scsi-",
    "wwn-",
    "mmc-",
    "virtio-",
    "ieee1394-",
    "md-uuid-",
    "dm-uuid-",
    "lvm-pv-uuid-",
];

/// Whether `c` may be part of a serial number or device id.
fn id_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"_.:-".contains(&c)
}

/// `text` with device serial numbers and file system ids replaced: the
/// value after a word with `serial` in it and `=` or `:` (`serial=X`,
/// `SerialNumber: X`, `ID_SERIAL_SHORT=X`) and a `/dev/disk/by-id/` name
/// become `(serial)`, a disk id (`usb-…_S3Z9NB0K123456-part1`, `wwn-0x…`;
/// a `-partN` kept) `usb-(serial)-part1`, the value of `UUID=`,
/// `PARTUUID=` and a `/dev/disk/by-uuid/` or `by-partuuid/` name, and
/// any UUID (`8-4-4-4-12` hex digits) `(uuid)`.
fn serials(text: &str) -> String {
    let b = text.as_bytes();
    let lower = text.to_ascii_lowercase();
    let l = lower.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii() {
            i += 1;
            continue;
        }
        let boundary = i == 0 || !(b[i - 1].is_ascii_alphanumeric());
        let found = serial_value(b, l, i)
            .map(|(s, e)| (s, e, "(serial)"))
            .or_else(|| by_path(&lower, i))
            .or_else(|| uuid_value(l, i).map(|(s, e)| (s, e, "(uuid)")))
            .or_else(|| boundary.then(|| disk_id(&lower, i)).flatten())
            .or_else(|| {
                boundary
                    .then(|| uuid(l, i).map(|e| (i, e, "(uuid)")))
                    .flatten()
            });
        match found {
            Some((s, e, with)) if e > s => {
                out.push_str(&text[done..s]);
                out.push_str(with);
                done = e;
                i = e;
            }
            _ => i += 1,
        }
    }
    out.push_str(&text[done..]);
    out
}

/// The value after `serial=`, `serial:` (and `SerialNumber`, `iSerial`,
/// `ID_SERIAL_SHORT`, `serial number`, `serial no.`) at `i` (`b` the text,
/// `l` it in lower case); `deserialize:` is none.
fn serial_value(b: &[u8], l: &[u8], i: usize) -> Option<(usize, usize)> {
    if !l[i..].starts_with(b"serial") {
        return None;
    }
    // A word of its own, after `_` or a lower-case letter (`iSerial`).
    if i > 0
        && b[i - 1].is_ascii_alphanumeric()
        && !(b[i].is_ascii_uppercase() && b[i - 1].is_ascii_lowercase())
    {
        return None;
    }
    let mut k = i + 6;
    const MORE: [&[u8]; 13] = [
        b"_number", b"number", b"_short", b"_num", b"num", b"_no", b"no", b"nr", b" number",
        b" no.", b" no", b" #", b"#",
    ];
    if let Some(m) = MORE.iter().find(|m| l[k..].starts_with(m)) {
        k += m.len();
    }
    while l.get(k) == Some(&b' ') {
        k += 1;
    }
    if !matches!(l.get(k), Some(b'=' | b':')) {
        return None;
    }
    k += 1;
    while matches!(l.get(k), Some(b' ' | b'"' | b'\'')) {
        k += 1;
    }
    let e = (k..l.len()).find(|&j| !id_char(l[j])).unwrap_or(l.len());
    let e = trim_punct(l, k, e);
    (e > k).then_some((k, e))
}

/// An `UUID=` or `PARTUUID=` value at `i`.
fn uuid_value(l: &[u8], i: usize) -> Option<(usize, usize)> {
    let key = [&b"partuuid="[..], b"uuid="]
        .into_iter()
        .find(|k| l[i..].starts_with(k))?;
    if i > 0 && l[i - 1].is_ascii_alphanumeric() && key == b"uuid=" && !l[..i].ends_with(b"part") {
        return None;
    }
    let s = i + key.len();
    let e = (s..l.len()).find(|&j| !id_char(l[j])).unwrap_or(l.len());
    let e = trim_punct(l, s, e);
    (e > s && !l[s..].starts_with(b"(")).then_some((s, e))
}

/// The name after `/dev/disk/by-id/`, `by-uuid/`, `by-partuuid/` at `i`.
fn by_path(lower: &str, i: usize) -> Option<(usize, usize, &'static str)> {
    let (key, with) = [
        ("/dev/disk/by-id/", "(serial)"),
        ("/dev/disk/by-uuid/", "(uuid)"),
        ("/dev/disk/by-partuuid/", "(uuid)"),
    ]
    .into_iter()
    .find(|(k, _)| lower[i..].starts_with(k))?;
    let l = lower.as_bytes();
    let s = i + key.len();
    let e = (s..l.len()).find(|&j| !id_char(l[j])).unwrap_or(l.len());
    Some((s, trim_punct(l, s, e), with))
}

/// The serial part of a disk id at `i` (`usb-…`, a `-partN` left out): at
/// least 8 characters with a digit in them (`usb-storage`, `nvme-tcp` are
/// modules).
fn disk_id(lower: &str, i: usize) -> Option<(usize, usize, &'static str)> {
    let p = DISK_IDS.iter().find(|p| lower[i..].starts_with(*p))?;
    let l = lower.as_bytes();
    let s = i + p.len();
    let mut e = (s..l.len()).find(|&j| !id_char(l[j])).unwrap_or(l.len());
    e = trim_punct(l, s, e);
    if let Some(k) = lower[s..e].rfind("-part") {
        if lower[s + k + 5..e].bytes().all(|c| c.is_ascii_digit()) && s + k + 5 < e {
            e = s + k;
        }
    }
    (e - s >= 8 && l[s..e].iter().any(u8::is_ascii_digit)).then_some((s, e, "(serial)"))
}

/// The end of a UUID (`8-4-4-4-12` hex digits) at `i`, standing alone.
fn uuid(l: &[u8], i: usize) -> Option<usize> {
    let mut k = i;
    for (n, len) in [8, 4, 4, 4, 12].into_iter().enumerate() {
        if n > 0 {
            if l.get(k) != Some(&b'-') {
                return None;
            }
            k += 1;
        }
        if k + len > l.len() || !l[k..k + len].iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        k += len;
    }
    (!l.get(k)
        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'-'))
    .then_some(k)
}

/// `e` moved back over the dots, colons and dashes that end a sentence or
/// a `KEY:` rather than the value started at `s`.
fn trim_punct(l: &[u8], s: usize, mut e: usize) -> usize {
    while e > s && matches!(l[e - 1], b'.' | b':' | b'-') {
        e -= 1;
    }
    e
}

/// `text` with MAC addresses (`(mac)`) and IPv4 and IPv6 addresses
/// (`(address)`) replaced, in the forms the module lists.
fn addresses(t: &str) -> String {
    let b = t.as_bytes();
    let mut out = String::with_capacity(t.len());
    let mut done = 0;
    let mut i = 0;
    while i < b.len() {
        let prev = if i == 0 { None } else { Some(b[i - 1]) };
        // Inside a word or a longer dotted number: not the start of one.
        // `_` joins no address to a word (`nic_10.9.8.7`).
        let boundary = !prev.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'.');
        let found = if boundary {
            mac(b, i)
                .map(|e| (e, "(mac)"))
                .or_else(|| ipv4(b, i).map(|e| (e, "(address)")))
                .or_else(|| ipv6(t, i).map(|e| (e, "(address)")))
        } else {
            None
        };
        match found {
            Some((e, with)) => {
                out.push_str(&t[done..i]);
                out.push_str(with);
                done = e;
                i = e;
            }
            None => i += 1,
        }
    }
    out.push_str(&t[done..]);
    out
}

/// Whether `b[e..]` starts where an address may end: not a letter or
/// digit, and not a dot or colon that goes on with one (`_` may follow).
fn ends_at(b: &[u8], e: usize) -> bool {
    match b.get(e) {
        None => true,
        Some(c) if c.is_ascii_alphanumeric() => false,
        Some(b'.') => !b.get(e + 1).is_some_and(u8::is_ascii_digit),
        Some(_) => true,
    }
}

/// The end of a MAC address at `i`: six pairs of hex digits joined by `:`
/// (or all by `-`), or the forms below.
fn mac(b: &[u8], i: usize) -> Option<usize> {
    let hex = |k: usize, n| {
        b.get(k..k + n)
            .is_some_and(|s| s.iter().all(u8::is_ascii_hexdigit))
    };
    let dot = |k: usize| b.get(k) == Some(&b'.');
    // Cisco's `5254.00ab.cdef`; 12 hex digits, a letter and a digit among
    // them, standing alone (`525400abcdef`; not a UUID's last part).
    if hex(i, 4) && dot(i + 4) && hex(i + 5, 4) && dot(i + 9) && hex(i + 10, 4) {
        return ends_at(b, i + 14).then_some(i + 14);
    }
    if hex(i, 12) && ends_at(b, i + 12) && !(i > 0 && b[i - 1] == b'-') {
        let m = &b[i..i + 12];
        let both = m.iter().any(u8::is_ascii_digit) && m.iter().any(u8::is_ascii_alphabetic);
        return (both && b.get(i + 12) != Some(&b'-')).then_some(i + 12);
    }
    let sep = *b.get(i + 2)?;
    if (sep != b':' && sep != b'-') || (i > 0 && b[i - 1] == sep) {
        return None;
    }
    for k in 0..6 {
        let p = i + 3 * k;
        if !(b.get(p)?.is_ascii_hexdigit() && b.get(p + 1)?.is_ascii_hexdigit()) {
            return None;
        }
        if k < 5 && *b.get(p + 2)? != sep {
            return None;
        }
    }
    let e = i + 17;
    (ends_at(b, e) && b.get(e) != Some(&sep)).then_some(e)
}

/// The end of an IPv4 address at `i` (four parts of at most three digits,
/// each at most 255), with a `:PORT` after it.
fn ipv4(b: &[u8], i: usize) -> Option<usize> {
    let mut e = i;
    for k in 0..4 {
        if k > 0 {
            if b.get(e) != Some(&b'.') {
                return None;
            }
            e += 1;
        }
        let s = e;
        while e < b.len() && b[e].is_ascii_digit() && e - s < 4 {
            e += 1;
        }
        let part = std::str::from_utf8(&b[s..e]).ok()?;
        if part.is_empty() || part.len() > 3 || part.parse::<u16>().ok()? > 255 {
            return None;
        }
    }
    if !ends_at(b, e) {
        return None;
    }
    // A port: `10.1.2.3:8080`.
    if b.get(e) == Some(&b':') {
        let mut p = e + 1;
        while p < b.len() && b[p].is_ascii_digit() {
            p += 1;
        }
        let port = std::str::from_utf8(&b[e + 1..p]).ok()?;
        if port.parse::<u16>().is_ok() && ends_at(b, p) {
            return Some(p);
        }
    }
    Some(e)
}

/// The end of an IPv6 address at `i`: the longest run of hex digits,
/// colons and dots from `i` that is one (with at least two colons; a
/// `%zone` after it kept), not the loopback or unspecified address.
fn ipv6(t: &str, i: usize) -> Option<usize> {
    let b = t.as_bytes();
    if b[i] == b':' && b.get(i + 1) != Some(&b':') {
        return None;
    }
    if i > 0 && b[i - 1] == b':' && b[i] == b':' {
        return None;
    }
    let mut run = i;
    while run < b.len() && (b[run].is_ascii_hexdigit() || b[run] == b':' || b[run] == b'.') {
        run += 1;
    }
    (i + 2..=run).rev().find(|&e| {
        let s = &t[i..e];
        s.matches(':').count() >= 2
            && ends_at(b, e)
            && s.parse::<std::net::Ipv6Addr>()
                .is_ok_and(|a| !a.is_loopback() && !a.is_unspecified())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` with `host`, home directories' user names and addresses replaced.
    fn redact_text(text: &str, host: Option<&str>) -> String {
        let mut r = Redactor::default();
        if let Some(h) = host {
            r.learn_host(h);
        }
        r.learn_path(text);
        r.text(text)
    }

    fn path_text(p: &str) -> String {
        redact_text(p, None)
    }

    #[test]
    fn texts() {
        assert_eq!(
            redact_text("/home/alice/runs/a.json on box7", Some("box7")),
            "/home/(user)/runs/a.json on (host)"
        );
        assert_eq!(redact_text("/Users/bob", None), "/Users/(user)");
        assert_eq!(
            redact_text("vm: tsc kvm-clock vm2 vm, my-vm (VM)", Some("vm")),
            "(host): tsc kvm-clock vm2 (host), my-(host) ((host))"
        );
        assert_eq!(redact_text("/home/", None), "/home/");
        assert_eq!(
            redact_text("peer 192.168.1.20:9000, ip=10.0.0.1.", None),
            "peer (address), ip=(address)."
        );
        assert_eq!(
            redact_text("addr fe80::1:2:3 and ::1 and ::", None),
            "addr (address) and ::1 and ::"
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
        assert_eq!(redact_text("kvm-clock vm2", Some("vm")), "kvm-clock vm2");
        // `_` joins no host name to a word, nor an address.
        assert_eq!(
            redact_text("vm_x x_vm vm.x", Some("vm")),
            "(host)_x x_(host) (host).x"
        );
        assert_eq!(
            redact_text(
                "nic_prod-db-17_10.9.8.7 edge01_run.json",
                Some("prod-db-17")
            ),
            "nic_(host)_(address) edge01_run.json"
        );
        assert_eq!(redact_text("a_52:54:00:ab:cd:ef_b", None), "a_(mac)_b");
        // Cisco's and bare MACs; a UUID's last part and a hash stay apart.
        assert_eq!(
            redact_text(
                "nic 5254.00ab.cdef, 525400abcdef; 123456789012 0123456789abcdef",
                None
            ),
            "nic (mac), (mac); 123456789012 0123456789abcdef"
        );
        // Users after `~`, `user=`, `owner: `, wherever else they stand.
        let mut r = Redactor::default();
        r.learn_path("~carol/runs user=dave owner: erin ~5 ms a~b/");
        assert_eq!(
            r.text("~carol/a dave erin USER=dave ~5 ms a~b/"),
            "~(user)/a (user) (user) USER=(user) ~5 ms a~b/"
        );
        // A host named like one of the tool's words: `_` still joins.
        assert_eq!(
            redact_text("thread_count on host=thread", Some("thread")),
            "thread_count on host=(host)"
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
            ("fe80::1", "(address)"),
            // A port over 65535 is no port.
            ("10.0.0.1:65536", "(address):65536"),
            // Not addresses: a part over 255 or of four digits, a time, a
            // token inside a word.
            ("10.0.0.256", "10.0.0.256"),
            ("12:30:45", "12:30:45"),
            ("0001.2.3.4", "0001.2.3.4"),
            ("a10.0.0.1", "a10.0.0.1"),
            ("x10.0.0.1", "x10.0.0.1"),
            ("(.10.0.0.1)", "(.10.0.0.1)"),
            ("10.0.0.1z", "10.0.0.1z"),
        ] {
            assert_eq!(redact_text(text, None), want, "{text}");
        }
    }

    /// Every form a hostile pass found left in place.
    #[test]
    fn every_address_form() {
        for (text, want) in [
            (
                "ip=10.20.30.40::10.20.30.1:255.255.255.0:box:eth0:off",
                "ip=(address)::(address):(address):box:eth0:off",
            ),
            ("peer 10.1.2.3:eth0", "peer (address):eth0"),
            ("10.1.2.3:8080:x", "(address):x"),
            ("2001:db8::1:eth0", "(address):eth0"),
            ("fd00::5, 2600::1", "(address), (address)"),
            ("via fe80::1%eth0.", "via (address)%eth0."),
            ("[2001:db8::7]:443", "[(address)]:443"),
            ("::ffff:10.9.8.7", "(address)"),
            ("mac 52:54:00:ab:CD:ef up", "mac (mac) up"),
            ("mac 52-54-00-ab-cd-ef", "mac (mac)"),
            ("to Alice.Smith+rt@corp.example.com.", "to (e-mail)."),
            // Not these: a unit, a user at a host with no domain, seven
            // pairs, a version.
            ("getty@tty1.service", "getty@tty1.service"),
            ("alice@box", "alice@box"),
            ("52:54:00:ab:cd:ef:01", "52:54:00:ab:cd:ef:01"),
            ("rtscope 0.1.0 (6.18.44)", "rtscope 0.1.0 (6.18.44)"),
        ] {
            assert_eq!(redact_text(text, None), want, "{text}");
        }
    }

    /// Host names in any case and as the first label of a dotted name,
    /// user names learned from a home directory wherever else they are,
    /// and object keys.
    #[test]
    fn names_in_any_case_and_keys() {
        let mut d = ResultDocument::new(
            "cyclic",
            serde_json::json!({"out": "/home/alice/r.json", "PROD-DB-17": {"alice": 1}}),
            Default::default(),
            vec![],
        );
        d.system.hostname = Some("prod-db-17.lab.example".into());
        d.warnings = vec!["Prod-Db-17 and prod-db-17.lab.example, ALICE, alice-x".into()];
        let r = document(&d);
        let text = String::from_utf8(r.to_json()).unwrap();
        for gone in ["prod-db-17", "PROD-DB-17", "Prod-Db-17", "alice", "ALICE"] {
            assert!(!text.contains(gone), "{gone} in {text}");
        }
        assert_eq!(
            r.warnings,
            ["(host) and (host), (user), (user)-x"],
            "{text}"
        );
        assert_eq!(
            r.plan,
            serde_json::json!({"out": "/home/(user)/r.json", "(host)": {"(user)": 1}})
        );
    }

    /// A user named like an enum's value (`loops`, the end reason): the
    /// document still reads back, and every other field is redacted.
    #[test]
    fn a_name_like_an_enum_value_leaves_only_that_value() {
        let mut d = ResultDocument::new(
            "cyclic",
            serde_json::json!({"out": "/home/loops/r.json"}),
            Default::default(),
            vec![],
        );
        d.end_reason = rtscope_core::result::EndReason::Loops;
        // `loops` is one of the tool's words: in prose it goes where it
        // identifies (`user=`), not as a word of its own.
        d.warnings = vec!["user=loops owns 10.1.2.3 in loops".into()];
        d.command_line = vec!["--json".into(), "/home/loops/r.json".into()];
        let r = document(&d);
        assert_eq!(r.end_reason, rtscope_core::result::EndReason::Loops);
        assert_eq!(r.warnings, ["user=(user) owns (address) in loops"]);
        assert_eq!(r.command_line[1], "/home/(user)/r.json");
        assert_eq!(r.plan["out"], "/home/(user)/r.json");
    }

    /// Runs redacted together: one run's file name loses the host name
    /// that only the other run's document has.
    #[test]
    fn runs_share_their_names() {
        let mut a =
            ResultDocument::new("cyclic", serde_json::json!({}), Default::default(), vec![]);
        a.system.hostname = Some("prod-db-17".into());
        let mut b = a.clone();
        b.system.hostname = Some("edge-4".into());
        let mut rs = vec![
            Run {
                name: "edge-4".into(),
                path: "/home/bob/edge-4.json".into(),
                doc: a,
            },
            Run {
                name: "prod-db-17".into(),
                path: "prod-db-17.json".into(),
                doc: b,
            },
        ];
        let r = runs(&mut rs);
        // Two hosts, numbered in order of first appearance (the first
        // document's host first).
        assert_eq!(rs[0].name, "(host 2)");
        assert_eq!(rs[0].path, Path::new("/home/(user)/(host 2).json"));
        assert_eq!(rs[1].name, "(host 1)");
        assert_eq!(rs[1].path, Path::new("(host 1).json"));
        assert_eq!(rs[0].doc.system.hostname.as_deref(), Some(REDACTED));
        assert_eq!(r.text("PROD-DB-17 and edge-4"), "(host 1) and (host 2)");
    }

    /// A dotted host name and its first label are one host; one host alone
    /// is `(host)`.
    #[test]
    fn hosts_are_numbered_only_where_there_are_several() {
        let mut r = Redactor::default();
        r.learn_host("db1.lab.example");
        r.learn_host("DB1");
        assert_eq!(r.text("db1 db1.lab.example"), "(host) (host)");
        r.learn_host("db2");
        assert_eq!(
            r.text("db1.lab.example db2 db1"),
            "(host 1) (host 2) (host 1)"
        );
        assert_eq!(r.host_names(), ["db1.lab.example", "db2"]);
    }

    #[test]
    fn aliases_and_errors() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("prod-db-17.json"), "x").unwrap();
        let a = alias("prod-db-17.json");
        assert!(a.starts_with("r-") && a.ends_with(".json") && !a.contains("prod"));
        assert_ne!(a, alias("prod-db-18.json"));
        assert_eq!(unalias(d.path(), &a).as_deref(), Some("prod-db-17.json"));
        assert_eq!(unalias(d.path(), "prod-db-17.json"), None);
        let p = Path::new("/srv/home/alice/prod-db-17.json");
        assert_eq!(
            served_error(&format!("{}: bad JSON", p.display()), p),
            format!("{a}: bad JSON")
        );
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

    /// A host or user named like one of the tool's words: labels, keys,
    /// units and prose stay; where the name identifies, it goes.
    #[test]
    fn a_name_that_is_a_tool_word_goes_only_where_it_identifies() {
        for host in ["thread", "all", "rt", "cpu", "p99", "ALL"] {
            let mut d = ResultDocument::new(
                "cyclic",
                serde_json::json!({
                    "json": format!("/srv/runs/{host}.json"),
                    "push": format!("http://{host}:9091/metrics"),
                    "host": host,
                    "allow_hosts": [host],
                    "cpus": "all",
                    "mode": host,
                    "sysfs": "/sys/devices/system/cpu/cpu0",
                }),
                Default::default(),
                vec![],
            );
            d.system.hostname = Some(host.into());
            d.command_line = vec![
                "rtscope".into(),
                "--allow-host".into(),
                host.into(),
                "--cpus".into(),
                host.into(),
            ];
            d.warnings = vec![
                format!("all CPUs busy: thread 1 of the rt run (p99, cpu 2) on host={host}"),
                format!("root@{host} wrote {host}:9091 and /srv/x/{host}-runs/a.json"),
            ];
            let mut s = rtscope_core::result::Series {
                label: "all".into(),
                ..Default::default()
            };
            s.attributes.insert("thread".into(), serde_json::json!(1));
            s.attributes.insert("cpu".into(), serde_json::json!("all"));
            let mut t = s.clone();
            t.label = "thread 0".into();
            d.series = vec![t, s];
            let r = document(&d);
            let h = "(host)";
            assert_eq!(r.series[0].label, "thread 0", "{host}");
            assert_eq!(r.series[1].label, "all", "{host}");
            let keys: Vec<&String> = r.series[1].attributes.keys().collect();
            assert_eq!(keys, ["cpu", "thread"], "{host}");
            assert_eq!(r.plan["json"], format!("/srv/runs/{h}.json"), "{host}");
            assert_eq!(r.plan["push"], format!("http://{h}:9091/metrics"), "{host}");
            assert_eq!(r.plan["host"], h, "{host}");
            assert_eq!(r.plan["allow_hosts"][0], h, "{host}");
            // A value that is a word of the tool's is the tool's word.
            assert_eq!(r.plan["cpus"], "all", "{host}");
            assert_eq!(r.plan["mode"], host, "{host}");
            assert_eq!(r.command_line[4], host, "{host}");
            assert_eq!(r.plan["sysfs"], "/sys/devices/system/cpu/cpu0", "{host}");
            assert_eq!(r.command_line[2], h, "{host}");
            let w0 = d.warnings[0].replace(&format!("host={host}"), "host=(host)");
            assert_eq!(r.warnings[0], w0, "{host}");
            assert_eq!(
                r.warnings[1],
                format!("root@{h} wrote {h}:9091 and /srv/x/{h}-runs/a.json"),
                "{host}"
            );
            assert_eq!(r.system.hostname.as_deref(), Some(REDACTED));
        }
    }

    /// Run names and paths are names: a tool word in them goes whole.
    #[test]
    fn run_names_lose_a_tool_word_host() {
        let mut a =
            ResultDocument::new("cyclic", serde_json::json!({}), Default::default(), vec![]);
        a.system.hostname = Some("rt".into());
        let mut rs = vec![Run {
            name: "rt-idle".into(),
            path: "runs/rt-idle.json".into(),
            doc: a,
        }];
        let r = runs(&mut rs);
        assert_eq!(rs[0].name, "(host)-idle");
        assert_eq!(rs[0].path, Path::new("runs/(host)-idle.json"));
        assert_eq!(r.text("an rt kernel"), "an rt kernel");
        assert_eq!(r.identity("rt"), "(host)");
        // A name not of the tool's words goes everywhere, keys too.
        assert!(tool_word("thread") && tool_word("P99") && !tool_word("box7"));
        let words: Vec<&str> = TOOL_WORDS.split_whitespace().collect();
        assert!(words.windows(2).all(|w| w[0] < w[1]), "not sorted");
    }

    /// Device serials and file system ids outside the kernel command line.
    #[test]
    fn serial_numbers_and_uuids() {
        for (text, want) in [
            ("disk serial=ABC123XYZ ok", "disk serial=(serial) ok"),
            ("SerialNumber: S3Z9NB0K123456", "SerialNumber: (serial)"),
            ("iSerial=XYZ123 up", "iSerial=(serial) up"),
            (
                "ID_SERIAL_SHORT=S3Z9NB0K123456.",
                "ID_SERIAL_SHORT=(serial).",
            ),
            (
                "Serial Number: 'WD-WCC6Y1234567'",
                "Serial Number: '(serial)'",
            ),
            (
                "/dev/disk/by-id/usb-Samsung_SSD_860_EVO_S3Z9NB0K123456-part1",
                "/dev/disk/by-id/(serial)",
            ),
            (
                "on usb-Samsung_SSD_860_EVO_S3Z9NB0K123456-part1 and nvme-eui.0025388b91c1",
                "on usb-(serial)-part1 and nvme-(serial)",
            ),
            ("wwn-0x5002538e40a1b2c3", "wwn-(serial)"),
            ("root=UUID=1234-ABCD ro", "root=UUID=(uuid) ro"),
            ("root=PARTUUID=abcd1234-02", "root=PARTUUID=(uuid)"),
            (
                "/dev/disk/by-uuid/123e4567-e89b-12d3-a456-426614174000",
                "/dev/disk/by-uuid/(uuid)",
            ),
            (
                "fs 123e4567-e89b-12d3-a456-426614174000 full",
                "fs (uuid) full",
            ),
            // Not serials: a module, a word with `serial` in it, a serial
            // console, an id too short.
            (
                "usb-storage nvme-tcp ata-piix",
                "usb-storage nvme-tcp ata-piix",
            ),
            ("cannot deserialize: bad", "cannot deserialize: bad"),
            ("console=ttyS0 serial port", "console=ttyS0 serial port"),
            ("usb-1234", "usb-1234"),
        ] {
            assert_eq!(redact_text(text, None), want, "{text}");
        }
        let mut d = ResultDocument::new(
            "cyclic",
            serde_json::json!({"disk_serial": "X7"}),
            Default::default(),
            vec![],
        );
        let mut s = rtscope_core::result::Series::default();
        s.attributes
            .insert("SerialNumber".into(), serde_json::json!("Q1"));
        s.attributes
            .insert("fs_uuid".into(), serde_json::json!("Q2"));
        d.series = vec![s];
        d.warnings = vec!["sda serial=ABC123XYZ, root=UUID=5ecre7".into()];
        d.command_line = vec!["--disk".into(), "/dev/disk/by-id/wd-5ecre7".into()];
        let r = document(&d);
        let text = String::from_utf8(r.to_json()).unwrap();
        for gone in ["X7", "Q1", "Q2", "ABC123XYZ", "5ecre7"] {
            assert!(!text.contains(gone), "{gone} in {text}");
        }
    }

    /// No text panics, whatever characters stand around the forms looked
    /// for (a `—` before a serial once split a character).
    #[test]
    fn any_text_redacts_without_panic() {
        let parts = [
            "—",
            "é",
            "\u{2003}",
            " ",
            "serial=",
            "SerialNumber: ",
            "/dev/disk/by-id/",
            "usb-",
            "wwn-0x5002538e40a1b2c3",
            "UUID=",
            "123e4567-e89b-12d3-a456-426614174000",
            "thread",
            "all",
            "@",
            "://",
            ":80",
            ".json",
            "/home/all/",
            "host=",
            "10.0.0.1",
            "fe80::1",
            "x",
        ];
        let mut r = Redactor::default();
        r.learn_host("thread");
        r.learn_host("box-7");
        r.learn_path("/home/all/x");
        for a in parts {
            for b in parts {
                for c in ["—", " ", "x"] {
                    let t = format!("{a}{b}{c}");
                    for place in [Place::Identity, Place::Named, Place::Value, Place::Key] {
                        let _ = r.redact(&t, place);
                    }
                }
            }
        }
    }

    /// The served directory reads `DIR`, where a path starts with it.
    #[test]
    fn the_served_directory_reads_dir() {
        let mut r = Redactor::default();
        r.learn_dir(Path::new("/srv/alice-lab/runs/"));
        assert_eq!(
            r.text("--json /srv/alice-lab/runs/a.json /srv/alice-lab/runs2 /srv/alice-lab/runs"),
            "--json DIR/a.json /srv/alice-lab/runs2 DIR"
        );
        let mut r = Redactor::default();
        r.learn_dir(Path::new("/srv"));
        assert_eq!(r.text("/srv/a.json"), "/srv/a.json");
        let mut r = Redactor::default();
        r.learn_dir(Path::new("/home/bob/runs"));
        assert_eq!(r.text("/home/bob/x bob"), "/home/(user)/x (user)");
    }
}
