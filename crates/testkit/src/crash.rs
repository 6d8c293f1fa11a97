//! Crash testing by `SIGKILL`: a parent test re-runs its own test binary as a child process that
//! works on a directory and acknowledges each durable step with a line `ACK <n>` on stdout; the
//! parent kills the child at a random moment and then checks what survived.
//!
//! The harness does not know what the child does, nor what the parent checks: it spawns, reads
//! ACKs, kills and reports ([`KillHarness::run`]). A test file holds both sides:
//!
//! - the **child**: an ordinary `#[test]` that returns at once unless [`ChildContext::from_env`]
//!   finds the variables the harness sets ([`CHILD_DIR_ENV`], [`CHILD_SEED_ENV`]); when it does,
//!   it works in the directory for ever, calling [`ack`] after each step that must survive a crash;
//! - the **parent**: per kill point, a [`KillPlan`] drawn from a [`SplitMix64`], one
//!   [`KillHarness::run`], then its own checks of the directory.
//!
//! A kill lands after a random number of ACKs plus a random extra delay, so it can fall anywhere:
//! before the child opened anything, inside a commit, between commits. The parent counts every
//! ACK the child printed, including those it printed after the kill was decided, so the last ACK
//! is always the newest step the child was told is durable.
//!
//! Everything random is drawn from one seed: a failing seed replays the same work and the same
//! kill plans (the moment a kill lands within its delay still depends on timing). Parents read
//! [`REPLAY_SEED_ENV`] with [`replay_seed`] and the number of kill points with [`kill_points`].
//!
//! `Child::kill` sends `SIGKILL` on Unix, so the child gets no chance to flush, sync or unwind:
//! its writes that reached the kernel survive, nothing else does. (A power loss, which also drops
//! unsynced kernel buffers, is simulated in memory by the engine's `FaultyFileSystem` instead.)

use std::collections::hash_map::RandomState;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// Set by the parent in the child's environment: the directory the child works in. Its presence
/// is what tells a test it runs as the child.
pub const CHILD_DIR_ENV: &str = "BARRACUDA_CRASH_CHILD_DIR";
/// Set by the parent in the child's environment: the seed of the child's work (decimal `u64`).
pub const CHILD_SEED_ENV: &str = "BARRACUDA_CRASH_CHILD_SEED";
/// Read by parents through [`replay_seed`]: run only this seed, to replay a reported failure.
pub const REPLAY_SEED_ENV: &str = "BARRACUDA_CRASH_SEED";
/// Read by parents through [`kill_points`]: how many kill points to run instead of the default.
pub const KILLS_ENV: &str = "BARRACUDA_CRASH_KILLS";

/// Lines of the child's other stdout output and bytes of its stderr kept for a failure report.
const STDOUT_TAIL_LINES: usize = 40;
const STDERR_TAIL_BYTES: usize = 16 << 10;

/// What went wrong in the harness itself (not in the child's work, which the parent judges).
#[derive(Debug)]
pub enum HarnessError {
    /// An environment variable holds something other than what it should.
    BadEnv {
        /// The variable.
        var: &'static str,
        /// What it holds.
        value: String,
        /// What it should hold.
        expected: &'static str,
    },
    /// Spawning or talking to the child failed.
    Io {
        /// What the harness was doing.
        what: String,
        /// The error.
        source: io::Error,
    },
    /// The child binary ran no test of that name (libtest printed `running 0 tests`): a renamed
    /// child test would otherwise make every round look like a child that exits at once.
    ChildTestNotFound {
        /// The name passed to `--exact`.
        test: String,
        /// The test binary.
        exe: PathBuf,
    },
}

impl fmt::Display for HarnessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadEnv {
                var,
                value,
                expected,
            } => write!(f, "{var}={value:?} is not {expected}"),
            Self::Io { what, source } => write!(f, "{what}: {source}"),
            Self::ChildTestNotFound { test, exe } => write!(
                f,
                "{} has no test named exactly {test:?} (it printed `running 0 tests`)",
                exe.display()
            ),
        }
    }
}

impl std::error::Error for HarnessError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::BadEnv { .. } | Self::ChildTestNotFound { .. } => None,
        }
    }
}

fn io_error(what: impl Into<String>) -> impl FnOnce(io::Error) -> HarnessError {
    let what = what.into();
    move |source| HarnessError::Io { what, source }
}

