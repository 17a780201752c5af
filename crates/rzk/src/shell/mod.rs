//! The interactive shell (`rzk` without a command, or `rzk shell`): ZooKeeper's shell
//! commands and rzk's own on one session, with line editing (rustyline), history kept across
//! runs, tab completion of commands and of node paths (listed from the server as you type),
//! `connect` and `close`, a prompt that shows the server and the session's state, and watch
//! events and state changes printed as they come, above the line being edited.
//!
//! - `words`: splitting a line into words, as a shell would (quotes, backslashes);
//! - `complete`: the completion of commands and paths.
//!
//! Each line is parsed by clap with the same commands as the command line (`ShellLine`), so
//! a command's options and output are those of its one-shot form; `lock`, `leader`,
//! `barrier`, `gate`, `bench`, `server` and `shell` run as commands of their own only.

mod complete;
mod words;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use clap::{Parser, Subcommand};
use rustyline::error::ReadlineError;
use rustyline::history::{DefaultHistory, History};
use rustyline::{Config, Editor, ExternalPrinter as _};
use tokio::sync::mpsc;
use zk_proto::{Client, SessionState};

use crate::cli::{Command, Global};
use crate::commands::{self, WatchSink};
use crate::connect::Connector;
use crate::exit::{ExitClass, Failure};
use crate::output::{Output, error_line};
use crate::spec::{Data, data_arg, parse_auth};

use complete::ShellHelper;

/// How many history entries are kept in the file.
const HISTORY_SIZE: usize = 1000;

/// One line of the shell: an rzk command, or one of the shell's own.
#[derive(Debug, Parser)]
#[command(
    name = "rzk",
    no_binary_name = true,
    disable_version_flag = true,
    max_term_width = 100,
    about = "rzk's shell: ZooKeeper's commands and rzk's; `COMMAND --help` for one",
    after_help = "Tab completes commands and node paths; history is kept across runs."
)]
struct ShellLine {
    /// Print this command's result as JSON
    #[arg(long, global = true)]
    json: bool,
    /// Say on stderr what happens
    #[arg(short, long, global = true)]
    verbose: bool,
    /// What to do.
    #[command(subcommand)]
    command: ShellCommand,
}

/// The shell's own commands, beside rzk's.
#[derive(Debug, Subcommand)]
enum ShellCommand {
    /// An rzk command.
    #[command(flatten)]
    Rzk(Command),
    /// Close this session and open one on another ensemble (host:port,.../chroot)
    Connect {
        /// The connect string (default: the one the shell started with)
        server: Option<String>,
    },
    /// Close the session (its ephemeral nodes go); `connect` opens another
    Close,
    /// Add credentials to the session: addauth digest user:password
    Addauth {
        /// The scheme (digest, or any the server takes)
        scheme: String,
        /// The credential (user:password for digest)
        auth: String,
    },
    /// The last commands, numbered (for redo)
    History,
    /// Run command number N of the history again
    Redo {
        /// The number `history` shows
        number: usize,
    },
    /// Print watch events as they come (on), or not (off)
    Printwatches {
        /// on or off
        #[arg(value_parser = ["on", "off"])]
        on: String,
    },
    /// Leave the shell
    #[command(alias = "exit")]
    Quit,
}

/// What a line asks of the shell's loop.
enum Next {
    /// Read the next line.
    Continue,
    /// Leave.
    Quit,
}

/// The session the shell is on, shared with the completion (which lists paths on it).
#[derive(Clone, Default)]
pub(crate) struct Session(Arc<Mutex<Option<Client>>>);

impl Session {
    fn lock(&self) -> MutexGuard<'_, Option<Client>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The client, if a session is open.
    pub(crate) fn client(&self) -> Option<Client> {
        self.lock().clone()
    }

    fn set(&self, client: Option<Client>) -> Option<Client> {
        std::mem::replace(&mut *self.lock(), client)
    }
}

/// The shell's state between lines.
struct Shell {
    runtime: tokio::runtime::Runtime,
    global: Global,
    /// The connect string of the session (for the prompt).
    server: String,
    session: Session,
    /// Watch events and state changes, printed above the prompt.
    events: mpsc::UnboundedSender<String>,
    /// Whether watch events are printed.
    print_watches: Arc<std::sync::atomic::AtomicBool>,
    /// The task that reports the session's state changes.
    state_task: Option<tokio::task::JoinHandle<()>>,
    /// Commands run (for the prompt's counter).
    count: usize,
    history: Option<PathBuf>,
}

