//! An example serving streamable HTTP as a process of its own: started on
//! a free loopback port, its address read from the line it writes to its
//! log, killed when dropped.

use std::fs::File;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running server and the URL it serves at.
pub struct Listening {
    child: Child,
    pub url: String,
}

impl Listening {
    /// Starts `command`, its stderr in `log`, and waits (at most 20 s) for
    /// the line `<name>: listening on <url>` there.
    pub fn start(mut command: Command, log: &Path, name: &str) -> Listening {
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(log).expect("the log file can be created"))
            .spawn()
            .expect("the example starts");
        let mut server = Listening { child, url: String::new() };
        let prefix = format!("{name}: listening on ");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            if let Some(url) = text.lines().find_map(|line| line.strip_prefix(prefix.as_str())) {
                server.url = url.trim().to_owned();
                return server;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("the server exited ({status}) before listening:\n{text}");
            }
            assert!(Instant::now() < deadline, "the server did not listen within 20s:\n{text}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
