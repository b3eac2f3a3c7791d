//! A node's CPU time and resident memory from Linux `/proc`, for "CPU per delivery" and
//! "RSS per stream" (`--server-pid`; the node must run on this machine).

use crate::error::LoadtestError;

/// Linux reports process CPU time in clock ticks of 10 ms (USER_HZ = 100).
pub const TICK_MS: u64 = 10;

/// utime + stime of a process, in clock ticks.
pub fn cpu_ticks(pid: u32) -> Result<u64, LoadtestError> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).map_err(LoadtestError::io(format!("reading {path}")))?;
    parse_cpu_ticks(&stat).ok_or_else(|| LoadtestError::Usage(format!("unexpected format of {path}")))
}

/// utime + stime from the text of `/proc/<pid>/stat`.
fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')')?.1;
    let mut fields = rest.split_whitespace().skip(11);
    Some(fields.next()?.parse::<u64>().ok()? + fields.next()?.parse::<u64>().ok()?)
}

/// Resident set size of a process, in KiB.
pub fn rss_kb(pid: u32) -> Result<u64, LoadtestError> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).map_err(LoadtestError::io(format!("reading {path}")))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| LoadtestError::Usage(format!("no VmRSS in {path}")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_this_process_and_parses_names_with_parentheses() {
        let me = std::process::id();
        assert!(super::cpu_ticks(me).is_ok());
        assert!(super::rss_kb(me).unwrap() > 0);
        let stat = "42 (a (weird) name) S 1 2 3 4 5 6 7 8 9 10 11 22 0 0";
        assert_eq!(super::parse_cpu_ticks(stat), Some(33));
    }
}
