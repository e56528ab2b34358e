//! Reading Rust source without a parser, shared by the tests that check the crates' shape
//! (`arch_layers_point_down.rs`, `api_one_path_per_name.rs`): a lexer that keeps code only
//! (comments, strings and char literals removed) with line numbers, the leaves of a `use` tree,
//! a path written in a module made absolute, and the `.rs` files under a directory.
//!
//! Ground rules: tokens are what the checks need (identifiers, `::`, braces, `,`, `;`, `*`;
//! any other character as itself), numbers are dropped; nothing here expands macros.

/// A token of code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    Semi,
    Star,
    Other(char),
}

/// Tokens of the code of `src` (comments, strings and char literals removed), each with its line.
pub fn lex(src: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    let n = c.len();
    // Skips a string body starting after its opening quote; `hashes` for raw strings.
    fn skip_str(c: &[char], mut i: usize, line: &mut usize, raw: Option<usize>) -> usize {
        while i < c.len() {
            let ch = c[i];
            if ch == '\n' {
                *line += 1;
            }
            match raw {
                None if ch == '\\' => {
                    if c.get(i + 1) == Some(&'\n') {
                        *line += 1;
                    }
                    i += 2;
                    continue;
                }
                None if ch == '"' => return i + 1,
                Some(h) if ch == '"' && (0..h).all(|k| c.get(i + 1 + k) == Some(&'#')) => {
                    return i + 1 + h;
                }
                _ => {}
            }
            i += 1;
        }
        i
    }
    while i < n {
        let ch = c[i];
        match ch {
            '\n' => {
                line += 1;
                i += 1;
            }
            _ if ch.is_whitespace() => i += 1,
            '/' if c.get(i + 1) == Some(&'/') => {
                while i < n && c[i] != '\n' {
                    i += 1;
                }
            }
            '/' if c.get(i + 1) == Some(&'*') => {
                let mut depth = 1;
                i += 2;
                while i < n && depth > 0 {
                    if c[i] == '\n' {
                        line += 1;
                    }
                    if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                        depth += 1;
                        i += 2;
                    } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        i += 2;
                    } else {
                        i += 1;
                    }
                }
            }
            '"' => i = skip_str(&c, i + 1, &mut line, None),
            '\'' => {
                // A char literal ('a', '\n', '\u{1F600}') or a lifetime ('a).
                if c.get(i + 1) == Some(&'\\') {
                    i += 2;
                    while i < n && c[i] != '\'' {
                        i += 1;
                    }
                    i += 1;
                } else if c.get(i + 2) == Some(&'\'') {
                    i += 3;
                } else {
                    i += 1;
                }
            }
            _ if ch.is_alphabetic() || ch == '_' => {
                let start = i;
                while i < n && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
                let word: String = c[start..i].iter().collect();
                // Raw and byte strings: r"…", r#"…"#, b"…", br"…".
                if (word == "r" || word == "br") && matches!(c.get(i), Some('"') | Some('#')) {
                    let mut h = 0;
                    while c.get(i + h) == Some(&'#') {
                        h += 1;
                    }
                    if c.get(i + h) == Some(&'"') {
                        i = skip_str(&c, i + h + 1, &mut line, Some(h));
                        continue;
                    }
                }
                if word == "b" && c.get(i) == Some(&'"') {
                    i = skip_str(&c, i + 1, &mut line, None);
                    continue;
                }
                if word == "b" && c.get(i) == Some(&'\'') {
                    i += 1;
                    if c.get(i) == Some(&'\\') {
                        i += 1;
                    }
                    while i < n && c[i] != '\'' {
                        i += 1;
                    }
                    i += 1;
                    continue;
                }
                out.push((Tok::Ident(word), line));
            }
            _ if ch.is_ascii_digit() => {
                while i < n && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
            }
            ':' if c.get(i + 1) == Some(&':') => {
                out.push((Tok::PathSep, line));
                i += 2;
            }
            '{' => {
                out.push((Tok::Open, line));
                i += 1;
            }
            '}' => {
                out.push((Tok::Close, line));
                i += 1;
            }
            ',' => {
                out.push((Tok::Comma, line));
                i += 1;
            }
            ';' => {
                out.push((Tok::Semi, line));
                i += 1;
            }
            '*' => {
                out.push((Tok::Star, line));
                i += 1;
            }
            _ => {
                out.push((Tok::Other(ch), line));
                i += 1;
            }
        }
    }
    out
}

pub fn ident(t: Option<&(Tok, usize)>) -> Option<&str> {
    match t {
        Some((Tok::Ident(s), _)) => Some(s.as_str()),
        _ => None,
    }
}

/// One leaf of a `use` tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UseLeaf {
    /// The path written, relative to the tree's root (`{self, …}` keeps its `self`).
    pub path: Vec<String>,
    /// The line of its last segment.
    pub line: usize,
    /// The name given with `as`.
    pub alias: Option<String>,
    /// A glob (`path::*`).
    pub glob: bool,
}

/// A use tree's leaves, the tree starting at `toks[*i]`, each relative to `prefix`.
pub fn use_tree(toks: &[(Tok, usize)], i: &mut usize, prefix: &[String], out: &mut Vec<UseLeaf>) {
    let mut path = prefix.to_vec();
    let mut line = toks.get(*i).map_or(0, |t| t.1);
    loop {
        match toks.get(*i) {
            Some((Tok::Ident(s), l)) if s != "as" => {
                path.push(s.clone());
                line = *l;
                *i += 1;
            }
            Some((Tok::PathSep, _)) => *i += 1,
            Some((Tok::Open, _)) => {
                *i += 1;
                loop {
                    match toks.get(*i) {
                        Some((Tok::Close, _)) => {
                            *i += 1;
                            return;
                        }
                        Some((Tok::Comma, _)) => *i += 1,
                        None => return,
                        _ => use_tree(toks, i, &path, out),
                    }
                }
            }
            Some((Tok::Star, l)) => {
                *i += 1;
                out.push(UseLeaf {
                    path,
                    line: *l,
                    alias: None,
                    glob: true,
                });
                return;
            }
            Some((Tok::Ident(s), _)) if s == "as" => {
                let alias = ident(toks.get(*i + 1)).map(str::to_string);
                *i += 2;
                out.push(UseLeaf {
                    path,
                    line,
                    alias,
                    glob: false,
                });
                return;
            }
            _ => {
                if path.len() > prefix.len() {
                    out.push(UseLeaf {
                        path,
                        line,
                        alias: None,
                        glob: false,
                    });
                }
                return;
            }
        }
    }
}

/// `path` written in module `module`, made absolute; `None` when it does not start at
/// `crate`, `super` or `self` (an external crate, or a name in scope).
pub fn absolute(module: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut base: Vec<String> = module.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") | Some("$crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// Every `.rs` file under `src` with its text, by path relative to it (`/`-separated), in path
/// order.
pub fn read_rs_files(src: &std::path::Path) -> Vec<(String, String)> {
    fn walk(dir: &std::path::Path, root: &std::path::Path, out: &mut Vec<(String, String)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
            .map(|e| e.expect("dir entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|x| x == "rs") {
                let rel = path.strip_prefix(root).expect("under src");
                let rel = rel.to_string_lossy().replace('\\', "/");
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
                out.push((rel, text));
            }
        }
    }
    let mut out = Vec::new();
    walk(src, src, &mut out);
    out
}
