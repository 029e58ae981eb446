//! placeholder
pub fn run(_a: crate::cli::MatrixArgs) -> anyhow::Result<i32> {
    Ok(0)
}
