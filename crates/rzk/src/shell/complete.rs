//! Tab completion in the shell: the first word among the commands, a word starting with `/`
//! among the children of its parent node, listed from the server when Tab is pressed (at
//! most one round trip, bounded by [`LIST_LIMIT`]: a slow server gives no completion rather
//! than a stuck prompt).

use std::time::Duration;

use clap::CommandFactory;
use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};

use super::{Session, ShellLine, words};
use crate::paths;

/// How long a listing for a completion may take.
const LIST_LIMIT: Duration = Duration::from_secs(2);

/// rustyline's helper: completion only (no hints, colours or multi-line input).
pub(crate) struct ShellHelper {
    runtime: tokio::runtime::Handle,
    session: Session,
    commands: Vec<String>,
}

impl ShellHelper {
    /// A helper listing paths on `session` with `runtime`.
    pub(crate) fn new(runtime: tokio::runtime::Handle, session: Session) -> ShellHelper {
        let mut commands: Vec<String> = ShellLine::command()
            .get_subcommands()
            .flat_map(|c| {
                std::iter::once(c.get_name().to_owned())
                    .chain(c.get_all_aliases().map(str::to_owned))
            })
            .collect();
        commands.sort();
        commands.dedup();
        ShellHelper {
            runtime,
            session,
            commands,
        }
    }

    /// The children of `parent` whose name starts with `prefix`, as full paths, sorted;
    /// none when there is no session or the listing fails.
    fn paths(&self, parent: &str, prefix: &str) -> Vec<String> {
        let Some(client) = self.session.client() else {
            return Vec::new();
        };
        let listing = self.runtime.block_on(async {
            tokio::time::timeout(LIST_LIMIT, client.get_children(parent)).await
        });
        let Ok(Ok(listed)) = listing else {
            return Vec::new();
        };
        let mut children: Vec<&str> = listed.iter().filter(|c| c.starts_with(prefix)).collect();
        children.sort_unstable();
        children.iter().map(|c| paths::child(parent, c)).collect()
    }
}

/// The parent node and the name prefix of a partial path (`/a/b` is `/a` and `b`, `/a/` is
/// `/a` and ``, `/` is `/` and ``).
pub(crate) fn split_partial(word: &str) -> (&str, &str) {
    match word.rfind('/') {
        Some(0) => ("/", &word[1..]),
        Some(at) => (&word[..at], &word[at + 1..]),
        None => ("/", word),
    }
}

impl Completer for ShellHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let start = words::word_start(line, pos);
        let word = &line[start..pos];
        let candidates: Vec<String> = if line[..start].trim().is_empty() {
            self.commands
                .iter()
                .filter(|c| c.starts_with(word))
                .cloned()
                .collect()
        } else if word.starts_with('/') {
            let (parent, prefix) = split_partial(word);
            self.paths(parent, prefix)
        } else {
            Vec::new()
        };
        Ok((
            start,
            candidates
                .into_iter()
                .map(|c| Pair {
                    display: c.clone(),
                    replacement: c,
                })
                .collect(),
        ))
    }
}

impl Hinter for ShellHelper {
    type Hint = String;
}

impl Highlighter for ShellHelper {}

impl Validator for ShellHelper {}

impl Helper for ShellHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_paths_split_into_parent_and_prefix() {
        assert_eq!(split_partial("/"), ("/", ""));
        assert_eq!(split_partial("/ap"), ("/", "ap"));
        assert_eq!(split_partial("/app/"), ("/app", ""));
        assert_eq!(split_partial("/app/con"), ("/app", "con"));
    }
}
