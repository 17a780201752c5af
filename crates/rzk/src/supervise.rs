//! Running a command under a lock or a leadership: the decisions as a pure state machine
//! ([`Supervisor`]: events in, actions out), and [`supervise`], which spawns the command and
//! carries the actions out (signals, the grace period, the exit status).
//!
//! The rules:
//!
//! - when the lock or leadership is suspended or lost, the policy decides: `stop` sends
//!   SIGTERM, then SIGKILL if the command is still running after the grace period; `warn`
//!   only says so on stderr;
//! - SIGINT, SIGTERM and SIGHUP received by rzk are sent on to the command (rzk itself waits
//!   for it to exit, so that the lock is released after it); except a SIGINT while rzk runs
//!   in the foreground of a terminal: Ctrl-C reaches the command from the terminal itself (it
//!   is in rzk's process group), and a second one from rzk would interrupt its clean-up;
//! - when the command exits, the outcome is its status, or [`ExitClass::Lost`] when it was
//!   running while the lock or leadership was lost under `stop`.

use std::ffi::OsString;
use std::future::Future;
use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process, kill_process_group};
use tokio::signal::unix::{SignalKind, signal};

use crate::cli::{OnLoss, Supervision};
use crate::exit::{ExitClass, Failure};
use crate::spec::command_line;

/// What to do when the lock or leadership is lost while the command runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Policy {
    /// SIGTERM, then SIGKILL after `grace`.
    Stop {
        /// How long the command may take to exit after SIGTERM.
        grace: Duration,
    },
    /// Only warn.
    Warn,
}

impl From<&Supervision> for Policy {
    fn from(s: &Supervision) -> Policy {
        match s.on_loss {
            OnLoss::Stop => Policy::Stop { grace: s.grace },
            OnLoss::Warn => Policy::Warn,
        }
    }
}

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChildStatus {
    /// It exited with this status.
    Code(i32),
    /// It was killed by this signal.
    Signal(i32),
}

impl ChildStatus {
    /// The status a shell would report: the code, or 128 + the signal.
    pub(crate) fn exit_code(self) -> u8 {
        let code = match self {
            ChildStatus::Code(code) => code,
            ChildStatus::Signal(signal) => 128 + signal,
        };
        u8::try_from(code.clamp(0, 255)).unwrap_or(u8::MAX)
    }

    fn from_std(status: std::process::ExitStatus) -> ChildStatus {
        match (status.code(), status.signal()) {
            (Some(code), _) => ChildStatus::Code(code),
            (None, Some(signal)) => ChildStatus::Signal(signal),
            (None, None) => ChildStatus::Code(1),
        }
    }
}

impl std::fmt::Display for ChildStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChildStatus::Code(code) => write!(f, "exit status {code}"),
            ChildStatus::Signal(signal) => write!(f, "killed by {}", signal_name(*signal)),
        }
    }
}

/// A signal's name for messages (`SIGTERM`), its number for the others.
pub(crate) fn signal_name(signal: i32) -> String {
    let named = [
        (Signal::HUP, "SIGHUP"),
        (Signal::INT, "SIGINT"),
        (Signal::KILL, "SIGKILL"),
        (Signal::TERM, "SIGTERM"),
        (Signal::PIPE, "SIGPIPE"),
        (Signal::QUIT, "SIGQUIT"),
    ];
    named
        .iter()
        .find(|(s, _)| s.as_raw() == signal)
        .map_or_else(
            || format!("signal {signal}"),
            |(_, name)| (*name).to_owned(),
        )
}

/// rzk's exit status when a signal ended it while it waited (before any command ran):
/// 128 + the signal, as a process killed by it reports.
pub(crate) fn interrupted(signal: Signal) -> u8 {
    128u8.saturating_add(u8::try_from(signal.as_raw()).unwrap_or(0))
}

/// What happens to a supervised command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// The lock or leadership is suspended or lost; the text says which and why.
    Lost(String),
    /// rzk received this signal; `from_terminal` when it is SIGINT and rzk is in the
    /// foreground of a terminal, so the command (in rzk's process group) got it too.
    Signal {
        /// The signal.
        signal: Signal,
        /// Whether the command got it from the terminal as well.
        from_terminal: bool,
    },
    /// The grace period after SIGTERM passed.
    GraceOver,
    /// The command exited.
    Exited(ChildStatus),
}

/// What to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    /// Send this signal to the command.
    Forward(Signal),
    /// Send SIGTERM and start the grace period.
    Terminate,
    /// Send SIGKILL.
    Kill,
    /// Say this on stderr.
    Warn(String),
    /// The supervision is over.
    Done(Ended),
}

