//! Tying a supervised command to rzk's life: however rzk ends, `kill -9` and the OOM killer
//! included, the kernel kills the command at once.
//!
//! On Linux the command's process asks the kernel for SIGKILL when its parent dies
//! (`PR_SET_PDEATHSIG`), which must happen between the fork and the exec. rzk's code has no
//! `unsafe` (a `pre_exec` hook would need it), so the fork runs rzk itself in a hidden mode,
//! [`FLAG`]: that process sets the signal, checks that rzk is still its parent (if rzk died
//! between the fork and the `prctl`, the process was already handed to another parent and no
//! signal would ever come: it then exits without running anything), and replaces itself with
//! the command (`exec`: same pid, same process group, the environment rzk gave it). The
//! kernel keeps the death signal across that exec (it drops it only for set-user-id and
//! set-group-id programs and programs with file capabilities).
//!
//! The death signal follows the *thread* that forked: rzk supervises commands from its main
//! thread (a current-thread runtime), which lives as long as rzk.
//!
//! What remains: the kernel kills the command's own process, not processes it started itself
//! (a shell's children: `sh -c 'exec job'` makes the job the command). rzk's own stops (loss
//! of the lock, signals it passes on) reach the command's whole process group. A paused rzk
//! (SIGSTOP) is alive: its command runs on, unsupervised until rzk resumes; that case is the
//! fencing token's. Other platforms have no death signal: the command is started directly and
//! outlives a killed rzk.

use std::ffi::OsString;
use std::process::ExitCode;

use crate::spec::command_line;

/// The first argument of rzk in its hidden mode: `rzk FLAG <parent pid> <program> <args>...`.
pub(crate) const FLAG: &str = "--rzk-tethered-exec";

/// The command line that runs `command` tethered to this process (the pid of rzk goes with
/// it), or `None` when rzk cannot start itself (its own path unknown); the caller then starts
/// the command directly.
pub(crate) fn tethered(command: &[OsString]) -> Option<(OsString, Vec<OsString>)> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let me = std::env::current_exe().ok()?;
    let mut args = vec![
        OsString::from(FLAG),
        OsString::from(std::process::id().to_string()),
    ];
    args.extend(command.iter().cloned());
    Some((me.into_os_string(), args))
}

/// In the hidden mode (first argument [`FLAG`]), becomes the command and never returns unless
/// that fails: exits 127 (not found) or 126 (not executable) with one line on stderr, or 125
/// without running anything when rzk is already gone. `None` in rzk's normal mode.
pub(crate) fn exec_if_tethered() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != FLAG {
        return None;
    }
    let parent = args
        .next()
        .and_then(|p| p.to_str()?.parse::<i32>().ok())
        .and_then(rustix::process::Pid::from_raw);
    let command: Vec<OsString> = args.collect();
    Some(exec(parent, &command))
}

#[cfg(target_os = "linux")]
fn exec(parent: Option<rustix::process::Pid>, command: &[OsString]) -> ExitCode {
    use std::os::unix::process::CommandExt as _;

    let Some((program, args)) = command.split_first() else {
        say!("{FLAG}: no command");
        return ExitCode::from(2);
    };
    if let Err(e) =
        rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
    {
        say!("cannot tie the command to rzk's life: {e}");
        return ExitCode::from(125);
    }
    // rzk died between the fork and the line above: nobody supervises this command, and the
    // next holder may already run. Run nothing.
    if parent.is_none() || rustix::process::getppid() != parent {
        return ExitCode::from(125);
    }
    let error = std::process::Command::new(program).args(args).exec();
    say!("cannot run {}: {error}", command_line(command));
    ExitCode::from(match error.kind() {
        std::io::ErrorKind::NotFound => 127,
        _ => 126,
    })
}

#[cfg(not(target_os = "linux"))]
fn exec(_parent: Option<rustix::process::Pid>, _command: &[OsString]) -> ExitCode {
    // Never asked for: `tethered` returns `None` off Linux.
    ExitCode::from(2)
}
