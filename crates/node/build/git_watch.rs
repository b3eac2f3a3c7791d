//! Which git files the node's build script asks cargo to watch, so a new commit re-runs it.
//!
//! Shared by `build.rs` (through `#[path]`) and the test `tests/build_watch.rs`, so the rule is
//! tested on real repositories. Cargo treats a watched path that does not exist as changed on
//! every build, and the node links with fat LTO: a missing `packed-refs` (a repository that never
//! packed its refs) or a missing loose ref (one that did) re-linked the node on each
//! `cargo build`. So only paths that exist are returned. What the commit is and where it goes is
//! left to `build.rs`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The commit `HEAD` names in the checkout at `dir`, and the existing files whose change can
/// move it: `HEAD`, the branch's loose ref and `packed-refs` where they exist, and `logs/HEAD`
/// (git appends to it when a commit moves the checked-out branch, also when that commit turns a
/// packed-only ref into a loose one, which no watched file would otherwise show). `None` when
/// `dir` is no git checkout or `HEAD` names no commit.
pub(crate) fn head_and_watched(dir: &Path) -> Option<(String, Vec<PathBuf>)> {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        (out.status.success() && !text.is_empty()).then_some(text)
    };
    let git_path = |path: &str| git(&["rev-parse", "--path-format=absolute", "--git-path", path]);
    let head = git(&["rev-parse", "--verify", "-q", "HEAD"])?;
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    let candidates = ["HEAD", "logs/HEAD", "packed-refs"]
        .into_iter()
        .map(str::to_owned)
        .chain(branch)
        .filter_map(|path| git_path(&path))
        .map(PathBuf::from)
        .filter(|file| file.is_file())
        .collect();
    Some((head, candidates))
}