/// How a supervision ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// The command exited by itself (or after a signal rzk passed on); `after_loss` when the
    /// lock or leadership was lost meanwhile and the policy was `warn`.
    Exited {
        /// Its status.
        status: ChildStatus,
        /// Whether the lock or leadership was lost while it ran.
        after_loss: bool,
    },
    /// The lock or leadership was lost while it ran, and it was stopped (policy `stop`).
    Stopped {
        /// Its status.
        status: ChildStatus,
    },
}

impl Ended {
    /// rzk's exit status: the command's, or [`ExitClass::Lost`] when it was stopped.
    pub(crate) fn exit_code(self) -> u8 {
        match self {
            Ended::Exited { status, .. } => status.exit_code(),
            Ended::Stopped { .. } => ExitClass::Lost.code(),
        }
    }
}

/// The supervision's decisions, one event at a time.
#[derive(Debug, Clone)]
pub(crate) struct Supervisor {
    policy: Policy,
    lost: bool,
    terminating: bool,
    killed: bool,
}

impl Supervisor {
    /// A command that was just started.
    pub(crate) fn new(policy: Policy) -> Supervisor {
        Supervisor {
            policy,
            lost: false,
            terminating: false,
            killed: false,
        }
    }

    /// Whether the lock or leadership was lost (the loss is reported once).
    pub(crate) fn lost(&self) -> bool {
        self.lost
    }

    /// The actions for `event`.
    pub(crate) fn on(&mut self, event: Event) -> Vec<Action> {
        match event {
            Event::Lost(_) if self.lost => Vec::new(),
            Event::Lost(why) => {
                self.lost = true;
                match self.policy {
                    Policy::Stop { grace } => {
                        self.terminating = true;
                        vec![
                            Action::Warn(format!(
                                "{why}: stopping the command (SIGTERM, SIGKILL after {})",
                                describe_duration(grace)
                            )),
                            Action::Terminate,
                        ]
                    }
                    Policy::Warn => vec![Action::Warn(format!(
                        "{why}: the command keeps running (--on-loss warn)"
                    ))],
                }
            }
            Event::Signal {
                from_terminal: true,
                ..
            } => Vec::new(),
            Event::Signal { signal, .. } => vec![Action::Forward(signal)],
            Event::GraceOver if self.terminating && !self.killed => {
                self.killed = true;
                vec![
                    Action::Warn("the command did not exit in the grace period: SIGKILL".into()),
                    Action::Kill,
                ]
            }
            Event::GraceOver => Vec::new(),
            Event::Exited(status) => {
                let ended = match self.policy {
                    Policy::Stop { .. } if self.lost => Ended::Stopped { status },
                    _ => Ended::Exited {
                        status,
                        after_loss: self.lost,
                    },
                };
                vec![Action::Done(ended)]
            }
        }
    }
}

fn describe_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// The signals rzk passes on to the command: SIGINT, SIGTERM, SIGHUP. Once made, these
/// signals no longer end rzk itself.
#[derive(Debug)]
pub(crate) struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
}

impl Signals {
    /// Catches the signals from now on.
    ///
    /// # Errors
    ///
    /// When a handler cannot be installed.
    pub(crate) fn new() -> Result<Signals, Failure> {
        let catch = |kind| {
            signal(kind).map_err(|e| Failure::new(ExitClass::Failure, format!("signals: {e}")))
        };
        Ok(Signals {
            interrupt: catch(SignalKind::interrupt())?,
            terminate: catch(SignalKind::terminate())?,
            hangup: catch(SignalKind::hangup())?,
        })
    }

    /// The next signal received.
    pub(crate) async fn recv(&mut self) -> Signal {
        tokio::select! {
            Some(()) = self.interrupt.recv() => Signal::INT,
            Some(()) = self.terminate.recv() => Signal::TERM,
            Some(()) = self.hangup.recv() => Signal::HUP,
        }
    }
}

/// The command to supervise.
#[derive(Debug, Clone)]
pub(crate) struct Job<'a> {
    /// The program and its arguments.
    pub(crate) command: &'a [OsString],
    /// Variables added to its environment.
    pub(crate) env: Vec<(String, String)>,
    /// What to do on loss.
    pub(crate) policy: Policy,
    /// Say what happens on stderr.
    pub(crate) verbose: bool,
}