/// A small deterministic generator (Steele, Lea and Flood's SplitMix64): the same seed gives the
/// same sequence on every platform and in every version, which is all a replayable crash test
/// needs. Not for cryptography.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

    /// A generator whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// An independent generator for sub-stream `stream` of `seed` (say, transaction `n` of a
    /// run): fixed by both, and unrelated to the sequences of nearby seeds or streams.
    pub fn stream(seed: u64, stream: u64) -> Self {
        Self::new(mix64(seed ^ mix64(stream.wrapping_add(Self::GAMMA))))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(Self::GAMMA);
        mix64(self.state)
    }

    /// A number in `0..bound` (`0` when `bound` is `0`), by multiply-high: unbiased enough for
    /// tests (bias below `bound / 2^64`).
    pub fn below(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }

    /// A number in `lo..=hi`; `lo` when `hi < lo`.
    pub fn range_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        match (hi.saturating_sub(lo)).checked_add(1) {
            Some(span) => lo + self.below(span),
            None => self.next_u64(), // lo = 0, hi = u64::MAX
        }
    }

    /// Fills `buf` with random bytes.
    pub fn fill_bytes(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let bytes = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

/// SplitMix64's finaliser: a bijection on `u64` that spreads every input bit over the output.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A fresh seed for a run that replays nothing: different in every process (the standard
/// library's randomly keyed hasher, the clock and the process id), to be printed so that a
/// failure can be replayed.
pub fn entropy_seed() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    hasher.write_u32(std::process::id());
    hasher.finish()
}

/// The seed in [`REPLAY_SEED_ENV`] (decimal or `0x` hex), or `None` when it is not set.
pub fn replay_seed() -> Result<Option<u64>, HarnessError> {
    let Some(value) = std::env::var_os(REPLAY_SEED_ENV) else {
        return Ok(None);
    };
    parse_u64(&value)
        .map(Some)
        .ok_or_else(|| HarnessError::BadEnv {
            var: REPLAY_SEED_ENV,
            value: value.to_string_lossy().into_owned(),
            expected: "a u64 seed (decimal or 0x hex)",
        })
}

/// The number of kill points in [`KILLS_ENV`], or `default` when it is not set.
pub fn kill_points(default: usize) -> Result<usize, HarnessError> {
    let Some(value) = std::env::var_os(KILLS_ENV) else {
        return Ok(default);
    };
    value
        .to_str()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .ok_or_else(|| HarnessError::BadEnv {
            var: KILLS_ENV,
            value: value.to_string_lossy().into_owned(),
            expected: "a positive number of kill points",
        })
}

fn parse_u64(value: &OsString) -> Option<u64> {
    let s = value.to_str()?.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// What the child is told: where to work and with which seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildContext {
    /// The directory the child works in; it outlives the child, so rounds can continue on it.
    pub dir: PathBuf,
    /// The seed of the child's work.
    pub seed: u64,
}

impl ChildContext {
    /// The context the parent set, or `None` when this process is not a crash-test child (the
    /// child test then returns at once). A child variable that is set but malformed is an error,
    /// not a silent `None`.
    pub fn from_env() -> Result<Option<Self>, HarnessError> {
        let Some(dir) = std::env::var_os(CHILD_DIR_ENV) else {
            return Ok(None);
        };
        let seed = std::env::var_os(CHILD_SEED_ENV).unwrap_or_default();
        let seed = parse_u64(&seed).ok_or_else(|| HarnessError::BadEnv {
            var: CHILD_SEED_ENV,
            value: seed.to_string_lossy().into_owned(),
            expected: "a u64 seed (set by the parent next to the directory)",
        })?;
        Ok(Some(Self {
            dir: PathBuf::from(dir),
            seed,
        }))
    }
}

/// Child side: tells the parent that step `n` is durable, by printing `ACK <n>` on its own line
/// and flushing stdout. Call it only after the step returned. An error means the parent is gone
/// (its end of the pipe is closed): the child should stop.
pub fn ack(n: u64) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "ACK {n}")?;
    out.flush()
}

/// The number a stdout line acknowledges, if it is an ACK. libtest may print `test <name> ... `
/// on the same line before the child's first output, so the ACK is read from the line's end.
pub fn parse_ack(line: &str) -> Option<u64> {
    let line = line.trim_end();
    let (before, number) = line.rsplit_once("ACK ")?;
    if !(before.is_empty() || before.ends_with(char::is_whitespace)) {
        return None;
    }
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    number.parse().ok()
}

