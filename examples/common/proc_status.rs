//! A process's memory as Linux tells it (`/proc/PID/status`), for the
//! examples that measure what traffic costs a server they started.

/// The field `field` (`VmRSS:`, `VmHWM:`) of process `pid`, in bytes.
pub fn bytes(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc is readable");
    let kb: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("a {field} line"));
    kb * 1024
}
