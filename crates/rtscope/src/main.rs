//! rtscope: a real-time latency lab for Linux.
//!
//! `main` only parses, dispatches and maps errors to exit codes: 0 success,
//! 1 the measurement could not run, 2 bad usage or bad input, 3 a gate
//! (`--fail-if`, `--fail-above`) failed.

// No unsafe code in the binary: libc is reached through rtscope_core::sys.
#![forbid(unsafe_code)]
// stdout goes through output::say (a closed pipe never panics).
#![warn(clippy::print_stdout)]

mod check;
mod cli;
mod error;
mod experiment;
mod gate;
mod import;
mod limits;
mod live;
mod load;
mod output;
mod overload;
mod report;
mod signals;

use clap::error::ErrorKind;
use clap::Parser;

use cli::{Cli, Command};

/// The environment variable by which a parent rtscope (`qualify`'s steps)
/// asks its child to stop when the parent dies: its value is the parent's
/// process id.
pub const DIE_WITH_ENV: &str = "RTSCOPE_DIE_WITH";

/// A child started with [`DIE_WITH_ENV`] gets SIGTERM when its parent dies
/// (even of SIGKILL): a stop, so the step gives back what it took (trace
/// instances, loads) and writes what it has. A parent already gone before
/// this ran is one too. The variable is taken out of the environment first,
/// so the step's own children (load workers) do not see it.
fn die_with_parent() {
    let Some(v) = std::env::var_os(DIE_WITH_ENV) else {
        return;
    };
    std::env::remove_var(DIE_WITH_ENV);
    let Some(parent) = v.to_str().and_then(|v| v.parse::<i32>().ok()) else {
        return;
    };
    if rtscope_core::sys::set_parent_death_signal(libc::SIGTERM).is_err()
        || rtscope_core::sys::getppid() != parent
    {
        eprintln!("error: the rtscope that started this step (pid {parent}) is gone");
        std::process::exit(error::EXIT_RUN);
    }
}

fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Cyclic(a) => experiment::cyclic::run(&a.options()?),
        Command::Cyclictest(a) => experiment::cyclictest::run(&a.args),
        Command::Ipc(a) if a.list => experiment::ipc::list(),
        Command::Ipc(a) if a.cleanup => experiment::ipc::cleanup(),
        Command::Ipc(a) => experiment::ipc::run(&a.options()?),
        Command::Check(a) => check::run(&a.plan()),
        Command::Qualify(a) => experiment::qualify::run(a),
        Command::Noise(a) => experiment::noise::run(&a.options()?),
        Command::Hwlat(a) => experiment::hwlat::run(&a.options()?),
        Command::Irq(a) => experiment::irq::run(&a.options()?),
        Command::Report(a) => report::run_report(a.options()),
        Command::Serve(a) => live::serve::run(&a.options()),
        Command::Compare(a) => report::compare::run(a.options()),
        Command::Pool(a) => experiment::repeat::run_pool(&a.options()),
        Command::Import(s) => import::run(s.options()),
        Command::Load(a) => experiment::load::run(a.options()),
        Command::Matrix(a) => experiment::matrix::run(a.options()?),
        Command::LoadWorker(a) => Ok(load::worker::main(
            &a.spec,
            a.instance,
            a.parent,
            a.cpus.as_deref(),
        )),
        Command::Clock(a) if a.list => experiment::clock::list(),
        Command::Clock(a) => experiment::clock::run(&a.options()?),
        Command::Period(a) => experiment::period::run(&a.options()?),
        Command::Timer(a) => experiment::timer::run(&a.options()?),
        Command::Completions(a) => cli::man::run_completions(a),
        Command::Man(a) => cli::man::run_man(a),
    }
}

fn main() {
    die_with_parent();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    let _ = e.print();
                    std::process::exit(error::EXIT_OK);
                }
                ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    let _ = e.print();
                    std::process::exit(error::EXIT_USAGE);
                }
                _ => {}
            }
            // One line: clap's first line, without the usage block.
            eprintln!(
                "{} (see --help)",
                error::clap_one_line(&e.render().to_string())
            );
            std::process::exit(error::EXIT_USAGE);
        }
    };
    // The stop and fatal signals are caught from here on: a stop while a
    // run sets up gives back what it took (the load workers have their own
    // way; the pages and completions take nothing).
    if !matches!(
        cli.command,
        Command::LoadWorker(_) | Command::Completions(_) | Command::Man(_)
    ) {
        if let Err(e) = signals::install_handlers() {
            eprintln!("error: installing the signal handlers: {e}");
            std::process::exit(error::EXIT_RUN);
        }
    }
    let code = match run(cli) {
        Ok(code) => code,
        Err(e) => {
            // An error of a signal's making: the signal says how it ended.
            signals::wait_if_exiting();
            eprintln!("error: {}", error::one_line(&e));
            error::exit_code(&e)
        }
    };
    let code = match output::stdout_error() {
        Some(e) => {
            eprintln!("error: writing to stdout: {e} (the output above is incomplete)");
            code.max(error::EXIT_RUN)
        }
        None => code,
    };
    std::process::exit(code);
}
