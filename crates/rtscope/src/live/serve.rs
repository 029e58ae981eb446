//! `rtscope serve DIR`: the result documents of a directory over HTTP, on
//! the live server ([`super::http`], with its bounds; pages are read and
//! rendered on its blocking threads): `/` lists them with their key
//! figures, `/run/NAME` renders one's HTML report with the `report` module,
//! `/raw/NAME` returns the JSON, `/base/NAME` is the list with NAME picked
//! as the baseline (each other run then links to its comparison), and
//! `/compare/BASE/NAME` renders the comparison page of the two. NAME is a
//! plain file name in DIR: anything with a path separator, a `..`, a
//! leading dot or that resolves outside DIR is refused (403); nothing is
//! written. With `--redact` every page and JSON leaves out the host name,
//! the kernel command line, user names and addresses, never shows the
//! served directory (nor prints it: the start line and errors say `DIR`),
//! and names each file by its alias
//! ([`crate::report::redact::alias`]) instead of its name.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use anyhow::Result;

use rtscope_core::result::ResultDocument;

use super::http::{self, Gone, Request, Response};
use crate::error::{usage, EXIT_OK};
use crate::report::esc;

/// Pages rendered from a whole document (`/run`, `/compare`, `/raw` with
/// `--redact`) at once; a request beyond is answered `503` at once rather
/// than queued, so that the list and the files are answered meanwhile.
const RENDERS: usize = 2;

/// The most documents the list shows.
const MAX_LISTED: usize = 1000;

/// The most files of DIR looked at (the newest): what the index holds.
const MAX_INDEXED: usize = 4 * MAX_LISTED;

/// The largest document served or read for a page (as every reader of
/// result documents: [`ResultDocument::read`]); a larger file is left out of
/// the list and refused (`413`).
pub const MAX_DOCUMENT: u64 = 256 << 20;

/// What `rtscope serve` serves, where.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// The directory of result documents.
    pub dir: std::path::PathBuf,
    /// HOST:PORT to listen on.
    pub listen: String,
    /// Allow an address other than loopback.
    pub listen_any: bool,
    /// `--allow-host`: more `Host` names to answer for.
    pub allow_hosts: Vec<String>,
    /// Leave out what identifies the machine.
    pub redact: bool,
    /// `-q`: no start line (only the address bound, on stderr, when the
    /// port was left to the system).
    pub quiet: bool,
}

pub fn run(a: &ServeOptions) -> Result<i32> {
    // With --redact nothing printed names the directory (its path holds
    // the user's home, often the host name).
    let named = match a.redact {
        true => "DIR".to_string(),
        false => a.dir.display().to_string(),
    };
    let dir = a
        .dir
        .canonicalize()
        .map_err(|e| usage(format!("{named}: {e}")))?;
    if !dir.is_dir() {
        return Err(usage(format!("{named}: not a directory")));
    }
    super::host::check_names(&a.allow_hosts)?;
    let listener = http::bind(&a.listen, a.listen_any)?;
    let bound = listener
        .local_addr()
        .map_or_else(|_| a.listen.clone(), |x| x.to_string());
    let signals = crate::signals::StopSignals::install()?;
    let shown = match a.redact {
        true => "DIR (redacted)".to_string(),
        false => crate::output::printable(&dir.display().to_string()).into_owned(),
    };
    let flag = signals.flag.clone();
    let index = Index::new(dir, a.redact);
    // Indexed once now; then each request looks only at what changed.
    index.lock().refresh(&Gone::default());
    if !a.quiet {
        crate::output::say(&format!(
            "serving the results in {shown} on http://{bound}/ (Ctrl-C stops)\n"
        ));
    } else if super::port_left_to_system(&a.listen) {
        eprintln!("rtscope: listening on http://{bound}/");
    }
    http::serve(
        listener,
        &flag,
        http::Pages::blocking(move |req| page(&index, req)).allow_hosts(&a.allow_hosts),
        http::LIMITS,
        || {},
    )
    .map_err(|e| anyhow::anyhow!("serve: the server could not start: {e}"))?;
    Ok(EXIT_OK)
}

