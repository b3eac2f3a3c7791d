//! Records the build's commit for the node's execution identity: `MCP_FLEET_BUILD_COMMIT`
//! from the build environment (an image build without `.git`), else `git rev-parse HEAD` when
//! the source is a git checkout; neither → no commit (the identity omits it).

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=MCP_FLEET_BUILD_COMMIT");
    let commit = std::env::var("MCP_FLEET_BUILD_COMMIT").ok().filter(|c| !c.trim().is_empty()).or_else(git_head);
    if let Some(commit) = commit {
        println!("cargo:rustc-env=MCP_FLEET_COMMIT={}", commit.trim());
    }
}

/// `git rev-parse HEAD`, and the files whose change moves it (so a new commit rebuilds).
fn git_head() -> Option<String> {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").args(args).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let head = git(&["rev-parse", "HEAD"])?;
    for path in ["HEAD", "packed-refs"] {
        if let Some(file) = git(&["rev-parse", "--path-format=absolute", "--git-path", path]) {
            println!("cargo:rerun-if-changed={file}");
        }
    }
    let branch = git(&["symbolic-ref", "-q", "HEAD"]);
    if let Some(file) = branch.and_then(|b| git(&["rev-parse", "--path-format=absolute", "--git-path", &b])) {
        println!("cargo:rerun-if-changed={file}");
    }
    Some(head)
}