/// Starts `job`'s command and supervises it until it exits: `lost` resolves (with the reason)
/// when the lock or leadership is suspended or lost; signals from `signals` are passed on.
///
/// # Errors
///
/// When the command cannot be started (127: not found, 126: not executable), or waiting for
/// it fails.
pub(crate) async fn supervise(
    job: &Job<'_>,
    signals: &mut Signals,
    lost: impl Future<Output = String>,
) -> Result<Ended, Failure> {
    let Some((program, args)) = job.command.split_first() else {
        return Err(Failure::usage("no command given (put it after --)"));
    };
    let shown = command_line(job.command);
    // Tied to rzk's life by the kernel (`tether`), unless rzk cannot start itself.
    let (program, args) =
        crate::tether::tethered(job.command).unwrap_or_else(|| (program.clone(), args.to_vec()));
    // In a process group of its own, so that rzk's stops reach what it starts too; except in
    // the foreground of a terminal, where it must stay in rzk's group to read the terminal
    // and to get Ctrl-C from it.
    let own_group = !in_terminal_foreground();
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .envs(job.env.iter().map(|(k, v)| (k, v)))
        .kill_on_drop(true);
    for secret in SECRET_VARIABLES {
        command.env_remove(secret);
    }
    if own_group {
        command.process_group(0);
    }
    let mut child = command.spawn().map_err(|e| {
        let class = match e.kind() {
            std::io::ErrorKind::NotFound => ExitClass::CommandNotFound,
            _ => ExitClass::CannotExecute,
        };
        Failure::new(class, format!("cannot run {shown}: {e}"))
    })?;
    if job.verbose {
        say!("started {shown} (pid {})", child.id().unwrap_or_default());
    }
    let mut supervisor = Supervisor::new(job.policy);
    let mut lost = std::pin::pin!(lost);
    let mut grace: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;
    loop {
        let event = tokio::select! {
            biased;
            status = child.wait() => match status {
                Ok(status) => Event::Exited(ChildStatus::from_std(status)),
                Err(e) => {
                    return Err(Failure::new(ExitClass::Failure, format!("waiting for {shown}: {e}")));
                }
            },
            signal = signals.recv() => Event::Signal {
                signal,
                from_terminal: signal == Signal::INT && in_terminal_foreground(),
            },
            why = &mut lost, if !supervisor.lost() => Event::Lost(why),
            () = async {
                match grace.as_mut() {
                    Some(period) => period.await,
                    None => std::future::pending().await,
                }
            }, if grace.is_some() => {
                grace = None;
                Event::GraceOver
            }
        };
        for action in supervisor.on(event) {
            match action {
                Action::Forward(signal) => {
                    if job.verbose {
                        say!("passing {} on to the command", signal_name(signal.as_raw()));
                    }
                    send(&child, signal, own_group);
                }
                Action::Terminate => {
                    send(&child, Signal::TERM, own_group);
                    if let Policy::Stop { grace: period } = job.policy {
                        grace = Some(Box::pin(tokio::time::sleep(period)));
                    }
                }
                Action::Kill => {
                    send(&child, Signal::KILL, own_group);
                }
                Action::Warn(message) => say!("{message}"),
                Action::Done(ended) => {
                    if job.verbose {
                        let status = match ended {
                            Ended::Exited { status, .. } | Ended::Stopped { status } => status,
                        };
                        say!("{shown}: {status}");
                    }
                    return Ok(ended);
                }
            }
        }
    }
}

/// Whether rzk runs in the foreground process group of the terminal on its standard input
/// (so that a Ctrl-C goes to its whole process group, the command included).
fn in_terminal_foreground() -> bool {
    rustix::termios::tcgetpgrp(std::io::stdin())
        .is_ok_and(|foreground| foreground == rustix::process::getpgrp())
}

/// Sends `signal` to the child if it has not been reaped (its pid is then still its own), and
/// with `group` to its whole process group (the child leads it).
fn send(child: &tokio::process::Child, signal: Signal, group: bool) {
    let pid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .and_then(Pid::from_raw);
    if let Some(pid) = pid {
        // ESRCH: it exited meanwhile; the wait reports it.
        if !group || kill_process_group(pid, signal).is_err() {
            let _ = kill_process(pid, signal);
        }
    }
}

/// rzk's own variables that carry secrets (credentials, TLS passwords): never passed on to
/// the command.
pub(crate) const SECRET_VARIABLES: [&str; 4] = [
    "RZK_AUTH",
    "RZK_SASL",
    "RZK_TLS_KEYSTORE_PASSWORD",
    "RZK_TLS_KEY_PASSWORD",
];

#[cfg(test)]
mod tests {
    use super::*;

    const GRACE: Duration = Duration::from_secs(10);

    fn done(actions: &[Action]) -> Option<Ended> {
        actions.iter().find_map(|a| match a {
            Action::Done(ended) => Some(*ended),
            _ => None,
        })
    }