/// The file `name` names in `dir`, or the error response: 403 for what is
/// not a plain name in DIR, 404 for what does not exist.
pub fn resolve(dir: &Path, name: &str) -> Result<PathBuf, Response> {
    let forbidden = || {
        Response::text(
            403,
            "forbidden: only files directly in the served directory\n",
        )
    };
    // `%2F` decodes to `/` (refused below); an invalid escape stays as it is.
    let Ok(name) = percent_encoding::percent_decode_str(name).decode_utf8() else {
        return Err(Response::text(400, "bad file name\n"));
    };
    if name.is_empty()
        || name.contains(['/', '\\', '\0'])
        || name.starts_with('.')
        || !name.ends_with(".json")
    {
        return Err(forbidden());
    }
    let p = dir.join(name.as_ref());
    match p.canonicalize() {
        Ok(c) if c.parent() == Some(dir) && c.is_file() => Ok(c),
        Ok(_) => Err(forbidden()),
        Err(_) => Err(Response::text(404, "no such result\n")),
    }
}

/// Reads `p`, redacted when asked.
fn read(p: &Path, redact: bool) -> Result<ResultDocument, Response> {
    let d = read_as_is(p, redact)?;
    Ok(match redact {
        true => match p.parent() {
            Some(dir) => crate::report::redact::served_document(&d, dir),
            None => crate::report::redact::document(&d),
        },
        false => d,
    })
}

/// Reads `p` as it is; the error redacted when asked (it names the path).
fn read_as_is(p: &Path, redact: bool) -> Result<ResultDocument, Response> {
    match ResultDocument::read(p) {
        Ok(d) => Ok(d),
        Err(e) if redact => Err(Response::text(
            422,
            format!(
                "not a result document: {}\n",
                crate::report::redact::served_error(&e.to_string(), p)
            ),
        )),
        Err(e) => Err(Response::text(422, format!("not a result document: {e}\n"))),
    }
}

/// What identifies a version of a file: a change of any of these and it is
/// read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Key {
    len: u64,
    mtime: SystemTime,
    ino: u64,
    dev: u64,
}

impl Key {
    fn of(m: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Key {
            len: m.len(),
            mtime: m.modified().unwrap_or(std::time::UNIX_EPOCH),
            ino: m.ino(),
            dev: m.dev(),
        }
    }
}

/// A result's line in the list (its figures, redacted when the server is).
#[derive(Debug, Clone)]
struct Row {
    /// The file's name as the list shows it (redacted when the server is).
    name: String,
    experiment: String,
    host: String,
    started: String,
    duration: String,
    figures: String,
    warnings: usize,
}

/// What a file of DIR is.
#[derive(Debug, Clone)]
enum Kind {
    /// A result document: listed and served.
    Result(Row),
    /// Larger than [`MAX_DOCUMENT`]: not read.
    TooLarge,
    /// Anything else (other JSON, a broken file): neither listed nor served.
    Other,
}

#[derive(Debug, Clone)]
struct Entry {
    key: Key,
    kind: Kind,
}

/// The documents of DIR, each read once per version: a request looks at
/// the directory's entries (names, sizes, times) and reads only the files
/// that are new or changed, so that a page of the list costs a directory
/// scan, not a parse of every document.
pub struct Index {
    dir: PathBuf,
    redact: bool,
    state: Mutex<Entries>,
    /// Renders under way (at most [`RENDERS`]).
    renders: std::sync::atomic::AtomicUsize,
}

/// A render slot, given back when dropped.
#[derive(Debug)]
struct Rendering<'a>(&'a std::sync::atomic::AtomicUsize);

impl Drop for Rendering<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

struct Entries {
    dir: PathBuf,
    redact: bool,
    /// By file name.
    files: HashMap<String, Entry>,
    /// The names looked at, newest first.
    order: Vec<String>,
}

impl Index {
    pub fn new(dir: PathBuf, redact: bool) -> Self {
        Index {
            state: Mutex::new(Entries {
                dir: dir.clone(),
                redact,
                files: HashMap::new(),
                order: vec![],
            }),
            dir,
            redact,
            renders: Default::default(),
        }
    }

