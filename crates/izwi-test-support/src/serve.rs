//! A running `izwi serve` for tests of the HTTP API: started with `--port 0`, its base
//! address read from the line it prints, killed when dropped.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

pub struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`, without `/v1`.
    pub base: String,
}

impl Server {
    /// Runs `command` (the `izwi` binary with its data folder set) as `serve --port 0`
    /// with `args`; its standard error goes where `command` says.
    pub fn spawn(command: &mut Command, args: &[&str]) -> Self {
        let mut child = command
            .args(["serve", "--port", "0"])
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("izwi serve starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("izwi serve says where it listens");
        let base = line
            .trim()
            .rsplit(' ')
            .next()
            .expect("an address")
            .trim_end_matches("/v1")
            .to_string();
        assert!(base.starts_with("http://127.0.0.1:"), "{line:?}");
        Self { child, base }
    }

    /// Kills the server now (a server that dies mid-request), and waits for it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// `path` (such as `/v1/models`) on this server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}
