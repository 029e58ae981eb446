//! `rtscope completions` and `rtscope man`.

use super::*;

#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for, e.g. `rtscope completions bash > /etc/bash_completion.d/rtscope`.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// Write rtscope.1 and one page per subcommand (rtscope-cyclic.1, ...) to DIR
    /// (created if missing) instead of printing rtscope(1).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
}