/// Where the history is kept: `RZK_HISTORY`, else `$XDG_STATE_HOME/rzk/history`, else
/// `~/.local/state/rzk/history`; `None` without any of these.
fn history_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("RZK_HISTORY").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|p| !p.is_empty())
                .map(|home| PathBuf::from(home).join(".local/state"))
        })?;
    Some(state.join("rzk/history"))
}

/// The state as the prompt shows it.
fn state_name(state: SessionState) -> &'static str {
    match state {
        SessionState::Connecting => "CONNECTING",
        SessionState::Connected => "CONNECTED",
        SessionState::ConnectedReadOnly => "READONLY",
        SessionState::Disconnected => "DISCONNECTED",
        SessionState::Expired => "EXPIRED",
        SessionState::AuthFailed => "AUTH_FAILED",
        SessionState::Closed => "CLOSED",
        _ => "UNKNOWN",
    }
}

/// Runs the shell until `quit` or end of input; returns rzk's exit status (0, or 1 when the
/// terminal could not be used).
pub(crate) fn run(global: Global) -> u8 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        // One worker: the session's task (pings, watch events) runs while the shell waits for
        // a line.
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            say!("tokio runtime: {e}");
            return ExitClass::Failure.code();
        }
    };
    let (events, mut received) = mpsc::unbounded_channel::<String>();
    let mut shell = Shell {
        runtime,
        server: global.server.clone(),
        global,
        session: Session::default(),
        events,
        print_watches: Arc::new(std::sync::atomic::AtomicBool::new(true)),
        state_task: None,
        count: 0,
        history: history_path(),
    };
    let config = Config::builder()
        .max_history_size(HISTORY_SIZE)
        .and_then(|c| c.history_ignore_dups(true))
        .map(|c| c.history_ignore_space(true).auto_add_history(false).build());
    let editor = config.and_then(Editor::<ShellHelper, DefaultHistory>::with_config);
    let mut editor = match editor {
        Ok(editor) => editor,
        Err(e) => {
            say!("cannot use the terminal: {e}");
            return ExitClass::Failure.code();
        }
    };
    editor.set_helper(Some(ShellHelper::new(
        shell.runtime.handle().clone(),
        shell.session.clone(),
    )));
    if let Some(path) = &shell.history {
        // A first run has no history yet.
        let _ = editor.load_history(path);
    }
    // Events go above the prompt while a line is edited (rustyline's external printer), or
    // straight to stdout when the input is not a terminal.
    let mut printer = editor.create_external_printer().ok();
    std::thread::spawn(move || {
        while let Some(line) = received.blocking_recv() {
            let printed = printer
                .as_mut()
                .is_some_and(|p| p.print(format!("{line}\n")).is_ok());
            if !printed {
                println!("{line}");
            }
        }
    });
    // Ctrl-C while a command runs stops the command, not the shell (at the prompt the
    // terminal is raw and rustyline reads it as a key).
    let interrupts = shell.runtime.block_on(async {
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok()
    });
    let mut interrupts = interrupts;
    shell.open(None);
    loop {
        let prompt = shell.prompt();
        match editor.readline(&prompt) {
            Ok(line) => {
                // Credentials are not kept in the history file.
                if !line.trim().is_empty() && !line.trim_start().starts_with("addauth") {
                    let _ = editor.add_history_entry(line.as_str());
                    shell.save_history(&mut editor);
                }
                match shell.line(&line, &mut editor, interrupts.as_mut()) {
                    Next::Continue => {}
                    Next::Quit => break,
                }
            }
            Err(ReadlineError::Interrupted) => {}
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                say!("reading a line: {e}");
                break;
            }
        }
    }
    shell.close();
    0
}

impl Shell {
    /// `[rzk: 127.0.0.1:2181(CONNECTED) 3] `.
    fn prompt(&self) -> String {
        let state = self
            .session
            .client()
            .map_or("CLOSED", |c| state_name(c.state()));
        format!("[rzk: {}({state}) {}] ", self.server, self.count)
    }

    fn save_history(&self, editor: &mut Editor<ShellHelper, DefaultHistory>) {
        let Some(path) = &self.history else { return };
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if let Err(e) = editor.append_history(path) {
            say!("history {}: {e}", path.display());
        }
    }

    fn output(&self, json: bool, verbose: bool) -> Output {
        Output {
            json: json || self.global.json,
            verbose: verbose || self.global.verbose,
        }
    }

