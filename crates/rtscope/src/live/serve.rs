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
//! served directory, and names each file by its alias
//! ([`crate::report::redact::alias`]) instead of its name.

use std::path::{Path, PathBuf};

use anyhow::Result;

use rtscope_core::result::ResultDocument;

use super::http::{self, Request, Response};
use crate::error::{usage, EXIT_OK};
use crate::report::esc;

/// The most documents the list shows.
const MAX_LISTED: usize = 1000;

/// What `rtscope serve` serves, where.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// The directory of result documents.
    pub dir: std::path::PathBuf,
    /// HOST:PORT to listen on.
    pub listen: String,
    /// Allow an address other than loopback.
    pub listen_any: bool,
    /// Leave out what identifies the machine.
    pub redact: bool,
}

pub fn run(a: &ServeOptions) -> Result<i32> {
    let dir = a
        .dir
        .canonicalize()
        .map_err(|e| usage(format!("{}: {e}", a.dir.display())))?;
    if !dir.is_dir() {
        return Err(usage(format!("{}: not a directory", a.dir.display())));
    }
    let listener = http::bind(&a.listen, a.listen_any)?;
    let bound = listener
        .local_addr()
        .map_or_else(|_| a.listen.clone(), |x| x.to_string());
    let signals = crate::signals::StopSignals::install()?;
    crate::output::say(&format!(
        "serving the results in {} on http://{bound}/ (Ctrl-C stops)\n",
        crate::output::printable(&dir.display().to_string())
    ));
    let flag = signals.flag.clone();
    let redact = a.redact;
    http::serve(
        listener,
        &flag,
        http::Pages::blocking(move |req| page(&dir, req, redact)),
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
        true => crate::report::redact::document(&d),
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

fn page(dir: &Path, req: &Request, redact: bool) -> Response {
    // With --redact, files are named by their alias (the names carry hosts).
    let resolve = |dir: &Path, name: &str| match redact {
        true => match crate::report::redact::unalias(dir, name) {
            Some(n) => resolve(dir, &href(&n)),
            None => Err(Response::text(404, "no such result\n")),
        },
        false => resolve(dir, name),
    };
    let html = |status, body: String| Response::new(status, "text/html; charset=utf-8", body);
    if req.path == "/" || req.path == "/index.html" {
        return html(200, list(dir, None, redact));
    }
    if let Some(name) = req.path.strip_prefix("/base/") {
        return match resolve(dir, name) {
            Err(r) => r,
            Ok(p) => {
                let base = p.file_name().map(|n| n.to_string_lossy().into_owned());
                html(200, list(dir, base.as_deref(), redact))
            }
        };
    }
    if let Some(pair) = req.path.strip_prefix("/compare/") {
        let Some((a, b)) = pair.split_once('/') else {
            return Response::text(404, "not found: /compare/BASE.json/RUN.json\n");
        };
        return match (resolve(dir, a), resolve(dir, b)) {
            (Err(r), _) | (_, Err(r)) => r,
            (Ok(pa), Ok(pb)) => compare(&pa, &pb, redact),
        };
    }
    if let Some(name) = req.path.strip_prefix("/run/") {
        return match resolve(dir, name) {
            Err(r) => r,
            Ok(p) => match read(&p, redact) {
                Ok(doc) => html(200, crate::report::render_html(std::slice::from_ref(&doc))),
                Err(r) => r,
            },
        };
    }
    if let Some(name) = req.path.strip_prefix("/raw/") {
        return match resolve(dir, name) {
            Err(r) => r,
            Ok(p) if redact => match read(&p, true) {
                Ok(doc) => Response::new(200, "application/json", doc.to_json()),
                Err(r) => r,
            },
            Ok(p) => match std::fs::read(&p) {
                Ok(b) => Response::new(200, "application/json", b),
                Err(_) => Response::text(404, "no such result\n"),
            },
        };
    }
    Response::text(
        404,
        "not found: try /, /run/NAME.json, /raw/NAME.json, /base/NAME.json or /compare/BASE.json/NAME.json\n",
    )
}

/// The comparison page of two results (the first the baseline), as
/// `rtscope compare A B --html` renders it.
fn compare(a: &Path, b: &Path, redact: bool) -> Response {
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
        crate::report::redact::runs(&mut runs);
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

/// The list of result documents in `dir`, newest first, with their key
/// figures; with `base` picked, every other run links to its comparison
/// with it, else each links to be picked as the baseline.
fn list(dir: &Path, base: Option<&str>, redact: bool) -> String {
    let mut files: Vec<(std::time::SystemTime, String)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let name = e.file_name().into_string().ok()?;
                    let meta = e.metadata().ok()?;
                    (meta.is_file() && name.ends_with(".json") && !name.starts_with('.'))
                        .then(|| (meta.modified().unwrap_or(std::time::UNIX_EPOCH), name))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort_by(|a, b| b.cmp(a));
    // Only runs of the baseline's experiment are offered to compare with it.
    let base_experiment = base.and_then(|b| Some(read(&dir.join(b), false).ok()?.experiment));
    let mut rows = String::new();
    let mut shown = 0;
    for (_, name) in &files {
        if shown == MAX_LISTED {
            break;
        }
        // Only rtscope results are listed (other JSON files are skipped).
        let Ok(doc) = read(&dir.join(name), false) else {
            continue;
        };
        shown += 1;
        let (doc, shown_name) = match redact {
            true => crate::report::redact::served(&doc, name, dir),
            false => (doc, name.clone()),
        };
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
            n = esc(&shown_name),
            e = esc(&doc.experiment),
            host = esc(doc.system.hostname.as_deref().unwrap_or("–")),
            t = esc(&doc.started_at),
            dur = esc(&crate::report::html::duration_text(&doc)),
            fig = esc(&key_figures(&doc)),
            w = crate::report::html::doc_warnings(&doc).len(),
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
    let body = format!(
        "<h1>rtscope results</h1><p>{shown} result document{} in {}. {how}</p>\
         <table class=\"runs\"><thead><tr><th class=\"l\">file</th><th class=\"l\">experiment</th><th class=\"l\">host</th><th class=\"l\">started</th><th>duration</th><th class=\"l\">key figures</th><th>warnings</th><th class=\"l\">compare</th><th></th></tr></thead><tbody>{rows}</tbody></table>",
        if shown == 1 { "" } else { "s" },
        esc(&shown_dir)
    );
    crate::report::html::page("rtscope results", &body)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let get = |path: &str| page(&dir, &Request::get(path), false);
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
        assert_eq!(get("/raw/my%20run.json").body, doc.to_json());
        assert_eq!(get("/run/other.json").status, 422);
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
        let get = |path: &str, redact: bool| {
            let r = page(&dir, &Request::get(path), redact);
            (r.status, String::from_utf8(r.body).unwrap())
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
            // Files are named by their alias.
            let alias = |n: &str| crate::report::redact::alias(n);
            let path = path
                .replace("a.json", &alias("a.json"))
                .replace("b.json", &alias("b.json"));
            let (st, body) = get(&path, true);
            assert_eq!(st, 200, "{path}");
            assert!(!body.contains("lab-box-7"), "{path}: {body}");
            assert!(!body.contains("secret=42"), "{path}: {body}");
        }
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
