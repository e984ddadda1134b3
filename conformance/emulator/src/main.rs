//! dtnc-emu command line. See `dtnc-emu --help`.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use dtnc_emu::classify::Protocol;

const USAGE: &str = "\
usage:
  dtnc-emu run --config FILE [--log FILE | --no-log] [--replay LOG]
               [--ready FILE] [--stats FILE]
                               bridge the config's two interfaces until SIGINT
                               or SIGTERM; --replay applies a decision log's
                               decisions frame by frame instead of drawing them
  dtnc-emu check --config FILE validate a config (exit 2 naming the bad field)
  dtnc-emu classify PROTOCOL   read hex UDP payloads (one per line) on stdin,
                               print each one's fields as a JSON object (null
                               when it does not classify)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("classify") => classify_cmd(&args[1..]),
        Some("run") => run_cmd(&args[1..], false),
        Some("check") => run_cmd(&args[1..], true),
        Some("-h") | Some("--help") => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("dtnc-emu: unknown command\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn classify_cmd(args: &[String]) -> ExitCode {
    let Some(proto) = args.first().and_then(|p| Protocol::from_name(p)) else {
        eprintln!("dtnc-emu classify: PROTOCOL must be one of ltp, cfdp, norm, saratoga");
        return ExitCode::from(2);
    };
    let stdin = std::io::stdin();
    let mut out = std::io::BufWriter::new(std::io::stdout());
    for (n, line) in stdin.lock().lines().enumerate() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let Some(bytes) = dtnc_emu::classify::from_hex(&line) else {
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
                    dtnc_emu::jsonw::write_str(&mut s, k);
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

fn run_cmd(args: &[String], check_only: bool) -> ExitCode {
    let mut config = None;
    let mut log = None;
    let mut no_log = false;
    let mut replay = None;
    let mut ready = None;
    let mut stats = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = |name: &str| -> Result<String, ExitCode> {
            it.next()
                .cloned()
                .ok_or_else(|| bad(&format!("{name} needs a value")))
        };
        let r = match a.as_str() {
            "--config" => val("--config").map(|v| config = Some(v)),
            "--log" => val("--log").map(|v| log = Some(v)),
            "--no-log" => {
                no_log = true;
                Ok(())
            }
            "--replay" => val("--replay").map(|v| replay = Some(v)),
            "--ready" => val("--ready").map(|v| ready = Some(v)),
            "--stats" => val("--stats").map(|v| stats = Some(v)),
            other => Err(bad(&format!("unknown option {other:?}\n{USAGE}"))),
        };
        if let Err(code) = r {
            return code;
        }
    }
    let Some(config) = config else {
        return bad("--config FILE is required");
    };
    let text = match std::fs::read_to_string(&config) {
        Ok(t) => t,
        Err(e) => return bad(&format!("{config}: {e}")),
    };
    let cfg = match dtnc_emu::config::parse(&text) {
        Ok(c) => c,
        Err(e) => return bad(&format!("{config}: field {e}")),
    };
    if check_only {
        println!("ok");
        return ExitCode::SUCCESS;
    }
    if log.is_none() && !no_log {
        return bad("give --log FILE, or --no-log");
    }
    let replay = match replay {
        None => None,
        Some(p) => match std::fs::read_to_string(&p)
            .map_err(|e| e.to_string())
            .and_then(|t| dtnc_emu::log::read_replay(&t))
        {
            Ok(r) => Some(r),
            Err(e) => return bad(&format!("--replay {p}: {e}")),
        },
    };
    let log = match log {
        None => None,
        Some(p) => match std::fs::File::create(&p) {
            Ok(f) => Some(f),
            Err(e) => return bad(&format!("--log {p}: {e}")),
        },
    };
    dtnc_emu::bridge::install_signal_handlers();
    // Timers fire when due, not up to 50 us later (the default slack).
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0) };
    let opts = dtnc_emu::bridge::Options {
        log,
        replay,
        ready: ready.map(Into::into),
        stats: stats.map(Into::into),
    };
    let mut emu = match dtnc_emu::bridge::Emulator::new(cfg, opts) {
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