/// When one round kills the child: once it has printed `after_acks` ACKs, `extra_delay` later
/// (so the kill can land inside the next step).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KillPlan {
    /// ACKs to wait for; 0 kills the child `extra_delay` after it was spawned.
    pub after_acks: u64,
    /// Further time the child runs before the kill.
    pub extra_delay: Duration,
}

impl KillPlan {
    /// A plan with `0..=max_acks` ACKs and a delay of `0..=max_delay` (microsecond steps).
    pub fn random(rng: &mut SplitMix64, max_acks: u64, max_delay: Duration) -> Self {
        let max_micros = u64::try_from(max_delay.as_micros()).unwrap_or(u64::MAX);
        Self {
            after_acks: rng.range_inclusive(0, max_acks),
            extra_delay: Duration::from_micros(rng.range_inclusive(0, max_micros)),
        }
    }
}

impl fmt::Display for KillPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kill after {} ACKs + {} µs",
            self.after_acks,
            self.extra_delay.as_micros()
        )
    }
}

/// How the child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChildEnd {
    /// The harness killed it as planned.
    Killed,
    /// It exited (or died of something else) before the kill: a child meant to run for ever
    /// failed, or was not a crash-test child at all.
    Exited(ExitStatus),
    /// It reached neither the planned number of ACKs nor an exit within the round's time limit
    /// (a hang, or a plan asking for more ACKs than the child gives); the harness killed it.
    TimedOut,
}

/// What one round saw.
#[derive(Clone, Debug)]
pub struct Round {
    /// The plan the round followed.
    pub plan: KillPlan,
    /// Every number the child acknowledged, in the order printed.
    pub acked: Vec<u64>,
    /// How the child ended.
    pub end: ChildEnd,
    /// The child's last stdout lines that were not ACKs (libtest's output, the child's prints).
    pub stdout_tail: Vec<String>,
    /// The end of the child's stderr (a panic message, a backtrace), lossily decoded.
    pub stderr_tail: String,
    /// From spawn to the end of the child.
    pub elapsed: Duration,
}

impl Round {
    /// The newest acknowledged number, if any.
    pub fn last_ack(&self) -> Option<u64> {
        self.acked.last().copied()
    }

    /// A multi-line account of the round for a failure message: plan, ACKs, end, output tails.
    pub fn describe(&self) -> String {
        let acks = match (self.acked.first(), self.acked.last()) {
            (Some(first), Some(last)) => format!("{} ACKs ({first}..={last})", self.acked.len()),
            _ => "no ACK".to_owned(),
        };
        let end = match self.end {
            ChildEnd::Killed => "killed".to_owned(),
            ChildEnd::Exited(status) => format!("exited on its own ({status})"),
            ChildEnd::TimedOut => "timed out and killed".to_owned(),
        };
        let mut text = format!(
            "round: {}; child printed {acks}, {end} after {} ms",
            self.plan,
            self.elapsed.as_millis()
        );
        if !self.stdout_tail.is_empty() {
            text.push_str("\n--- child stdout (other lines, tail) ---\n");
            text.push_str(&self.stdout_tail.join("\n"));
        }
        if !self.stderr_tail.is_empty() {
            text.push_str("\n--- child stderr (tail) ---\n");
            text.push_str(self.stderr_tail.trim_end());
        }
        text
    }
}

/// Runs one named test of the current test binary as a child process and kills it.
#[derive(Clone, Debug)]
pub struct KillHarness {
    child_test: String,
    child_is_ignored: bool,
    round_timeout: Duration,
}

impl KillHarness {
    /// A harness whose child runs the test named exactly `child_test` (its path within the test
    /// binary, e.g. `crash_child_process` or `tests::crash_child_process`). Rounds time out
    /// after 120 s.
    pub fn new(child_test: &str) -> Self {
        Self {
            child_test: child_test.to_owned(),
            child_is_ignored: false,
            round_timeout: Duration::from_mins(2),
        }
    }

    /// Whether the child test is `#[ignore]`d, so that the child must pass `--ignored` to run it.
    #[must_use]
    pub fn child_is_ignored(mut self, ignored: bool) -> Self {
        self.child_is_ignored = ignored;
        self
    }

    /// How long a round may take before the child is killed as hung ([`ChildEnd::TimedOut`]).
    #[must_use]
    pub fn round_timeout(mut self, timeout: Duration) -> Self {
        self.round_timeout = timeout;
        self
    }

