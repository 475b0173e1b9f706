//! A progress line on stderr (records, bytes, MB/s): shown for large or slow inputs when
//! stderr is a terminal, never otherwise unless `--progress` forces it.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use crate::args::ProgressArgs;

/// Inputs at least this large show progress from the start (on a terminal).
const LARGE_INPUT: u64 = 32 << 20;
/// Smaller or unsized inputs show it once decoding has taken this long.
const SLOW_AFTER: Duration = Duration::from_secs(1);
/// Redraw at most this often.
const REDRAW: Duration = Duration::from_millis(100);

pub struct Progress {
    mode: Mode,
    total: Option<u64>,
    start: Instant,
    last: Option<Instant>,
    records: u64,
    bytes: u64,
    /// Something is drawn on the current stderr line.
    drawn: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Off,
    /// On a terminal: redraw one line in place.
    Terminal,
    /// Forced, not a terminal: a line now and then, and a final summary.
    Lines,
}

impl Progress {
    /// Progress for an input of `total` bytes (when known).
    pub fn new(args: ProgressArgs, total: Option<u64>) -> Progress {
        let tty = std::io::stderr().is_terminal();
        let mode = if args.quiet {
            Mode::Off
        } else if tty {
            Mode::Terminal
        } else if args.progress {
            Mode::Lines
        } else {
            Mode::Off
        };
        let start = Instant::now();
        // Shown from the start when forced, or on a terminal for a large input; otherwise
        // (on a terminal) once decoding turns out slow.
        let eager = args.progress || total.is_some_and(|t| t >= LARGE_INPUT);
        let last = eager.then(|| start.checked_sub(REDRAW).unwrap_or(start));
        Progress { mode, total, start, last, records: 0, bytes: 0, drawn: false }
    }

    /// Records and bytes done so far.
    pub fn update(&mut self, records: u64, bytes: u64) {
        self.records = records;
        self.bytes = bytes;
        if self.mode == Mode::Off {
            return;
        }
        let now = Instant::now();
        let due = match self.last {
            Some(last) => {
                now.duration_since(last) >= if self.mode == Mode::Lines { Duration::from_secs(1) } else { REDRAW }
            }
            None => now.duration_since(self.start) >= SLOW_AFTER,
        };
        if due {
            self.last = Some(now);
            self.draw(false);
        }
    }

    /// Clears the line before something else is written to stderr.
    pub fn interrupt(&mut self) {
        if self.mode == Mode::Terminal && self.drawn {
            let _ = std::io::stderr().write_all(b"\r\x1b[2K");
            self.drawn = false;
        }
    }

    /// The final state: a summary line when progress was shown (or forced).
    pub fn finish(&mut self) {
        if self.mode == Mode::Off || self.last.is_none() {
            return;
        }
        self.draw(true);
    }

    fn draw(&mut self, last: bool) {
        let secs = self.start.elapsed().as_secs_f64().max(1e-9);
        let mb = self.bytes as f64 / 1e6;
        let mut line =
            format!("{} record{}, {:.1} MB", group(self.records), if self.records == 1 { "" } else { "s" }, mb);
        if let Some(total) = self.total.filter(|&t| t > 0 && !last) {
            line.push_str(&format!(
                " of {:.1} MB ({:.0}%)",
                total as f64 / 1e6,
                100.0 * self.bytes as f64 / total as f64
            ));
        }
        line.push_str(&format!(", {:.1} MB/s", mb / secs));
        if last {
            line.push_str(&format!(", {:.2} s", secs));
        }
        let mut err = std::io::stderr().lock();
        let _ = match self.mode {
            Mode::Terminal if !last => write!(err, "\r\x1b[2Kprotojit: {line}"),
            Mode::Terminal => writeln!(err, "\r\x1b[2Kprotojit: {line}"),
            _ => writeln!(err, "protojit: {line}"),
        };
        let _ = err.flush();
        self.drawn = self.mode == Mode::Terminal && !last;
    }
}

/// `1234567` as `1,234,567`.
fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
