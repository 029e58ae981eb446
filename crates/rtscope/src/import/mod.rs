//! `rtscope import`: other tools' outputs turned into rtscope result
//! documents, so that old measurements can be reported and compared with new
//! ones. Malformed input is one line on stderr and exit code 2.

mod ctjson;
pub mod cyclictest;

use rtscope_core::file::{input_wait, open_input, Input};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::error::{usage, EXIT_OK};

/// What `rtscope import` reads, by the tool that wrote it.
#[derive(Debug, Clone)]
pub enum Import {
    Cyclictest(CyclictestImport),
}

/// A cyclictest output to import: its `--json` file or its histogram.
#[derive(Debug, Clone, Default)]
pub struct CyclictestImport {
    /// A file written by `cyclictest --json=FILE`.
    pub json: Option<PathBuf>,
    /// cyclictest's `-h`/`-H` histogram output.
    pub histogram: Option<PathBuf>,
    /// The histogram's bins and values are ns (`cyclictest -N`).
    pub nsecs: bool,
    /// The cyclictest command line the histogram came from.
    pub cmdline: Option<String>,
    /// Where the result document goes.
    pub output: PathBuf,
}

/// `rtscope import SOURCE ...`.
pub fn run(s: Import) -> Result<i32> {
    match s {
        Import::Cyclictest(a) => run_cyclictest(a),
    }
}

pub use crate::limits::MAX_JSON_BYTES;

/// Opens a JSON input to be read as a stream: refuses a directory, a file
/// larger than [`MAX_JSON_BYTES`], and anything that does not start with `{`
/// (`/dev/zero`, a binary file) at its first byte; skips a byte-order mark.
/// The reader stops with an error at [`MAX_JSON_BYTES`] (a FIFO or device
/// that goes on for ever); [`Capped::over`] then tells why.
pub fn open_json_input(p: &Path) -> Result<BufReader<Capped<Input>>> {
    let name = p.display();
    let f = open(p)?;
    let meta = f.metadata().map_err(|e| usage(format!("{name}: {e}")))?;
    if meta.is_dir() {
        return Err(usage(format!("{name}: is a directory")));
    }
    if meta.is_file() && meta.len() > MAX_JSON_BYTES {
        return Err(too_large(p));
    }
    let mut input = BufReader::with_capacity(
        64 << 10,
        Capped {
            inner: f,
            left: MAX_JSON_BYTES,
            over: false,
        },
    );
    let head = input
        .fill_buf()
        .map_err(|e| usage(format!("{name}: {e}")))?;
    let bom = head.starts_with(b"\xEF\xBB\xBF");
    let head = if bom { &head[3..] } else { head };
    if let Some(b) = head.iter().find(|b| !b.is_ascii_whitespace()) {
        if *b != b'{' {
            return Err(usage(format!(
                "{name}: not a cyclictest JSON file: it does not start with '{{'"
            )));
        }
    }
    if bom {
        input.consume(3);
    }
    Ok(input)
}

/// Opens an input so that a FIFO nobody writes to ends in an error after
/// [`input_wait`](rtscope_core::file::input_wait), not in a hang.
fn open(p: &Path) -> Result<Input> {
    let e = |e: std::io::Error| usage(format!("{}: {e}", p.display()));
    open_input(p, input_wait().map_err(e)?).map_err(e)
}

fn too_large(p: &Path) -> anyhow::Error {
    usage(format!(
        "{}: larger than {} MiB: not a cyclictest JSON file",
        p.display(),
        MAX_JSON_BYTES >> 20
    ))
}

/// A reader that fails after `left` bytes (and says so in `over`).
pub struct Capped<R> {
    inner: R,
    left: u64,
    over: bool,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            // One byte more tells a file of exactly the cap from a longer one.
            let mut one = [0u8; 1];
            if self.inner.read(&mut one)? == 0 {
                return Ok(0);
            }
            self.over = true;
            return Err(std::io::Error::other("input too large"));
        }
        let n = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let got = self.inner.read(&mut buf[..n])?;
        self.left -= got as u64;
        Ok(got)
    }
}

fn run_cyclictest(a: CyclictestImport) -> Result<i32> {
    let input = a.json.as_ref().or(a.histogram.as_ref());
    if let Some(p) = input {
        crate::output::files::refuse_output_onto_input("--output", &a.output, &[p.as_path()])?;
    }
    crate::output::files::check_output("--output", &a.output)?;
    let (path, doc) = if let Some(p) = &a.json {
        let mut input = open_json_input(p)?;
        let doc = cyclictest::from_json_reader(&mut input, cyclictest::file_time(p));
        if input.get_ref().over {
            return Err(too_large(p));
        }
        let doc = doc.map_err(|e| usage(format!("{}: {e}", p.display())))?;
        (p, doc)
    } else if let Some(p) = &a.histogram {
        let f = open(p)?;
        if f.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(usage(format!("{}: is a directory", p.display())));
        }
        let line = a
            .cmdline
            .as_deref()
            .map(crate::experiment::cyclictest::args::parse_cmdline)
            .transpose()
            .map_err(|e| usage(format!("--cmdline: {e}")))?;
        let nsecs = a.nsecs || line.is_some_and(|l| l.nsecs);
        let mut doc = cyclictest::from_histogram_reader(
            BufReader::with_capacity(1 << 16, f),
            cyclictest::file_time(p),
            nsecs,
        )
        .map_err(|e| usage(format!("{}: {e}", p.display())))?;
        if let Some(line) = &a.cmdline {
            cyclictest::with_cmdline(&mut doc, line).map_err(|e| usage(e.to_string()))?;
        }
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
