//! Splitting a shell line into words as a POSIX shell would for simple commands: blanks
//! separate words; `'...'` keeps everything literally; `"..."` keeps everything but `\"` and
//! `\\`; a backslash outside quotes keeps the next character. No expansion of any kind.

/// The words of `line`.
///
/// # Errors
///
/// A message when a quote is not closed or the line ends with a lone backslash.
pub(crate) fn split(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("unclosed ' quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err("unclosed \" quote".into()),
                        },
                        Some(c) => word.push(c),
                        None => return Err("unclosed \" quote".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err("the line ends with a lone backslash".into()),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// Where the word under the cursor starts: after the last blank before `pos` (quotes are not
/// taken into account: completion is for paths, which have no blanks).
pub(crate) fn word_start(line: &str, pos: usize) -> usize {
    line[..pos].rfind(char::is_whitespace).map_or(0, |at| {
        at + line[at..].chars().next().map_or(1, char::len_utf8)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_like_a_shell() {
        assert_eq!(split("  ls   /a ").expect("split"), ["ls", "/a"]);
        assert_eq!(
            split(r#"set /a 'two words' "x \"y\" \z" a\ b ''"#).expect("split"),
            ["set", "/a", "two words", r#"x "y" \z"#, "a b", ""]
        );
        assert_eq!(split("").expect("empty"), Vec::<String>::new());
        assert!(split("set /a 'open").is_err());
        assert!(split("set /a \"open").is_err());
        assert!(split("set /a \\").is_err());
    }

    #[test]
    fn the_word_under_the_cursor() {
        assert_eq!(word_start("ls /a/b", 7), 3);
        assert_eq!(word_start("ls", 2), 0);
        assert_eq!(word_start("get ", 4), 4);
    }
}
