//! `rtscope import`: other tools' outputs turned into rtscope result
//! documents, so that old measurements can be reported and compared with new
//! ones. Malformed input is one line on stderr and exit code 2.

pub mod cyclictest;

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use anyhow::{Context, Result};

use crate::cli::{ImportCyclictestArgs, ImportSource};
use crate::error::{usage, EXIT_OK};

/// `rtscope import SOURCE ...`.
pub fn run(s: ImportSource) -> Result<i32> {
    match s {
        ImportSource::Cyclictest(a) => run_cyclictest(a),
    }
}

/// The largest JSON input read (cyclictest's --json of a long run with -h is
/// a few MiB): beyond it the file is refused rather than read into memory.
pub const MAX_JSON_BYTES: u64 = 256 << 20;

/// Reads a whole JSON input, refusing one larger than [`MAX_JSON_BYTES`]
/// (also a device such as `/dev/zero`) without reading it all.
pub fn read_json_input(p: &Path) -> Result<Vec<u8>> {
    let name = p.display();
    let f = File::open(p).map_err(|e| usage(format!("{name}: {e}")))?;
    let meta = f.metadata().map_err(|e| usage(format!("{name}: {e}")))?;
    if meta.is_dir() {
        return Err(usage(format!("{name}: is a directory")));
    }
    let too_large = || {
        usage(format!(
            "{name}: larger than {} MiB: not a cyclictest JSON file",
            MAX_JSON_BYTES >> 20
        ))
    };
    if meta.is_file() && meta.len() > MAX_JSON_BYTES {
        return Err(too_large());
    }
    let mut input = BufReader::with_capacity(64 << 10, f.take(MAX_JSON_BYTES + 1));
    // JSON input is an object: anything else (`/dev/zero`, a binary file) is
    // refused at its first byte, before it is read on.
    let head = input
        .fill_buf()
        .map_err(|e| usage(format!("{name}: {e}")))?;
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    if let Some(b) = head.iter().find(|b| !b.is_ascii_whitespace()) {
        if *b != b'{' {
            return Err(usage(format!(
                "{name}: not a cyclictest JSON file: it does not start with '{{'"
            )));
        }
    }
    let mut bytes = Vec::new();
    input
        .read_to_end(&mut bytes)
        .map_err(|e| usage(format!("{name}: {e}")))?;
    if bytes.len() as u64 > MAX_JSON_BYTES {
        return Err(too_large());
    }
    Ok(bytes)
}

fn run_cyclictest(a: ImportCyclictestArgs) -> Result<i32> {
    let input = a.json.as_ref().or(a.histogram.as_ref());
    if let Some(p) = input {
        crate::report::refuse_output_onto_input("--output", &a.output, &[p.as_path()])?;
    }
    crate::output::files::check_output("--output", &a.output)?;
    let (path, doc) = if let Some(p) = &a.json {
        let bytes = read_json_input(p)?;
        let doc = cyclictest::from_json(&bytes, cyclictest::file_time(p))
            .map_err(|e| usage(format!("{}: {e}", p.display())))?;
        (p, doc)
    } else if let Some(p) = &a.histogram {
        let f = File::open(p).map_err(|e| usage(format!("{}: {e}", p.display())))?;
        if f.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(usage(format!("{}: is a directory", p.display())));
        }
        let doc = cyclictest::from_histogram_reader(
            BufReader::with_capacity(1 << 16, f),
            cyclictest::file_time(p),
            a.nsecs,
        )
        .map_err(|e| usage(format!("{}: {e}", p.display())))?;
        (p, doc)
    } else {
        return Err(usage("give --json FILE or --histogram FILE"));
    };
    for w in doc
        .warnings
        .iter()
        .filter(|w| w.ends_with(cyclictest::TRUNCATED))
    {
        eprintln!("warning: {}: {w}", path.display());
    }
    doc.write(&a.output)
        .with_context(|| format!("--output {}", a.output.display()))?;
    let all = doc.series.last();
    crate::output::outln!(
        "imported {} series ({} samples) from {} into {}",
        doc.series.len(),
        all.map_or(0, |s| s.stats.count),
        path.display(),
        a.output.display()
    );
    Ok(EXIT_OK)
}
