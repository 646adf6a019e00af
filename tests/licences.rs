//! Licence check, offline: every Rust dependency (`cargo metadata --format-version 1 --locked
//! --offline`, every package that is not a workspace member, on every platform) and every npm
//! package in `ui/package-lock.json` and `tap/package-lock.json` (switchboard-tap; dev
//! dependencies included) must carry a licence
//! expression made only of licences on [`ALLOWED`], which are compatible with our
//! `MIT OR Apache-2.0`. `scripts/test.sh` runs it before the rest of the tests:
//! `cargo test -p switchboard --locked --test licences -- --nocapture`.
//!
//! The SPDX expression parser handles `OR`, `AND`, `WITH` and parentheses (precedence `WITH`,
//! then `AND`, then `OR`): an `OR` is satisfied when one side is allowed, an `AND` needs both.
//! Cargo's legacy `/` separator (`MIT/Apache-2.0`) means `OR`. A failure names the package, its
//! version and its licence. A package with only a `license-file` must be listed by name in
//! [`LICENCE_FILES`] with the licence read from that file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Licences we accept, each compatible with shipping Switchboard as `MIT OR Apache-2.0`.
/// Taken from what the dependencies actually use, plus a few close relatives.
const ALLOWED: &[&str] = &[
    "MIT",
    "MIT-0",
    "Apache-2.0",
    "BSD-2-Clause",
    "BSD-3-Clause",
    "ISC",
    "Zlib",
    "0BSD",
    "BSL-1.0",
    "Unlicense",
    "CC0-1.0",
    // Unicode data tables (unicode-ident, icu_*)
    "Unicode-3.0",
    "Unicode-DFS-2016",
    "CDLA-Permissive-2.0",
    // Permissive, MIT-like (npm: lru-cache, a dev dependency of the front end's tooling)
    "BlueOak-1.0.0",
    // Exception, file-level copyleft: cssparser, cssparser-macros, dtoa-short, selectors (Tauri's
    // HTML handling), option-ext (dirs), webdriver (fantoccini, tests only). We use them
    // unmodified; MPL-2.0 only asks that changes to those files stay MPL-2.0 and their source
    // stays available (it is, on crates.io), so it combines with MIT OR Apache-2.0.
    "MPL-2.0",
];

/// Licence exceptions accepted after `WITH` (on top of an allowed licence).
const ALLOWED_EXCEPTIONS: &[&str] = &["LLVM-exception"];

/// Packages that give no `license` expression but a `license-file`: (name, the licence read
/// from that file as an SPDX expression, where it was read). None today; a new one fails the
/// check until it is listed here.
const LICENCE_FILES: &[(&str, &str, &str)] = &[];

/// One third-party package as the check sees it.
#[derive(Debug, Clone)]
struct Package {
    /// `crate` or `npm`.
    kind: &'static str,
    name: String,
    version: String,
    /// The SPDX expression, when the package gives one.
    license: Option<String>,
    /// The licence file, when the package gives one instead.
    license_file: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Id(String),
    And,
    Or,
    With,
    Open,
    Close,
}

fn tokenize(expr: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    let flush = |word: &mut String, tokens: &mut Vec<Token>| {
        if !word.is_empty() {
            tokens.push(match word.as_str() {
                "AND" => Token::And,
                "OR" => Token::Or,
                "WITH" => Token::With,
                _ => Token::Id(word.clone()),
            });
            word.clear();
        }
    };
    for c in expr.chars() {
        match c {
            '(' | ')' | '/' => {
                flush(&mut word, &mut tokens);
                tokens.push(match c {
                    '(' => Token::Open,
                    ')' => Token::Close,
                    _ => Token::Or,
                });
            }
            c if c.is_whitespace() => flush(&mut word, &mut tokens),
            c => word.push(c),
        }
    }
    flush(&mut word, &mut tokens);
    tokens
}