    /// Opens a session on `server` (default: the current connect string), closing the one
    /// open; a failure is said and leaves the shell without a session.
    fn open(&mut self, server: Option<String>) {
        self.close();
        let mut global = self.global.clone();
        if let Some(server) = server {
            global.server = server;
            global.chroot = None;
        }
        self.server = global.server.clone();
        let connected = Connector::new(&global).and_then(|connector| {
            let client = self.runtime.block_on(connector.connect())?;
            Ok((connector, client))
        });
        match connected {
            Ok((_, client)) => {
                self.watch_states(&client);
                self.session.set(Some(client));
                self.global = global;
            }
            Err(failure) => {
                error_line(self.global.json, &failure.message, failure.class, None);
                say!("not connected; `connect HOST:PORT` opens a session");
            }
        }
    }

    /// Reports the session's state changes above the prompt.
    fn watch_states(&mut self, client: &Client) {
        let mut states = client.state_watcher();
        let events = self.events.clone();
        self.state_task = Some(self.runtime.spawn(async move {
            while states.changed().await.is_ok() {
                let state = *states.borrow_and_update();
                let text = match state {
                    SessionState::Disconnected => {
                        "session: connection lost; reconnecting (the session may expire)"
                    }
                    SessionState::Connected => "session: connected",
                    SessionState::ConnectedReadOnly => "session: connected to a read-only server",
                    SessionState::Expired => {
                        "session: the session expired (`connect` opens a new one)"
                    }
                    SessionState::AuthFailed => "session: authentication failed",
                    _ => continue,
                };
                if events.send(text.to_owned()).is_err() || state.is_terminal() {
                    return;
                }
            }
        }));
    }

    /// Closes the session, if one is open.
    fn close(&mut self) {
        if let Some(task) = self.state_task.take() {
            task.abort();
        }
        if let Some(client) = self.session.set(None) {
            self.runtime.block_on(async {
                if client.state().is_connected() {
                    client.close().await.ok();
                }
            });
        }
    }

    /// Runs one line.
    fn line(
        &mut self,
        line: &str,
        editor: &mut Editor<ShellHelper, DefaultHistory>,
        interrupts: Option<&mut tokio::signal::unix::Signal>,
    ) -> Next {
        let words = match words::split(line) {
            Ok(words) if words.is_empty() => return Next::Continue,
            Ok(words) => words,
            Err(e) => {
                say!("{e}");
                return Next::Continue;
            }
        };
        let parsed = match ShellLine::try_parse_from(&words) {
            Ok(parsed) => parsed,
            Err(e) => {
                // Help, or a usage error: clap's text as it is.
                let _ = e.print();
                return Next::Continue;
            }
        };
        self.count += 1;
        let out = self.output(parsed.json, parsed.verbose);
        match parsed.command {
            ShellCommand::Quit => return Next::Quit,
            ShellCommand::Connect { server } => self.open(server),
            ShellCommand::Close => {
                self.close();
            }
            ShellCommand::Addauth { scheme, auth } => self.addauth(&scheme, &auth, out),
            ShellCommand::History => {
                let history = editor.history();
                let skip = history.len().saturating_sub(20);
                for (n, entry) in history.iter().enumerate().skip(skip) {
                    println!("{n:>4}  {entry}");
                }
            }
            ShellCommand::Redo { number } => {
                let entry = editor.history().iter().nth(number).cloned();
                match entry {
                    Some(entry)
                        if ShellLine::try_parse_from(words::split(&entry).unwrap_or_default())
                            .is_ok_and(|l| matches!(l.command, ShellCommand::Redo { .. })) =>
                    {
                        say!("redo {number}: that is a redo itself");
                    }
                    Some(entry) => {
                        println!("{entry}");
                        return self.line(&entry, editor, interrupts);
                    }
                    None => say!("redo {number}: no such history entry"),
                }
            }
            ShellCommand::Printwatches { on } => {
                self.print_watches
                    .store(on == "on", std::sync::atomic::Ordering::Relaxed);
            }
            ShellCommand::Rzk(command) => {
                if let Err(failure) = self.command(command, out, interrupts)
                    && !failure.message.is_empty()
                {
                    error_line(out.json, &failure.message, failure.class, None);
                }
            }
        }
        Next::Continue
    }