    /// A render slot, or the `503` to answer when [`RENDERS`] are under way.
    fn render_slot(&self) -> Result<Rendering<'_>, Response> {
        use std::sync::atomic::Ordering;
        let n = self.renders.fetch_add(1, Ordering::AcqRel);
        let slot = Rendering(&self.renders);
        if n >= RENDERS {
            return Err(
                Response::text(503, "busy: other pages are being rendered; try again\n")
                    .with("Retry-After", "1"),
            );
        }
        Ok(slot)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether `name` (with metadata `m`, not following a symlink) is a file the
/// server may list: a regular file named `*.json`, not hidden.
fn candidate(name: &str, m: &std::fs::Metadata) -> bool {
    m.is_file() && name.ends_with(".json") && !name.starts_with('.')
}

impl Entries {
    /// Reads what changed in DIR since the last look (stops reading when
    /// the client has gone).
    fn refresh(&mut self, gone: &Gone) {
        let mut seen: Vec<(SystemTime, String, Key)> = std::fs::read_dir(&self.dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter_map(|e| {
                        let name = e.file_name().into_string().ok()?;
                        let meta = e.metadata().ok()?;
                        candidate(&name, &meta).then(|| {
                            let k = Key::of(&meta);
                            (k.mtime, name, k)
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        seen.sort_by(|a, b| (b.0, &b.1).cmp(&(a.0, &a.1)));
        seen.truncate(MAX_INDEXED);
        let names: std::collections::HashSet<&str> =
            seen.iter().map(|(_, n, _)| n.as_str()).collect();
        self.files.retain(|n, _| names.contains(n.as_str()));
        for (_, name, key) in &seen {
            if gone.is_set() {
                break;
            }
            self.update(name, *key);
        }
        self.order = seen.into_iter().map(|(_, n, _)| n).collect();
    }

    /// The entry of `name` as of `key`, read again if it changed.
    fn update(&mut self, name: &str, key: Key) -> &Entry {
        let stale = self.files.get(name).is_none_or(|e| e.key != key);
        if stale {
            let kind = if key.len > MAX_DOCUMENT {
                Kind::TooLarge
            } else {
                match read(&self.dir.join(name), false) {
                    Ok(doc) if self.redact => {
                        let (doc, shown) = crate::report::redact::served(&doc, name, &self.dir);
                        Kind::Result(row_of(&doc, shown))
                    }
                    Ok(doc) => Kind::Result(row_of(&doc, name.to_string())),
                    Err(_) => Kind::Other,
                }
            };
            self.files.insert(name.to_string(), Entry { key, kind });
        }
        &self.files[name]
    }

    /// The listed file a request names (percent-encoded), with its key as
    /// of now; else the answer: what the list does not show is not served.
    /// With `--redact`, files are named by their alias (the names carry
    /// hosts): a request by the name itself is not found.
    fn lookup(&mut self, raw: &str) -> Result<(String, PathBuf, Entry), Response> {
        let unaliased;
        let raw = match self.redact {
            true => match crate::report::redact::unalias(&self.dir, raw) {
                Some(n) => {
                    unaliased = href(&n);
                    unaliased.as_str()
                }
                None => return Err(Response::text(404, "no such result\n")),
            },
            false => raw,
        };
        let path = resolve(&self.dir, raw)?;
        // The name asked for (`resolve` has checked it), not its target's.
        let name = percent_encoding::percent_decode_str(raw)
            .decode_utf8_lossy()
            .into_owned();
        let not_listed = || Response::text(404, "no such result\n");
        // As the list sees it: the entry itself, not a symlink's target.
        let meta = std::fs::symlink_metadata(self.dir.join(&name)).map_err(|_| not_listed())?;
        if !candidate(&name, &meta) {
            return Err(not_listed());
        }
        let e = self.update(&name, Key::of(&meta)).clone();
        match e.kind {
            Kind::Result(_) => Ok((name, path, e)),
            Kind::TooLarge => Err(too_large()),
            Kind::Other => Err(not_listed()),
        }
    }
}

fn too_large() -> Response {
    Response::text(
        413,
        format!(
            "too large: result documents over {} MiB are not served\n",
            MAX_DOCUMENT >> 20
        ),
    )
}

/// The list's figures of a document.
fn row_of(doc: &ResultDocument, name: String) -> Row {
    Row {
        name,
        experiment: doc.experiment.clone(),
        host: doc.system.hostname.clone().unwrap_or_else(|| "–".into()),
        started: doc.started_at.clone(),
        duration: crate::report::html::duration_text(doc),
        figures: key_figures(doc),
        warnings: crate::report::html::doc_warnings(doc).len(),
    }
}

fn page(index: &Index, req: &Request) -> Response {
    let html = |status, body: String| Response::new(status, "text/html; charset=utf-8", body);
    let redact = index.redact;
    if req.path == "/" || req.path == "/index.html" {
        return html(200, list(index, None, &req.gone));
    }
    if let Some(name) = req.path.strip_prefix("/base/") {
        let found = index.lock().lookup(name);
        return match found {
            Err(r) => r,
            Ok((base, _, _)) => html(200, list(index, Some(&base), &req.gone)),
        };
    }
    if let Some(pair) = req.path.strip_prefix("/compare/") {
        let Some((a, b)) = pair.split_once('/') else {
            return Response::text(404, "not found: /compare/BASE.json/RUN.json\n");
        };
        let found = {
            let mut ix = index.lock();
            (ix.lookup(a), ix.lookup(b))
        };
        return match (found, index.render_slot()) {
            ((Err(r), _) | (_, Err(r)), _) | (_, Err(r)) => r,
            ((Ok((_, pa, _)), Ok((_, pb, _))), Ok(_slot)) => compare(&pa, &pb, redact, &req.gone),
        };
    }
    if let Some(name) = req.path.strip_prefix("/run/") {
        let found = index.lock().lookup(name);
        return match (found, index.render_slot()) {
            (Err(r), _) | (_, Err(r)) => r,
            (Ok((_, p, _)), Ok(_slot)) => match read(&p, redact) {
                Ok(doc) => html(200, crate::report::render_html(std::slice::from_ref(&doc))),
                Err(r) => r,
            },
        };
    }
    if let Some(name) = req.path.strip_prefix("/raw/") {
        let found = index.lock().lookup(name);
        return match found {
            Err(r) => r,
            Ok((_, p, _)) if redact => match index.render_slot() {
                Err(r) => r,
                Ok(_slot) => match read(&p, true) {
                    Ok(doc) => Response::new(200, "application/json", doc.to_json()),
                    Err(r) => r,
                },
            },
            Ok((name, p, e)) => raw(index, &name, &p, e.key),
        };
    }
    Response::text(
        404,
        "not found: try /, /run/NAME.json, /raw/NAME.json, /base/NAME.json or /compare/BASE.json/NAME.json\n",
    )
}

/// `/raw/NAME`: the file as it is, streamed (read a chunk at a time as the
/// client takes it), if what is opened is the version the index read.
fn raw(index: &Index, name: &str, p: &Path, key: Key) -> Response {
    use std::os::unix::fs::OpenOptionsExt;
    let Ok(f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(p)
    else {
        return Response::text(404, "no such result\n");
    };
    let Ok(meta) = f.metadata() else {
        return Response::text(404, "no such result\n");
    };
    let now = Key::of(&meta);
    if now != key {
        // Replaced or rewritten since it was looked up: read again, and
        // serve the version opened only if it is a result too.
        let e = index.lock().update(name, now).clone();
        match e.kind {
            Kind::Result(_) if meta.is_file() => {}
            Kind::TooLarge => return too_large(),
            _ => return Response::text(404, "no such result\n"),
        }
    }
    if now.len > MAX_DOCUMENT {
        return too_large();
    }
    Response::file("application/json", f, now.len)
}

/// The comparison page of two results (the first the baseline), as
/// `rtscope compare A B --html` renders it.
fn compare(a: &Path, b: &Path, redact: bool, gone: &Gone) -> Response {
    use crate::report::{compare, run_names, Run};
    let paths = [a.to_path_buf(), b.to_path_buf()];
    // Redacted: named by file stem, never by the served directory's path.
    let names = match redact {
        true => paths
            .iter()
            .flat_map(|p| run_names(std::slice::from_ref(p)))
            .collect(),
        false => run_names(&paths),
    };
    let mut runs = Vec::new();
    for (p, name) in paths.iter().zip(names) {
        if gone.is_set() {
            return Response::text(503, "the client has gone\n");
        }
        match read_as_is(p, redact) {
            Ok(doc) => runs.push(Run {
                name,
                path: match redact {
                    // The whole path, for the user names it holds.
                    true => p.clone(),
                    false => p.file_name().map(PathBuf::from).unwrap_or_default(),
                },
                doc,
            }),
            Err(r) => return r,
        }
    }
    if redact {
        match a.parent() {
            Some(dir) => crate::report::redact::served_runs(&mut runs, dir),
            None => crate::report::redact::runs(&mut runs),
        };
        for (run, p) in runs.iter_mut().zip(&paths) {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            run.path = crate::report::redact::alias(&name).into();
        }
    }
    let settings = crate::report::verdict::Settings::default();
    match compare::build_with(String::new(), runs, &[], &settings) {
        Ok(c) if c.series.is_empty() => Response::text(
            422,
            "no series in common (labels differ): compare them with rtscope compare --match A=B\n",
        ),
        Ok(c) => Response::new(200, "text/html; charset=utf-8", compare::html_page(&[c])),
        Err(e) => Response::text(422, format!("{e}\n")),
    }
}

/// Percent-encodes a file name for a link (all but unreserved characters).
fn href(name: &str) -> String {
    use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
    const KEEP: &percent_encoding::AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~');
    utf8_percent_encode(name, KEEP).to_string()
}

/// The key figures of a document in one line: `worst max 952.3 µs · p99 46.3 µs · ...`.
fn key_figures(doc: &ResultDocument) -> String {
    crate::report::answer::figures(doc)
        .iter()
        .take(5)
        .map(|f| format!("{} {}", f.label, f.value))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The list of result documents in DIR, newest first, with their key
/// figures; with `base` picked, every other run links to its comparison
/// with it, else each links to be picked as the baseline.
fn list(index: &Index, base: Option<&str>, gone: &Gone) -> String {
    let (dir, redact) = (index.dir.as_path(), index.redact);
    let (listed, too_large) = {
        let mut ix = index.lock();
        ix.refresh(gone);
        let rows: Vec<(String, Row)> = ix
            .order
            .iter()
            .filter_map(|n| match &ix.files.get(n)?.kind {
                Kind::Result(r) => Some((n.clone(), r.clone())),
                _ => None,
            })
            .take(MAX_LISTED)
            .collect();
        let big = ix
            .files
            .values()
            .filter(|e| matches!(e.kind, Kind::TooLarge))
            .count();
        (rows, big)
    };
    // Only runs of the baseline's experiment are offered to compare with it.
    let base_experiment = base.and_then(|b| {
        listed
            .iter()
            .find(|(n, _)| n == b)
            .map(|(_, r)| r.experiment.clone())
    });
    let mut rows = String::new();
    let shown = listed.len();
    for (name, doc) in &listed {
        let h = match redact {
            true => crate::report::redact::alias(name),
            false => href(name),
        };
        let pick = match base {
            Some(b) if b == name => "<b>baseline</b> (<a href=\"../\">clear</a>)".to_string(),
            Some(_) if base_experiment.as_deref() != Some(doc.experiment.as_str()) => {
                "another experiment".to_string()
            }
            Some(b) if redact => format!(
                "<a href=\"../compare/{}/{h}\">compare with the baseline</a>",
                crate::report::redact::alias(b),
            ),
            Some(b) => format!(
                "<a href=\"../compare/{}/{h}\">compare with {}</a>",
                href(b),
                esc(b)
            ),
            None => format!("<a href=\"base/{h}\">pick as baseline</a>"),
        };
        let up = if base.is_some() { "../" } else { "" };
        rows.push_str(&format!(
            "<tr><td class=\"l\"><a href=\"{up}run/{h}\">{n}</a></td><td class=\"l\">{e}</td><td class=\"l\">{host}</td><td class=\"l\">{t}</td><td>{dur}</td><td class=\"l\">{fig}</td><td>{w}</td><td class=\"l\">{pick}</td><td><a href=\"{up}raw/{h}\">json</a></td></tr>\n",
            n = esc(&doc.name),
            e = esc(&doc.experiment),
            host = esc(&doc.host),
            t = esc(&doc.started),
            dur = esc(&doc.duration),
            fig = esc(&doc.figures),
            w = doc.warnings,
        ));
    }
    let shown_dir = dir.display().to_string();
    let shown_dir = if redact {
        "the served directory".to_string()
    } else {
        shown_dir
    };
    let how = match base {
        Some(_) if redact => "Baseline picked. Pick the run to compare with it.".to_string(),
        Some(b) => format!(
            "Baseline: <b>{}</b>. Pick the run to compare with it.",
            esc(b)
        ),
        None => "Pick a run as the baseline, then the run to compare with it.".into(),
    };
    let left_out = match too_large {
        0 => String::new(),
        n => format!(
            " {n} file{} over {} MiB left out.",
            if n == 1 { "" } else { "s" },
            MAX_DOCUMENT >> 20
        ),
    };
    let body = format!(
        "<h1>rtscope results</h1><p>{shown} result document{} in {}.{left_out} {how}</p>\
         <table class=\"runs\"><thead><tr><th class=\"l\">file</th><th class=\"l\">experiment</th><th class=\"l\">host</th><th class=\"l\">started</th><th>duration</th><th class=\"l\">key figures</th><th>warnings</th><th class=\"l\">compare</th><th></th></tr></thead><tbody>{rows}</tbody></table>",
        if shown == 1 { "" } else { "s" },
        esc(&shown_dir)
    );
    crate::report::html::page("rtscope results", &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The body of an answer, a file's read whole.
    fn body_of(r: &Response) -> Vec<u8> {
        use std::io::Read;
        match &r.file {
            Some(f) => {
                let mut b = vec![];
                (&*f.file).take(f.len).read_to_end(&mut b).unwrap();
                b
            }
            None => r.body.clone(),
        }
    }

    #[test]
    fn pages_list_render_and_return_results() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().canonicalize().unwrap();
        let doc = ResultDocument::new(
            "cyclic",
            serde_json::json!({}),
            rtscope_core::system::SystemSnapshot::default(),
            vec![],
        );
        doc.write(&dir.join("my run.json")).unwrap();
        // Results under names the list leaves out: a dotfile, not .json.
        doc.write(&dir.join(".hidden.json")).unwrap();
        doc.write(&dir.join("notes.txt")).unwrap();
        std::fs::write(dir.join("other.json"), "{\"not\": \"a result\"}").unwrap();
        let index = Index::new(dir.clone(), false);
        let get = |path: &str| page(&index, &Request::get(path));
        for index in ["/", "/index.html"] {
            let r = get(index);
            assert_eq!(r.status, 200, "{index}");
            let body = String::from_utf8(r.body).unwrap();
            assert!(body.contains("1 result document in"), "{body}");
            assert!(body.contains("href=\"run/my%20run.json\""), "{body}");
        }
        let r = get("/run/my%20run.json");
        assert_eq!(r.status, 200);
        assert!(String::from_utf8(r.body).unwrap().contains("<html"));
        assert_eq!(body_of(&get("/raw/my%20run.json")), doc.to_json());
        // Not a result: not listed, so not served either.
        assert_eq!(get("/run/other.json").status, 404);
        assert_eq!(get("/raw/other.json").status, 404);
        assert_eq!(get("/nope").status, 404);
        assert_eq!(href("a b/ü-_.~.json"), "a%20b%2F%C3%BC-_.~.json");
    }

    fn doc_of(base_ns: i64, host: &str) -> ResultDocument {
        use rtscope_core::record::SeriesRecorder;
        use rtscope_core::sample::Sample;
        let mut r = SeriesRecorder::new(0, 4, None).over_intended_periods(1_000_000);
        for seq in 0..2000u64 {
            r.record(&Sample {
                seq,
                t_ns: seq * 1_000_000,
                latency_ns: base_ns + (seq % 10) as i64 * 100,
                overruns: 0,
                cpu: 0,
            });
        }
        let mut d = ResultDocument::new(
            "cyclic",
            serde_json::json!({"period_ns": 1_000_000}),
            rtscope_core::system::SystemSnapshot::default(),
            vec![r.to_series("all", 0)],
        );
        d.system.hostname = Some(host.into());
        d.system.cmdline = Some("root=/dev/vda secret=42".into());
        d.duration_ns = 2_000_000_000;
        d
    }

    /// The list shows key figures, picks a baseline, links the comparison;
    /// the comparison renders; --redact leaves the host out everywhere.
    #[test]
    fn the_list_picks_two_runs_to_compare() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().canonicalize().unwrap();
        doc_of(20_000, "lab-box-7")
            .write(&dir.join("a.json"))
            .unwrap();
        doc_of(40_000, "lab-box-7")
            .write(&dir.join("b.json"))
            .unwrap();
        let mut other = doc_of(40_000, "lab-box-7");
        other.experiment = "ipc".into();
        other.write(&dir.join("c.json")).unwrap();
        let plain = Index::new(dir.clone(), false);
        let redacted = Index::new(dir.clone(), true);
        let get = |path: &str, redact: bool| {
            let r = page(if redact { &redacted } else { &plain }, &Request::get(path));
            (r.status, String::from_utf8(body_of(&r)).unwrap())
        };
        let (st, index) = get("/", false);
        assert_eq!(st, 200);
        assert!(index.contains("worst max 20.9 µs · p99 20.9 µs"), "{index}");
        assert!(index.contains("worst max 40.9 µs"), "{index}");
        assert!(
            index.contains("href=\"base/a.json\">pick as baseline"),
            "{index}"
        );
        let (st, picked) = get("/base/a.json", false);
        assert_eq!(st, 200);
        assert!(picked.contains("Baseline: <b>a.json</b>"), "{picked}");
        assert!(
            picked.contains("href=\"../compare/a.json/b.json\">compare with a.json"),
            "{picked}"
        );
        assert!(!picked.contains("compare/a.json/a.json"), "{picked}");
        assert!(!picked.contains("compare/a.json/c.json"), "{picked}");
        assert!(
            picked.contains("<td class=\"l\">another experiment</td>"),
            "{picked}"
        );
        assert!(picked.contains("href=\"../run/b.json\""), "{picked}");
        let (st, cmp) = get("/compare/a.json/b.json", false);
        assert_eq!(st, 200, "{cmp}");
        assert!(cmp.contains("<h1>rtscope comparison: a vs b</h1>"), "{cmp}");
        assert!(cmp.contains("b is worse than a"), "{cmp}");
        assert_eq!(get("/compare/a.json", false).0, 404);
        assert_eq!(get("/compare/a.json/..%2Fx.json", false).0, 403);
        assert_eq!(get("/base/missing.json", false).0, 404);
        // Redacted: no host name, no kernel command line, in any page.
        for path in [
            "/",
            "/base/a.json",
            "/run/a.json",
            "/raw/a.json",
            "/compare/a.json/b.json",
        ] {
            let (st, body) = get(path, false);
            assert_eq!(st, 200, "{path}");
            assert!(
                body.contains("lab-box-7"),
                "{path} unredacted shows the host"
            );
            // Files are named by their alias, segment by segment: an
            // alias may itself end in "b.json" (its last hex digit).
            let path = path
                .split('/')
                .map(|s| match s {
                    "a.json" | "b.json" => crate::report::redact::alias(s),
                    s => s.to_string(),
                })
                .collect::<Vec<_>>()
                .join("/");
            let (st, body) = get(&path, true);
            assert_eq!(st, 200, "{path}");
            assert!(!body.contains("lab-box-7"), "{path}: {body}");
            assert!(!body.contains("secret=42"), "{path}: {body}");
        }
    }

    #[test]
    fn renders_beyond_the_bound_are_answered_busy() {
        let index = Index::new(PathBuf::from("/nonexistent"), false);
        let a = index.render_slot().unwrap();
        let b = index.render_slot().unwrap();
        let busy = index.render_slot().unwrap_err();
        assert_eq!(busy.status, 503);
        assert_eq!(busy.headers, vec![("Retry-After", "1")]);
        drop(a);
        let _c = index.render_slot().unwrap();
        assert!(index.render_slot().is_err());
        drop(b);
    }

    #[test]
    fn traversal_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().canonicalize().unwrap();
        std::fs::write(dir.join("a.json"), "{}").unwrap();
        std::fs::create_dir(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/b.json"), "{}").unwrap();
        // Files that exist in DIR but that the name rules refuse.
        std::fs::write(dir.join(".hidden.json"), "{}").unwrap();
        std::fs::write(dir.join("a.txt"), "{}").unwrap();
        std::fs::write(dir.join("x\\y.json"), "{}").unwrap();
        assert!(resolve(&dir, "a.json").is_ok());
        assert!(resolve(&dir, "a%2Ejson").is_ok(), "an escaped dot decodes");
        for bad in [
            "../a.json",
            "..%2Fa.json",
            "sub/b.json",
            "sub%2fb.json",
            ".hidden.json",
            "x%5Cy.json",
            "%2e%2e%2fetc%2fpasswd",
            "a.txt",
            "a.json%00",
            "",
        ] {
            let r = resolve(&dir, bad).unwrap_err();
            assert!((400..500).contains(&r.status), "{bad}: {}", r.status);
        }
        assert_eq!(resolve(&dir, "missing.json").unwrap_err().status, 404);
        // A symlink out of DIR is refused too.
        let outside = tempfile::NamedTempFile::new().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.join("link.json")).unwrap();
        assert_eq!(resolve(&dir, "link.json").unwrap_err().status, 403);
    }
}
