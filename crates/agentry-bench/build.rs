//! Records the compiler version and the git revision the binary is built from, for the
//! machine header of every report. Both are optional: when a command fails, the variable is
//! simply not set and the header omits the field.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    if let Some(version) = output_of(Command::new(rustc).arg("--version")) {
        println!("cargo:rustc-env=AGENTRY_BENCH_RUSTC={version}");
    }
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".to_owned());
    let git = |args: &[&str]| output_of(Command::new("git").arg("-C").arg(&manifest).args(args));
    if let Some(rev) = git(&["rev-parse", "--short=12", "HEAD"]) {
        println!("cargo:rustc-env=AGENTRY_BENCH_GIT_REV={rev}");
        // Rebuild when HEAD moves: HEAD itself (branch switch) and the ref it points to (commit).
        let mut watched = vec![git(&["rev-parse", "--git-path", "HEAD"])];
        if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watched.push(git(&["rev-parse", "--git-path", &reference]));
        }
        watched.push(git(&["rev-parse", "--git-path", "packed-refs"]));
        for path in watched.into_iter().flatten() {
            let path = Path::new(&manifest).join(path);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
}

/// The trimmed standard output of a command that succeeded, `None` otherwise.
fn output_of(command: &mut Command) -> Option<String> {
    let output = command.output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}