    fn addauth(&self, scheme: &str, auth: &str, out: Output) {
        let Some(client) = self.session.client() else {
            say!("not connected; `connect HOST:PORT` opens a session");
            return;
        };
        let parsed = match parse_auth(&format!("{scheme}:{auth}")) {
            Ok(parsed) => parsed,
            Err(e) => {
                error_line(out.json, &e, ExitClass::Usage, None);
                return;
            }
        };
        let added = self.runtime.block_on(async {
            if parsed.scheme == zk_proto::acl::DIGEST_SCHEME {
                let (user, password) = parsed.credential.split_once(':').unwrap_or_default();
                client.add_digest_auth(user, password).await
            } else {
                client
                    .add_auth(&parsed.scheme, parsed.credential.clone().into_bytes())
                    .await
            }
        });
        if let Err(e) = added {
            let failure = Failure::zk(&format!("addauth {scheme}"), &e);
            error_line(out.json, &failure.message, failure.class, None);
        }
    }

    /// Runs one of rzk's commands on the session; Ctrl-C stops it.
    fn command(
        &mut self,
        command: Command,
        out: Output,
        interrupts: Option<&mut tokio::signal::unix::Signal>,
    ) -> Result<u8, Failure> {
        let name = match &command {
            Command::Lock(_) => Some("lock"),
            Command::Leader(_) => Some("leader"),
            Command::Barrier(_) => Some("barrier"),
            Command::Gate(_) => Some("gate"),
            Command::Bench { .. } => Some("bench"),
            Command::Shell => Some("shell"),
            Command::Server(_) => Some("server"),
            _ => None,
        };
        if let Some(name) = name {
            return Err(Failure::usage(format!(
                "{name} runs as an rzk command of its own, not in the shell"
            )));
        }
        commands::check(&command)?;
        let data = match &command {
            Command::Set { data, .. } => Some(inline(data_arg(Some(data)))?),
            Command::Create(args) => Some(inline(data_arg(args.data.as_deref()))?),
            _ => None,
        };
        let Some(client) = self.session.client() else {
            return Err(Failure::new(
                ExitClass::Connection,
                "not connected; `connect HOST:PORT` opens a session",
            ));
        };
        let connector = Connector::new(&self.global)?;
        let sink = if self
            .print_watches
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            WatchSink::Background(self.events.clone())
        } else {
            WatchSink::Background(mpsc::unbounded_channel().0)
        };
        self.runtime.block_on(async {
            let run = commands::dispatch(&client, &connector, command, data, out, &sink);
            match interrupts {
                Some(interrupts) => {
                    // A Ctrl-C that a command took itself (`watch` ends on it) reached this
                    // stream too: drop it, or it would interrupt this command at once.
                    while let Ok(Some(())) =
                        tokio::time::timeout(std::time::Duration::ZERO, interrupts.recv()).await
                    {
                    }
                    tokio::select! {
                    outcome = run => outcome,
                    _ = interrupts.recv() => {
                        say!("interrupted");
                        Ok(130)
                    }
                    }
                }
                None => run.await,
            }
        })
    }
}

/// The bytes of a data argument in the shell, where `-` (standard input) is not offered.
fn inline(data: Data) -> Result<Vec<u8>, Failure> {
    match data {
        Data::Inline(bytes) => Ok(bytes),
        Data::Stdin => Err(Failure::usage(
            "data from standard input (-) is not read in the shell; give it as an argument",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> ShellLine {
        ShellLine::try_parse_from(words::split(line).expect("words")).expect("parse")
    }

    #[test]
    fn shell_lines_take_rzk_commands_zkcli_names_and_the_shells_own() {
        assert!(matches!(
            parse("get -w /a").command,
            ShellCommand::Rzk(Command::Get { watch: true, .. })
        ));
        assert!(matches!(
            parse("deleteall -b 10 /a").command,
            ShellCommand::Rzk(Command::Deleteall {
                batch: Some(10),
                ..
            })
        ));
        assert!(matches!(
            parse("getAllChildrenNumber /").command,
            ShellCommand::Rzk(Command::ChildrenCount { .. })
        ));
        assert!(parse("ls --json /").json);
        assert!(matches!(
            parse("connect 127.0.0.1:2182").command,
            ShellCommand::Connect { server: Some(_) }
        ));
        assert!(matches!(
            parse("addauth digest bob:pw").command,
            ShellCommand::Addauth { .. }
        ));
        assert!(matches!(parse("exit").command, ShellCommand::Quit));
        assert!(ShellLine::try_parse_from(["printwatches", "maybe"]).is_err());
    }

    #[test]
    fn the_history_file_follows_the_environment_conventions() {
        // Only the pure part: the state directory's layout.
        let path = PathBuf::from("/state").join("rzk/history");
        assert!(path.ends_with("rzk/history"));
        assert_eq!(state_name(SessionState::Connected), "CONNECTED");
        assert_eq!(state_name(SessionState::Closed), "CLOSED");
    }
}
