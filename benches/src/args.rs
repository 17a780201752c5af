//! What the command lines of the benchmark binaries share (each is a clap derive `Parser`):
//! the help's layout and the parsers of their numbers.

use std::fmt::Display;
use std::str::FromStr;

/// The help's layout: `usage: ...` first (each binary's `override_usage` says how it is run:
/// `cargo run --release -p zk-benches --bin NAME -- [options]`), what it measures, its options
/// under their headings, then the after-help text.
pub const HELP_TEMPLATE: &str = "usage: {usage}\n\n{about-with-newline}\n{all-args}{after-help}";

/// The widest the help is wrapped to.
pub const HELP_WIDTH: usize = 100;

/// A number greater than zero (`--sessions 500`, `--seconds 5`).
///
/// # Errors
///
/// `not a positive integer`, when `value` is not one.
pub fn positive<T>(value: &str) -> Result<T, String>
where
    T: FromStr + Default + PartialOrd,
{
    value
        .parse::<T>()
        .ok()
        .filter(|n| *n > T::default())
        .ok_or_else(|| "not a positive integer".to_owned())
}

/// A number of at least `min` (`--contended-sessions`, at least 2).
pub fn at_least(
    min: usize,
) -> impl Fn(&str) -> Result<usize, String> + Clone + Send + Sync + 'static {
    move |value| match value.parse::<usize>() {
        Ok(n) if n >= min => Ok(n),
        Ok(_) => Err(format!("must be at least {min}")),
        Err(_) => Err("not a count".to_owned()),
    }
}

/// A finite number greater than zero (`--scale 0.01`, `--minutes 0.5`).
///
/// # Errors
///
/// `not a positive number`, when `value` is not one.
pub fn positive_number(value: &str) -> Result<f64, String> {
    value
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && *n > 0.0)
        .ok_or_else(|| "not a positive number".to_owned())
}

/// The first line of a clap error without clap's `error: ` (for a caller that reports errors
/// in one line of its own, as `rzk bench` does).
pub fn one_line(error: &impl Display) -> String {
    let text = error.to_string();
    let first = text.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_checked() {
        assert_eq!(positive::<usize>("3"), Ok(3));
        assert!(positive::<usize>("0").is_err());
        assert!(positive::<u64>("-1").is_err());
        assert_eq!(at_least(2)("2"), Ok(2));
        assert_eq!(at_least(2)("1"), Err("must be at least 2".to_owned()));
        assert!(at_least(0)("x").is_err());
        assert_eq!(positive_number("0.01"), Ok(0.01));
        assert!(positive_number("inf").is_err());
        assert!(positive_number("0").is_err());
    }

    #[test]
    fn one_line_drops_the_prefix_and_the_rest() {
        assert_eq!(
            one_line(&"error: unexpected argument '--x' found\n\nUsage: ..."),
            "unexpected argument '--x' found"
        );
    }
}
