//! Decoding bash's ANSI-C quoting (`$'…'`), so a program written as `$'\x72m'` is seen
//! as the `rm` it runs.
//!
//! Permission rules are matched against words after quote removal; a quoting form the
//! lexer did not decode would be a way to spell a denied program that no rule names.
//! This follows bash's table of escapes (`\n`, `\xHH`, `\nnn`, `\uHHHH`, `\cX`, …); as
//! in bash, a NUL ends the word's value.

/// Decodes the body of `$'…'` at the start of `src` (the opening `$'` already consumed)
/// up to and including the closing quote; returns the text and how many bytes it spans.
pub(crate) fn decode(src: &str) -> (String, usize) {
    let mut out = String::new();
    let mut truncated = false;
    let mut push = |out: &mut String, c: char| {
        if c == '\0' {
            truncated = true;
        } else if !truncated {
            out.push(c);
        }
    };
    let mut it = src.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        match c {
            '\'' => return (out, i + 1),
            '\\' => {
                let Some((_, e)) = it.next() else { break };
                let simple = match e {
                    'a' => Some('\u{7}'),
                    'b' => Some('\u{8}'),
                    'e' | 'E' => Some('\u{1b}'),
                    'f' => Some('\u{c}'),
                    'n' => Some('\n'),
                    'r' => Some('\r'),
                    't' => Some('\t'),
                    'v' => Some('\u{b}'),
                    '\\' | '\'' | '"' | '?' => Some(e),
                    _ => None,
                };
                if let Some(s) = simple {
                    push(&mut out, s);
                    continue;
                }
                let (radix, max, first) = match e {
                    '0'..='7' => (8, 3, Some(e)),
                    'x' => (16, 2, None),
                    'u' => (16, 4, None),
                    'U' => (16, 8, None),
                    'c' => {
                        // `\cX`: the control character of X.
                        match it.next() {
                            Some((_, x)) => {
                                let code = (x.to_ascii_uppercase() as u32) & 0x1f;
                                push(&mut out, char::from_u32(code).unwrap_or('\0'));
                            }
                            None => out.push_str("\\c"),
                        }
                        continue;
                    }
                    other => {
                        // Not an escape: bash keeps the backslash.
                        out.push('\\');
                        push(&mut out, other);
                        continue;
                    }
                };
                let mut digits = String::new();
                digits.extend(first);
                while digits.len() < max {
                    match it.peek() {
                        Some(&(_, d)) if d.is_digit(radix) => {
                            digits.push(d);
                            it.next();
                        }
                        _ => break,
                    }
                }
                match u32::from_str_radix(&digits, radix) {
                    // Octal and `\x` give a byte; bash stores it raw, which for the
                    // ASCII range (all that can spell a program name) is that char.
                    Ok(code) => push(&mut out, char::from_u32(code).unwrap_or('\u{fffd}')),
                    Err(_) => {
                        // `\x` with no digits stays as written.
                        out.push('\\');
                        out.push(e);
                    }
                }
            }
            c => push(&mut out, c),
        }
    }
    (out, src.len())
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn escapes_decode_like_bash() {
        assert_eq!(decode("rm' x"), ("rm".to_owned(), 3));
        assert_eq!(decode(r"\x72m'").0, "rm");
        assert_eq!(decode(r"\162\155'").0, "rm");
        assert_eq!(decode(r"\u0072m'").0, "rm");
        assert_eq!(decode(r"a\'b'").0, "a'b");
        assert_eq!(decode(r"a\tb\n'").0, "a\tb\n");
        assert_eq!(decode(r"\q'").0, "\\q");
        assert_eq!(decode(r"rm\0zzz'").0, "rm");
        assert_eq!(decode(r"\cA'").0, "\u{1}");
        assert_eq!(decode("unterminated").0, "unterminated");
    }
}