    /// Spawns the child on `context`, kills it as `plan` says (or sees it exit first, or times it
    /// out), reaps it and returns what it printed. The directory is left as the kill left it.
    ///
    /// Errors are the harness's own (spawning, reading the pipes, a child test that does not
    /// exist); whatever the child did is in the [`Round`] for the caller to judge.
    pub fn run(&self, context: &ChildContext, plan: KillPlan) -> Result<Round, HarnessError> {
        let exe = std::env::current_exe().map_err(io_error("finding the test binary"))?;
        let mut command = Command::new(&exe);
        command.args([
            "--exact",
            &self.child_test,
            "--nocapture",
            "--test-threads=1",
        ]);
        if self.child_is_ignored {
            command.arg("--ignored");
        }
        command
            .env(CHILD_DIR_ENV, &context.dir)
            .env(CHILD_SEED_ENV, context.seed.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let start = Instant::now();
        let mut child = command
            .spawn()
            .map_err(io_error(format!("spawning {}", exe.display())))?;
        let (lines, stdout_reader) = spawn_line_reader(&mut child)?;
        let stderr_reader = spawn_tail_reader(&mut child)?;

        let mut round = Round {
            plan,
            acked: Vec::new(),
            end: ChildEnd::Killed,
            stdout_tail: Vec::new(),
            stderr_tail: String::new(),
            elapsed: Duration::ZERO,
        };
        let mut other_lines = VecDeque::new();
        let give_up_at = start + self.round_timeout;
        let mut kill_at = (plan.after_acks == 0).then(|| start + plan.extra_delay);
        let mut record = |line: String, round: &mut Round, kill_at: &mut Option<Instant>| {
            if let Some(n) = parse_ack(&line) {
                round.acked.push(n);
                if kill_at.is_none() && round.acked.len() as u64 >= plan.after_acks {
                    *kill_at = Some(Instant::now() + plan.extra_delay);
                }
            } else {
                if other_lines.len() == STDOUT_TAIL_LINES {
                    other_lines.pop_front();
                }
                other_lines.push_back(line);
            }
        };
        // Wait for the kill moment (or the time limit), recording every line meanwhile.
        let kill = loop {
            let until = kill_at.map_or(give_up_at, |at| at.min(give_up_at));
            match lines.recv_timeout(until.saturating_duration_since(Instant::now())) {
                Ok(line) => record(line, &mut round, &mut kill_at),
                Err(RecvTimeoutError::Timeout) if Instant::now() >= until => {
                    break Some(if kill_at.is_some_and(|at| at <= give_up_at) {
                        ChildEnd::Killed
                    } else {
                        ChildEnd::TimedOut
                    });
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break None, // stdout closed: it is exiting
            }
        };
        if kill.is_some() {
            // SIGKILL on Unix. An error means it exited meanwhile, which `wait` reports below.
            let _ = child.kill();
        }
        // Lines the child printed before it died are still in the pipe: they count.
        for line in &lines {
            record(line, &mut round, &mut kill_at);
        }
        let status = child.wait().map_err(io_error("waiting for the child"))?;
        round.elapsed = start.elapsed();
        join(stdout_reader, "reading the child's stdout")?;
        round.stderr_tail = join(stderr_reader, "reading the child's stderr")?;
        round.stdout_tail = other_lines.into();
        round.end = match kill {
            Some(end) if died_of_our_kill(status) => end,
            _ => ChildEnd::Exited(status),
        };
        if matches!(round.end, ChildEnd::Exited(_))
            && round
                .stdout_tail
                .iter()
                .any(|l| l.trim() == "running 0 tests")
        {
            return Err(HarnessError::ChildTestNotFound {
                test: self.child_test.clone(),
                exe,
            });
        }
        Ok(round)
    }
}

/// Whether the status is a death by `SIGKILL` (so the kill, not the child, ended it).
#[cfg(unix)]
fn died_of_our_kill(status: ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt;
    const SIGKILL: i32 = 9;
    status.signal() == Some(SIGKILL)
}

/// Elsewhere `Child::kill` terminates without a signal to tell by: trust that it did.
#[cfg(not(unix))]
fn died_of_our_kill(_status: ExitStatus) -> bool {
    true
}

/// Forwards the child's stdout line by line (lossily decoded) until it closes.
fn spawn_line_reader(
    child: &mut Child,
) -> Result<(Receiver<String>, JoinHandle<io::Result<String>>), HarnessError> {
    let stdout = child.stdout.take().ok_or_else(|| HarnessError::Io {
        what: "taking the child's stdout".into(),
        source: io::Error::other("stdout was not piped"),
    })?;
    let (tx, rx) = mpsc::channel();
    let handle = thread::Builder::new()
        .name("crash-child-stdout".into())
        .spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                if reader.read_until(b'\n', &mut buf)? == 0 {
                    return Ok(String::new());
                }
                let line = String::from_utf8_lossy(&buf)
                    .trim_end_matches('\n')
                    .to_owned();
                if tx.send(line).is_err() {
                    return Ok(String::new());
                }
            }
        })
        .map_err(io_error("starting the stdout reader thread"))?;
    Ok((rx, handle))
}