    #[test]
    fn a_command_that_exits_passes_its_status_through() {
        let mut s = Supervisor::new(Policy::Stop { grace: GRACE });
        let ended = done(&s.on(Event::Exited(ChildStatus::Code(3)))).expect("done");
        assert_eq!(
            ended,
            Ended::Exited {
                status: ChildStatus::Code(3),
                after_loss: false
            }
        );
        assert_eq!(ended.exit_code(), 3);
        assert_eq!(ChildStatus::Signal(15).exit_code(), 143);
        assert_eq!(ChildStatus::Code(0).exit_code(), 0);
    }

    #[test]
    fn loss_under_stop_terminates_then_kills_after_the_grace_period() {
        let mut s = Supervisor::new(Policy::Stop { grace: GRACE });
        let actions = s.on(Event::Lost("the lock is suspended".into()));
        assert!(
            matches!(&actions[0], Action::Warn(m) if m.contains("suspended") && m.contains("10s"))
        );
        assert_eq!(actions[1], Action::Terminate);
        // A second report (suspended, then lost) changes nothing.
        assert!(s.on(Event::Lost("the lock is lost".into())).is_empty());
        let actions = s.on(Event::GraceOver);
        assert_eq!(actions.last(), Some(&Action::Kill));
        assert!(s.on(Event::GraceOver).is_empty(), "killed once");
        let ended = done(&s.on(Event::Exited(ChildStatus::Signal(9)))).expect("done");
        assert_eq!(
            ended,
            Ended::Stopped {
                status: ChildStatus::Signal(9)
            }
        );
        assert_eq!(ended.exit_code(), ExitClass::Lost.code());
    }

    #[test]
    fn a_command_that_exits_within_the_grace_period_is_not_killed() {
        let mut s = Supervisor::new(Policy::Stop { grace: GRACE });
        s.on(Event::Lost("lost".into()));
        let ended = done(&s.on(Event::Exited(ChildStatus::Signal(15)))).expect("done");
        assert_eq!(ended.exit_code(), 7);
    }

    #[test]
    fn loss_under_warn_only_warns_and_keeps_the_status() {
        let mut s = Supervisor::new(Policy::Warn);
        let actions = s.on(Event::Lost("the lock is lost".into()));
        assert_eq!(actions.len(), 1);
        assert!(matches!(&actions[0], Action::Warn(m) if m.contains("keeps running")));
        assert!(s.on(Event::GraceOver).is_empty());
        let ended = done(&s.on(Event::Exited(ChildStatus::Code(0)))).expect("done");
        assert_eq!(
            ended,
            Ended::Exited {
                status: ChildStatus::Code(0),
                after_loss: true
            }
        );
        assert_eq!(ended.exit_code(), 0);
    }

    #[test]
    fn signals_are_passed_on_and_the_status_follows() {
        let mut s = Supervisor::new(Policy::Stop { grace: GRACE });
        let signal = |signal, from_terminal| Event::Signal {
            signal,
            from_terminal,
        };
        assert_eq!(
            s.on(signal(Signal::INT, false)),
            [Action::Forward(Signal::INT)]
        );
        assert_eq!(
            s.on(signal(Signal::TERM, false)),
            [Action::Forward(Signal::TERM)]
        );
        assert!(
            s.on(signal(Signal::INT, true)).is_empty(),
            "a Ctrl-C the command got from the terminal is not sent twice"
        );
        assert!(
            s.on(Event::GraceOver).is_empty(),
            "no grace period without a loss"
        );
        let ended = done(&s.on(Event::Exited(ChildStatus::Signal(2)))).expect("done");
        assert_eq!(ended.exit_code(), 130);
    }

    /// Every option whose variable's value `--help` hides (a secret) has that variable
    /// removed from the command's environment, and nothing else is.
    #[test]
    fn every_secret_variable_of_the_options_is_kept_from_the_command() {
        use clap::CommandFactory as _;
        let command = crate::cli::Cli::command();
        let mut hidden: Vec<String> = command
            .get_arguments()
            .filter(|arg| arg.is_hide_env_values_set())
            .filter_map(|arg| arg.get_env()?.to_str().map(str::to_owned))
            .collect();
        hidden.sort();
        let mut secret = SECRET_VARIABLES.map(str::to_owned).to_vec();
        secret.sort();
        assert_eq!(hidden, secret);
    }

    #[test]
    fn statuses_and_signals_read_well() {
        assert_eq!(ChildStatus::Code(3).to_string(), "exit status 3");
        assert_eq!(ChildStatus::Signal(15).to_string(), "killed by SIGTERM");
        assert_eq!(signal_name(64), "signal 64");
    }
}
