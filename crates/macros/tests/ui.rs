//! What `#[server]` accepts and what it refuses, with the messages it prints
//! (`tests/ui/*.stderr`; `TRYBUILD=overwrite cargo test -p mcp-fleet-macros` rewrites them).

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass_*.rs");
    cases.compile_fail("tests/ui/fail_*.rs");
}