/// A parsed SPDX expression.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Expr {
    /// A licence, with the exception after `WITH` when there is one.
    Licence(String, Option<String>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.at).cloned();
        self.at += 1;
        t
    }

    fn or(&mut self) -> Result<Expr, String> {
        let mut left = self.and()?;
        while self.peek() == Some(&Token::Or) {
            self.next();
            left = Expr::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, String> {
        let mut left = self.atom()?;
        while self.peek() == Some(&Token::And) {
            self.next();
            left = Expr::And(Box::new(left), Box::new(self.atom()?));
        }
        Ok(left)
    }

    fn atom(&mut self) -> Result<Expr, String> {
        match self.next() {
            Some(Token::Open) => {
                let inner = self.or()?;
                match self.next() {
                    Some(Token::Close) => Ok(inner),
                    other => Err(format!("expected `)`, found {other:?}")),
                }
            }
            Some(Token::Id(id)) => {
                if self.peek() == Some(&Token::With) {
                    self.next();
                    match self.next() {
                        Some(Token::Id(exception)) => Ok(Expr::Licence(id, Some(exception))),
                        other => Err(format!("expected an exception after WITH, found {other:?}")),
                    }
                } else {
                    Ok(Expr::Licence(id, None))
                }
            }
            other => Err(format!("expected a licence or `(`, found {other:?}")),
        }
    }
}

/// Parses an SPDX licence expression.
fn parse(expr: &str) -> Result<Expr, String> {
    let mut p = Parser {
        tokens: tokenize(expr),
        at: 0,
    };
    let e = p.or()?;
    match p.peek() {
        None => Ok(e),
        Some(t) => Err(format!("unexpected {t:?}")),
    }
}

/// Whether `expr` can be satisfied with allowed licences only.
fn allowed(expr: &Expr) -> bool {
    match expr {
        Expr::Licence(id, exception) => {
            ALLOWED.contains(&id.as_str())
                && exception
                    .as_deref()
                    .map_or(true, |e| ALLOWED_EXCEPTIONS.contains(&e))
        }
        Expr::And(a, b) => allowed(a) && allowed(b),
        Expr::Or(a, b) => allowed(a) || allowed(b),
    }
}

/// Whether the SPDX expression `license` is allowed; `Err` with why when it is not.
fn check_expression(license: &str) -> Result<(), String> {
    let expr = parse(license).map_err(|e| format!("not a valid SPDX expression: {e}"))?;
    if allowed(&expr) {
        Ok(())
    } else {
        Err("not on the allow list (tests/licences.rs ALLOWED)".to_string())
    }
}

/// Checks every package, reading the licence of `license-file`-only packages from
/// `licence_files` (see [`LICENCE_FILES`]); returns one line per refused package.
fn check(packages: &[Package], licence_files: &[(&str, &str, &str)]) -> Vec<String> {
    let mut problems = Vec::new();
    for p in packages {
        let what = format!("{} {} {}", p.kind, p.name, p.version);
        let license = match (&p.license, &p.license_file) {
            (Some(l), _) => l.clone(),
            (None, file) => match licence_files.iter().find(|(name, _, _)| *name == p.name) {
                Some((_, l, _)) => l.to_string(),
                None => {
                    problems.push(format!(
                            "{what}: no licence expression (licence file: {}); read it and list the package in tests/licences.rs LICENCE_FILES",
                            file.as_deref().unwrap_or("none")
                        ));
                    continue;
                }
            },
        };
        if let Err(why) = check_expression(&license) {
            problems.push(format!("{what}: licence `{license}` is {why}"));
        }
    }
    problems
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every package in the lock file that is not a workspace member, on every platform.
fn rust_packages() -> Vec<Package> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata --locked --offline failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata gives JSON");
    let members: HashSet<&str> = meta["workspace_members"]
        .as_array()
        .expect("workspace_members")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter(|p| !members.contains(p["id"].as_str().unwrap_or_default()))
        .map(|p| Package {
            kind: "crate",
            name: p["name"].as_str().unwrap_or_default().to_string(),
            version: p["version"].as_str().unwrap_or_default().to_string(),
            license: p["license"].as_str().map(str::to_string),
            license_file: p["license_file"].as_str().map(str::to_string),
        })
        .collect()
}

/// Every package in the npm lockfile `lockfile` (relative to the repository: `ui/package-lock.json`,
/// `tap/package-lock.json`; lockfile v2/v3 `packages`), dev dependencies too, except the
/// package itself (`""`) and workspace links (their targets are listed too).
fn npm_packages(lockfile: &str) -> Vec<Package> {
    let path = root().join(lockfile);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{lockfile} is not readable: {e}"));
    let lock: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{lockfile} is not JSON: {e}"));
    let version = lock["lockfileVersion"].as_u64().unwrap_or(0);
    assert!(
        version >= 2,
        "{lockfile}: lockfileVersion {version}; need 2 or 3 (a `packages` map with `license`)"
    );
    lock["packages"]
        .as_object()
        .unwrap_or_else(|| panic!("{lockfile} has no `packages`"))
        .iter()
        .filter(|(key, entry)| !key.is_empty() && entry["link"] != Value::Bool(true))
        .map(|(key, entry)| {
            let from_path = key.rsplit("node_modules/").next().unwrap_or(key);
            Package {
                kind: "npm",
                name: entry["name"].as_str().unwrap_or(from_path).to_string(),
                version: entry["version"].as_str().unwrap_or("?").to_string(),
                // A non-string (old object form) licence counts as none given.
                license: entry["license"].as_str().map(str::to_string),
                license_file: None,
            }
        })
        .collect()
}

#[test]
fn every_dependency_has_an_allowed_licence() {
    let rust = rust_packages();
    let npm = npm_packages("ui/package-lock.json");
    let tap = npm_packages("tap/package-lock.json");
    assert!(
        rust.len() > 100 && npm.len() > 50 && tap.iter().any(|p| p.name == "typescript"),
        "too few packages found (Rust {}, ui npm {}, tap npm {} without typescript): is the check reading the right files?",
        rust.len(),
        npm.len(),
        tap.len()
    );
    let all: Vec<Package> = rust.iter().chain(&npm).chain(&tap).cloned().collect();
    let problems = check(&all, LICENCE_FILES);
    assert!(
        problems.is_empty(),
        "{} package(s) with a licence not allowed for Switchboard (MIT OR Apache-2.0):\n{}",
        problems.len(),
        problems.join("\n")
    );
    println!(
        "licences: {} Rust packages, {} npm packages of ui/ and {} of tap/ checked, all allowed",
        rust.len(),
        npm.len(),
        tap.len()
    );
}

fn pkg(license: Option<&str>, license_file: Option<&str>) -> Package {
    Package {
        kind: "crate",
        name: "some-crate".into(),
        version: "1.2.3".into(),
        license: license.map(str::to_string),
        license_file: license_file.map(str::to_string),
    }
}

#[test]
fn expressions_are_parsed_with_spdx_precedence() {
    let l = |s: &str| Box::new(Expr::Licence(s.into(), None));
    assert_eq!(
        parse("MIT OR Apache-2.0 AND ISC"),
        Ok(Expr::Or(
            l("MIT"),
            Box::new(Expr::And(l("Apache-2.0"), l("ISC")))
        ))
    );
    assert_eq!(
        parse("(MIT OR Apache-2.0) AND ISC"),
        Ok(Expr::And(
            Box::new(Expr::Or(l("MIT"), l("Apache-2.0"))),
            l("ISC")
        ))
    );
    assert_eq!(
        parse("Apache-2.0 WITH LLVM-exception"),
        Ok(Expr::Licence(
            "Apache-2.0".into(),
            Some("LLVM-exception".into())
        ))
    );
    assert_eq!(parse("MIT/Apache-2.0"), parse("MIT OR Apache-2.0"));
    assert_eq!(parse("Apache-2.0 / MIT"), parse("Apache-2.0 OR MIT"));
    for bad in [
        "",
        "MIT OR",
        "(MIT",
        "MIT)",
        "MIT Apache-2.0",
        "AND MIT",
        "MIT WITH",
    ] {
        assert!(parse(bad).is_err(), "{bad:?} parsed");
    }
}

#[test]
fn or_needs_one_side_and_needs_both() {
    for ok in [
        "MIT",
        "MIT OR Apache-2.0",
        "MIT OR GPL-3.0-only",
        "GPL-3.0-only OR MIT",
        "(MIT OR Apache-2.0) AND Unicode-3.0",
        "Apache-2.0 AND ISC",
        "Apache-2.0 WITH LLVM-exception OR Apache-2.0 OR MIT",
        "Apache-2.0 WITH LLVM-exception",
        "MIT OR Apache-2.0 OR LGPL-2.1-or-later",
        "Unlicense/MIT",
    ] {
        assert_eq!(check_expression(ok), Ok(()), "{ok}");
    }
    for denied in [
        "GPL-3.0-only",
        "MIT AND GPL-3.0-only",
        "(MIT OR Apache-2.0) AND LGPL-2.1-or-later",
        "GPL-2.0-only WITH Classpath-exception-2.0",
        "Apache-2.0 WITH Some-unknown-exception",
        "AGPL-3.0-or-later OR SSPL-1.0",
        "mit",
        "MIT OR",
    ] {
        assert!(check_expression(denied).is_err(), "{denied} passed");
    }
}

#[test]
fn refusals_name_the_package_version_and_licence() {
    let packages = [
        pkg(Some("MIT"), None),
        pkg(Some("GPL-3.0-only"), None),
        pkg(None, Some("LICENSE.txt")),
        pkg(None, None),
    ];
    let problems = check(&packages, &[]);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(
        problems[0].starts_with("crate some-crate 1.2.3: licence `GPL-3.0-only`"),
        "{}",
        problems[0]
    );
    assert!(
        problems[1].contains("some-crate 1.2.3") && problems[1].contains("LICENSE.txt"),
        "{}",
        problems[1]
    );
    assert!(
        problems[2].contains("licence file: none"),
        "{}",
        problems[2]
    );
}

#[test]
fn licence_file_packages_use_the_listed_licence() {
    let only_file = [pkg(None, Some("LICENSE.txt"))];
    let listed = [("some-crate", "MIT", "LICENSE.txt: the MIT text")];
    assert!(check(&only_file, &listed).is_empty());
    let listed_denied = [("some-crate", "GPL-3.0-only", "LICENSE.txt: the GPL text")];
    let problems = check(&only_file, &listed_denied);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(problems[0].contains("`GPL-3.0-only`"), "{}", problems[0]);
    // A listed licence does not override an expression the package gives.
    assert_eq!(
        check(
            &[pkg(Some("GPL-3.0-only"), None)],
            &[("some-crate", "MIT", "")]
        )
        .len(),
        1
    );
}