/// Reads the child's stderr to its end, keeping the last [`STDERR_TAIL_BYTES`].
fn spawn_tail_reader(child: &mut Child) -> Result<JoinHandle<io::Result<String>>, HarnessError> {
    let mut stderr = child.stderr.take().ok_or_else(|| HarnessError::Io {
        what: "taking the child's stderr".into(),
        source: io::Error::other("stderr was not piped"),
    })?;
    thread::Builder::new()
        .name("crash-child-stderr".into())
        .spawn(move || {
            let mut tail = VecDeque::with_capacity(STDERR_TAIL_BYTES);
            let mut buf = [0u8; 4096];
            loop {
                let n = stderr.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                for &b in buf.iter().take(n) {
                    if tail.len() == STDERR_TAIL_BYTES {
                        tail.pop_front();
                    }
                    tail.push_back(b);
                }
            }
            Ok(String::from_utf8_lossy(tail.make_contiguous()).into_owned())
        })
        .map_err(io_error("starting the stderr reader thread"))
}

fn join(handle: JoinHandle<io::Result<String>>, what: &str) -> Result<String, HarnessError> {
    match handle.join() {
        Ok(result) => result.map_err(io_error(what)),
        Err(_) => Err(HarnessError::Io {
            what: what.to_owned(),
            source: io::Error::other("the reader thread panicked"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::fs;

    /// The child of the harness's own tests: acknowledges `1..` for ever, or stops after as
    /// many ACKs as its seed says when the seed is below `u64::MAX`; appends each number to
    /// `<dir>/acked` before printing it. Passes trivially when not run as a child.
    #[test]
    fn harness_child_process() {
        let Some(context) = ChildContext::from_env().expect("child environment") else {
            return;
        };
        let mut log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(context.dir.join("acked"))
            .expect("the child's log");
        let mut n = 1;
        while context.seed == u64::MAX || n <= context.seed {
            writeln!(log, "{n}").expect("the child's log");
            if ack(n).is_err() {
                return;
            }
            n += 1;
        }
    }

    /// A fresh directory per test (they run in parallel), removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(test: &str) -> Self {
            let dir = std::env::temp_dir().join(format!(
                "barracuda-crash-harness-{}-{test}",
                std::process::id()
            ));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).expect("scratch directory");
            Self(dir)
        }

        fn context(&self, seed: u64) -> ChildContext {
            ChildContext {
                dir: self.0.clone(),
                seed,
            }
        }

        /// What the child wrote to its log: every number it was about to acknowledge.
        fn logged(&self) -> Vec<u64> {
            fs::read_to_string(self.0.join("acked"))
                .expect("the child's log")
                .lines()
                .map(|l| l.parse().expect("a number"))
                .collect()
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn plan(after_acks: u64, delay_ms: u64) -> KillPlan {
        KillPlan {
            after_acks,
            extra_delay: Duration::from_millis(delay_ms),
        }
    }

    #[test]
    fn a_child_running_for_ever_is_killed_after_the_planned_acks() {
        let scratch = Scratch::new("killed");
        let harness = KillHarness::new("crash::tests::harness_child_process");
        let round = harness
            .run(&scratch.context(u64::MAX), plan(25, 2))
            .expect("round");
        assert_eq!(round.end, ChildEnd::Killed, "{}", round.describe());
        assert!(round.acked.len() >= 25, "{}", round.describe());
        let expected: Vec<u64> = (1..=round.acked.len() as u64).collect();
        assert_eq!(round.acked, expected, "every ACK is seen once, in order");
    }

    #[test]
    fn every_ack_printed_before_the_kill_is_counted() {
        let scratch = Scratch::new("every_ack");
        let harness = KillHarness::new("crash::tests::harness_child_process");
        let round = harness
            .run(&scratch.context(u64::MAX), plan(50, 5))
            .expect("round");
        assert_eq!(round.end, ChildEnd::Killed, "{}", round.describe());
        let logged = scratch.logged();
        // The child logs a number just before printing it: the kill may fall in between.
        let printed = round.acked.len();
        assert!(
            printed == logged.len() || printed + 1 == logged.len(),
            "the child logged {} numbers but the harness counted {printed} ACKs",
            logged.len()
        );
        assert_eq!(round.acked, logged[..printed]);
    }

    #[test]
    fn a_kill_before_any_ack_is_possible() {
        let scratch = Scratch::new("before_any");
        let harness = KillHarness::new("crash::tests::harness_child_process");
        let round = harness
            .run(&scratch.context(u64::MAX), plan(0, 0))
            .expect("round");
        assert_eq!(round.end, ChildEnd::Killed, "{}", round.describe());
    }

    #[test]
    fn a_child_that_exits_first_is_reported_with_its_acks() {
        let scratch = Scratch::new("exits_first");
        let harness = KillHarness::new("crash::tests::harness_child_process");
        let round = harness
            .run(&scratch.context(3), plan(1000, 0))
            .expect("round");
        assert!(
            matches!(round.end, ChildEnd::Exited(status) if status.success()),
            "{}",
            round.describe()
        );
        assert_eq!(round.acked, vec![1, 2, 3]);
    }

    #[test]
    fn a_child_that_never_reaches_the_plan_times_out() {
        let scratch = Scratch::new("times_out");
        let harness =
            KillHarness::new("crash::tests::harness_child_process").round_timeout(Duration::ZERO);
        let round = harness
            .run(&scratch.context(u64::MAX), plan(u64::MAX, 0))
            .expect("round");
        assert_eq!(round.end, ChildEnd::TimedOut, "{}", round.describe());
    }

    #[test]
    fn a_missing_child_test_is_an_error_naming_it() {
        let scratch = Scratch::new("missing");
        let harness = KillHarness::new("crash::tests::no_such_child");
        let err = harness
            .run(&scratch.context(u64::MAX), plan(1, 0))
            .expect_err("no such test");
        assert!(
            matches!(err, HarnessError::ChildTestNotFound { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("no_such_child"), "{err}");
    }

    #[test]
    fn acks_are_read_from_the_end_of_a_line() {
        assert_eq!(parse_ack("ACK 7"), Some(7));
        assert_eq!(parse_ack("test crash_child_process ... ACK 12\n"), Some(12));
        assert_eq!(parse_ack("ACK"), None);
        assert_eq!(parse_ack("ACK 7x"), None);
        assert_eq!(parse_ack("NACK 7"), None);
        assert_eq!(parse_ack("ACK -1"), None);
        assert_eq!(parse_ack("running 1 test"), None);
    }

    #[test]
    fn the_generator_is_fixed_by_its_seed_and_stays_in_range() {
        let first: Vec<u64> = {
            let mut rng = SplitMix64::new(42);
            (0..4).map(|_| rng.next_u64()).collect()
        };
        let mut again = SplitMix64::new(42);
        assert_eq!(first, (0..4).map(|_| again.next_u64()).collect::<Vec<_>>());
        // The reference sequence of SplitMix64 from seed 0 (Vigna's splitmix64.c).
        let mut zero = SplitMix64::new(0);
        assert_eq!(zero.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_ne!(
            SplitMix64::stream(42, 1).next_u64(),
            SplitMix64::stream(42, 2).next_u64()
        );
        let mut rng = SplitMix64::new(7);
        let mut seen = [false; 5];
        for _ in 0..1000 {
            let x = rng.range_inclusive(3, 7);
            assert!((3..=7).contains(&x));
            seen[(x - 3) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s), "every value of 3..=7 is drawn");
        assert_eq!(rng.below(0), 0);
        assert_eq!(rng.range_inclusive(5, 5), 5);
        let mut buf = [0u8; 13];
        rng.fill_bytes(&mut buf);
        assert!(buf.iter().any(|&b| b != 0));
    }

    #[test]
    fn random_plans_stay_within_their_bounds() {
        let mut rng = SplitMix64::new(1);
        for _ in 0..100 {
            let p = KillPlan::random(&mut rng, 4, Duration::from_millis(20));
            assert!(p.after_acks <= 4);
            assert!(p.extra_delay <= Duration::from_millis(20));
        }
    }
}
