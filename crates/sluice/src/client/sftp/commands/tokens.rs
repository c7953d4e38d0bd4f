//! A command line split into words as sftp splits it (makeargv), for the
//! first command's guess (first.rs) and the shell (mod.rs).

/// Splits a command line into words: blanks separate, '...' and "..."
/// quote, a backslash escapes the next byte (sftp's makeargv).
pub(super) fn tokenize(line: &[u8]) -> Result<Vec<Vec<u8>>, &'static str> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    let mut in_word = false;
    let mut quote: Option<u8> = None;
    let mut it = line.iter().copied();
    while let Some(c) = it.next() {
        match (quote, c) {
            (_, b'\\') if quote != Some(b'\'') => {
                let Some(n) = it.next() else {
                    return Err("Unterminated escape sequence");
                };
                cur.push(n);
                in_word = true;
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, b'\'' | b'"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, b' ' | b'\t' | b'\n' | b'\r') => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err("Unterminated quoted argument");
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_as_sftp_splits_them() {
        let w = tokenize(br#"put "a b" c\ d 'e\f' "#).unwrap();
        assert_eq!(
            w,
            vec![
                b"put".to_vec(),
                b"a b".to_vec(),
                b"c d".to_vec(),
                b"e\\f".to_vec()
            ]
        );
        assert!(tokenize(b"get \"x").is_err());
        assert_eq!(tokenize(b"get \xff").unwrap()[1], b"\xff");
    }
}
