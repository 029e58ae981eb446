//! `rtscope serve DIR`: the result documents of a directory over HTTP, on
//! the live server ([`super::http`], with its bounds; pages are read and
//! rendered on its blocking threads): `/` lists them, `/run/NAME`
//! renders one's HTML report with the `report` module, `/raw/NAME` returns
//! the JSON. NAME is a plain file name in DIR: anything with a path
//! separator, a `..`, a leading dot or that resolves outside DIR is refused
//! (403); nothing is written.

use std::path::{Path, PathBuf};

use anyhow::Result;

use rtscope_core::result::ResultDocument;

use super::http::{self, Request, Response};
use crate::cli::ServeArgs;
use crate::error::{usage, EXIT_OK};
use crate::report::esc;

/// The most documents the list shows.
const MAX_LISTED: usize = 1000;

pub fn run(a: &ServeArgs) -> Result<i32> {
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
    let signals = crate::experiment::run::StopSignals::install()?;
    crate::output::say(&format!(
        "serving the results in {} on http://{bound}/ (Ctrl-C stops)\n",
        crate::output::printable(&dir.display().to_string())
    ));
    let flag = signals.flag.clone();
    http::serve(
        listener,
        &flag,
        http::Pages::blocking(move |req| page(&dir, req)),
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

fn page(dir: &Path, req: &Request) -> Response {
    let html = |status, body: String| Response::new(status, "text/html; charset=utf-8", body);
    if req.path == "/" || req.path == "/index.html" {
        return html(200, list(dir));
    }
    if let Some(name) = req.path.strip_prefix("/run/") {
        return match resolve(dir, name) {
            Err(r) => r,
            Ok(p) => match ResultDocument::read(&p) {
                Ok(doc) => html(200, crate::report::render_html(std::slice::from_ref(&doc))),
                Err(e) => Response::text(422, format!("not a result document: {e}\n")),
            },
        };
    }
    if let Some(name) = req.path.strip_prefix("/raw/") {
        return match resolve(dir, name) {
            Err(r) => r,
            Ok(p) => match std::fs::read(&p) {
                Ok(b) => Response::new(200, "application/json", b),
                Err(_) => Response::text(404, "no such result\n"),
            },
        };
    }
    Response::text(404, "not found: try /, /run/NAME.json or /raw/NAME.json\n")
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

/// The list of result documents in `dir`, newest first.
fn list(dir: &Path) -> String {
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
    let mut rows = String::new();
    let mut shown = 0;
    for (_, name) in &files {
        if shown == MAX_LISTED {
            break;
        }
        // Only rtscope results are listed (other JSON files are skipped).
        let Ok(doc) = ResultDocument::read(&dir.join(name)) else {
            continue;
        };
        shown += 1;
        rows.push_str(&format!(
            "<tr><td><a href=\"run/{h}\">{n}</a></td><td>{e}</td><td>{host}</td><td>{t}</td><td>{s}</td><td><a href=\"raw/{h}\">json</a></td></tr>\n",
            h = href(name),
            n = esc(name),
            e = esc(&doc.experiment),
            host = esc(doc.system.hostname.as_deref().unwrap_or("–")),
            t = esc(&doc.started_at),
            s = doc.series.len(),
        ));
    }
    let body = format!(
        "<h1>rtscope results</h1><p>{shown} result document{} in {}</p>\
         <table><thead><tr><th>file</th><th>experiment</th><th>host</th><th>started</th><th>series</th><th></th></tr></thead><tbody>{rows}</tbody></table>",
        if shown == 1 { "" } else { "s" },
        esc(&dir.display().to_string())
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
        let get = |path: &str| page(&dir, &Request::get(path));
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
