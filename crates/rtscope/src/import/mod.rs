//! `rtscope import`: other tools' outputs turned into rtscope result
//! documents, so that old measurements can be reported and compared with new
//! ones. Malformed input is one line on stderr and exit code 2.

pub mod cyclictest;

use anyhow::{Context, Result};

use crate::cli::{ImportCyclictestArgs, ImportSource};
use crate::error::{usage, EXIT_OK};

/// `rtscope import SOURCE ...`.
pub fn run(s: ImportSource) -> Result<i32> {
    match s {
        ImportSource::Cyclictest(a) => run_cyclictest(a),
    }
}

fn run_cyclictest(a: ImportCyclictestArgs) -> Result<i32> {
    crate::output::files::check_output("--output", &a.output)?;
    let (path, doc) = if let Some(p) = &a.json {
        let bytes = std::fs::read(p).map_err(|e| usage(format!("{}: {e}", p.display())))?;
        let doc = cyclictest::from_json(&bytes, cyclictest::file_time(p))
            .map_err(|e| usage(format!("{}: {e}", p.display())))?;
        (p, doc)
    } else if let Some(p) = &a.histogram {
        let bytes = std::fs::read(p).map_err(|e| usage(format!("{}: {e}", p.display())))?;
        let text = String::from_utf8_lossy(&bytes);
        let doc = cyclictest::from_histogram(&text, cyclictest::file_time(p), a.nsecs)
            .map_err(|e| usage(format!("{}: {e}", p.display())))?;
        (p, doc)
    } else {
        return Err(usage("give --json FILE or --histogram FILE"));
    };
    doc.write(&a.output)
        .with_context(|| format!("--output {}", a.output.display()))?;
    let all = doc.series.last();
    println!(
        "imported {} series ({} samples) from {} into {}",
        doc.series.len(),
        all.map_or(0, |s| s.stats.count),
        path.display(),
        a.output.display()
    );
    Ok(EXIT_OK)
}
