//! dtnc-emu: dtnconform's channel emulator, a transparent userspace bridge
//! between two interfaces of a middle network namespace, with each
//! direction impaired by `dtnc-core`'s link model. See `dtnc-emu --help`.

mod bridge;
mod logwriter;
mod ring;

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use dtnc_core::classify::Protocol;

#[derive(Parser)]
#[command(
    name = "dtnc-emu",
    version,
    about = "dtnconform's channel emulator: an AF_PACKET bridge with a per-direction link model \
             and field-keyed impairments"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Bridge the config's two interfaces until SIGINT or SIGTERM.
    Run(RunArgs),
    /// Validate a config (exit 2 naming the bad field), print "ok".
    Check {
        /// The emulator config (JSON, schema dtnconform/emulator/1).
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
    /// Read hex UDP payloads (one per line) on stdin; print each one's
    /// fields as a JSON object (null when it does not classify).
    Classify {
        /// The protocol to classify as.
        #[arg(value_parser = protocol_arg)]
        protocol: Protocol,
    },
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("logging").required(true).args(["log", "no_log"])))]
struct RunArgs {
    /// The emulator config (JSON, schema dtnconform/emulator/1).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Write the decision log (one JSON line per frame) here.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Write no decision log.
    #[arg(long)]
    no_log: bool,
    /// Apply this decision log's decisions frame by frame instead of
    /// drawing them.
    #[arg(long, value_name = "LOG")]
    replay: Option<PathBuf>,
    /// Write "ready <epoch ns of the scenario clock's zero>" here once bridging.
    #[arg(long, value_name = "FILE")]
    ready: Option<PathBuf>,
    /// Write the counters (JSON) here at the end.
    #[arg(long, value_name = "FILE")]
    stats: Option<PathBuf>,
}

/// A protocol name of the classifier registry (`dtnc_core::classify::CLASSIFIERS`).
fn protocol_arg(s: &str) -> Result<Protocol, String> {
    Protocol::from_name(s).ok_or_else(|| {
        let known: Vec<&str> = Protocol::all().map(Protocol::name).collect();
        format!("unknown protocol {s:?} (one of: {})", known.join(", "))
    })
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Classify { protocol } => classify_cmd(protocol),
        Command::Check { config } => match load(&config) {
            Ok(_) => {
                println!("ok");
                ExitCode::SUCCESS
            }
            Err(code) => code,
        },
        Command::Run(args) => run_cmd(args),
    }
}

fn classify_cmd(proto: Protocol) -> ExitCode {
    let stdin = std::io::stdin();
    let mut out = std::io::BufWriter::new(std::io::stdout());
    for (n, line) in stdin.lock().lines().enumerate() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let Some(bytes) = dtnc_core::classify::from_hex(&line) else {
            eprintln!("dtnc-emu classify: line {}: not hex", n + 1);
            return ExitCode::from(2);
        };
        let mut s = String::new();
        match proto.classify(&bytes) {
            None => s.push_str("null"),
            Some(fields) => {
                s.push('{');
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    dtnc_core::jsonw::write_str(&mut s, k);
                    s.push(':');
                    v.write_json(&mut s);
                }
                s.push('}');
            }
        }
        let _ = writeln!(out, "{s}");
    }
    ExitCode::SUCCESS
}

fn bad(msg: &str) -> ExitCode {
    eprintln!("dtnc-emu: {msg}");
    ExitCode::from(2)
}

/// Read and validate a config; exit status 2 and a message naming the
/// file and the field when it is bad.
fn load(path: &std::path::Path) -> Result<dtnc_core::Config, ExitCode> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| bad(&format!("{shown}: {e}")))?;
    dtnc_core::config::parse(&text).map_err(|e| bad(&format!("{shown}: field {e}")))
}

fn run_cmd(args: RunArgs) -> ExitCode {
    let cfg = match load(&args.config) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let replay = match &args.replay {
        None => None,
        Some(p) => match std::fs::read_to_string(p)
            .map_err(|e| e.to_string())
            .and_then(|t| dtnc_core::log::read_replay(&t))
        {
            Ok(r) => Some(r),
            Err(e) => return bad(&format!("--replay {}: {e}", p.display())),
        },
    };
    let log = match (&args.log, args.no_log) {
        (Some(p), false) => match std::fs::File::create(p) {
            Ok(f) => Some(f),
            Err(e) => return bad(&format!("--log {}: {e}", p.display())),
        },
        _ => None,
    };
    dtnc_sys::install_signal_handlers();
    // Timers fire when due, not up to 50 us later (the default slack).
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0) };
    let opts = bridge::Options {
        log,
        replay,
        ready: args.ready,
        stats: args.stats,
    };
    let mut emu = match bridge::Bridge::open(cfg, opts) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("dtnc-emu: {e}");
            return ExitCode::from(if e.to_string().contains("CAP_NET_RAW") {
                2
            } else {
                1
            });
        }
    };
    let res = emu.run();
    let fin = emu.finish();
    eprintln!("dtnc-emu: {}", emu.stats_json());
    if let Err(e) = res.and(fin) {
        eprintln!("dtnc-emu: {e}");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_needs_log_or_no_log_but_not_both() {
        let parse = |a: &[&str]| Cli::try_parse_from([&["dtnc-emu", "run"], a].concat());
        assert!(parse(&["--config", "c.json"]).is_err());
        assert!(parse(&["--config", "c.json", "--log", "l", "--no-log"]).is_err());
        assert!(parse(&["--config", "c.json", "--no-log"]).is_ok());
        let Command::Run(a) = parse(&["--config", "c", "--log", "l", "--replay", "r"])
            .unwrap()
            .command
        else {
            panic!("run")
        };
        assert_eq!(a.log, Some(PathBuf::from("l")));
        assert_eq!(a.replay, Some(PathBuf::from("r")));
    }

    #[test]
    fn classify_takes_the_four_protocols() {
        for p in ["ltp", "cfdp", "norm", "saratoga"] {
            assert!(
                Cli::try_parse_from(["dtnc-emu", "classify", p]).is_ok(),
                "{p}"
            );
        }
        let e = Cli::try_parse_from(["dtnc-emu", "classify", "tcp"])
            .err()
            .unwrap();
        assert_eq!(e.exit_code(), 2);
    }
}
