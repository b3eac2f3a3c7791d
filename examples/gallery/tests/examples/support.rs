//! Running an example: [`Example`] spawns its binary, reads the `listening on URL` lines, and
//! kills it on drop, so a failing test leaves no process behind (and shows the example's
//! stderr when the test failed).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use mcp_fleet_tests::{ListenStream, McpClient, WAIT};
use serde_json::{Value, json};

/// How long an example may take to print its address.
const STARTUP: Duration = Duration::from_secs(30);

/// A running example process.
pub(crate) struct Example {
    child: Child,
    lines: mpsc::Receiver<String>,
    /// Everything the example wrote to stderr, shown if the test fails.
    stderr: Arc<Mutex<String>>,
}

impl Example {
    /// Start the binary `exe` listening on `127.0.0.1:0`, with `args` after that address and
    /// `env` set (logs at `warn`, uncoloured); returns once it printed its first URL ([`Example::url`]).
    pub(crate) fn start(exe: &str, args: &[&str], env: &[(&str, &str)]) -> (Example, String) {
        let mut child = Command::new(exe)
            .arg("127.0.0.1:0")
            .args(args)
            .envs(env.iter().copied())
            .env("RUST_LOG", "warn")
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {exe}: {e}"));
        let (stdout, stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
        let (tx, lines) = mpsc::channel();
        // Each reader runs until the child closes its pipe, which a killed child does.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let logged = Arc::new(Mutex::new(String::new()));
        let log = logged.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                log.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        let mut example = Example { child, lines, stderr: logged };
        let url = example.url();
        (example, url)
    }

    /// The next `listening on URL` line's URL (an example with two nodes prints two).
    pub(crate) fn url(&mut self) -> String {
        let line = self.lines.recv_timeout(STARTUP).unwrap_or_else(|e| {
            let status = self.child.try_wait().ok().flatten();
            panic!("no address from the example ({e}); exit status: {status:?}")
        });
        line.strip_prefix("listening on ").unwrap_or_else(|| panic!("not an address line: {line}")).to_owned()
    }
}

impl Example {
    /// The next line the example prints after its address, which should be `expected`;
    /// panics after [`WAIT`]. It waits asynchronously, so the test's own connections (their
    /// tasks on this runtime) keep running meanwhile: a dropped stream gets closed.
    pub(crate) async fn next_line(&mut self, expected: &str) -> String {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            match self.lines.try_recv() {
                Ok(line) => return line,
                Err(mpsc::TryRecvError::Empty) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("no line from the example ({e}); expected {expected}"),
            }
        }
    }
}

impl Drop for Example {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("the example's stderr:\n{}", self.stderr.lock().unwrap_or_else(|p| p.into_inner()));
        }
    }
}

/// `tools/call` of `name` with `arguments`: the result.
pub(crate) async fn call(client: &McpClient, name: &str, arguments: Value) -> Value {
    client.result("tools/call", json!({"name": name, "arguments": arguments})).await
}

/// The listed tool called `name`.
pub(crate) fn tool<'a>(list: &'a Value, name: &str) -> &'a Value {
    let tools = list["tools"].as_array().unwrap();
    tools.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("no tool {name} in {list}"))
}

/// The names of the listed tools, sorted.
pub(crate) fn names(list: &Value) -> Vec<String> {
    let mut names: Vec<String> =
        list["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect();
    names.sort();
    names
}

/// Open a listen stream for tool-list changes with extra `headers`, and read its
/// acknowledgement: from here on, every change is heard.
pub(crate) async fn listen_tools(client: &McpClient, headers: &[(String, String)]) -> ListenStream {
    let body = mcp_fleet_tests::request(
        json!("listen"),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let mut all = McpClient::standard_headers(&body);
    all.extend_from_slice(headers);
    let mut stream =
        ListenStream::from_response(client.send_raw("POST", &all, serde_json::to_vec(&body).unwrap()).await);
    let ack = stream.next_message().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    stream
}

/// Read `stream` until a `notifications/tools/list_changed`; panics after [`WAIT`].
pub(crate) async fn tools_changed(stream: &mut ListenStream) -> Value {
    let read = async {
        loop {
            let msg = stream.next_message().await.expect("the stream ended");
            if msg["method"] == "notifications/tools/list_changed" {
                return msg;
            }
        }
    };
    tokio::time::timeout(WAIT, read).await.expect("notifications/tools/list_changed in time")
}
