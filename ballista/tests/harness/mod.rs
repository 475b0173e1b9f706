//! A scheduler and executors as `protojit-ballista` processes on 127.0.0.1 for the cluster tests: started with bounded waits, and killed and reaped when a test ends, passing or not.

// Each test file uses its own part of the harness.
#![allow(dead_code)]

use std::fs::{self, File};
use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long the cluster may take to come up before the test fails instead of hanging
/// (guards against a stuck cluster, not a performance check).
pub const START_LIMIT: Duration = Duration::from_secs(60);

/// The cluster's processes: killed and reaped when the test ends, passing or not.
pub struct Cluster {
    children: Vec<(String, Child)>,
    logs: PathBuf,
    /// The scheduler's gRPC port.
    pub port: u16,
    /// Each executor's work directory (shuffle files), in start order.
    pub work_dirs: Vec<PathBuf>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for (_, child) in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Cluster {
    fn spawn(&mut self, name: &str, args: &[String]) {
        let log = File::create(self.logs.join(format!("{name}.log"))).expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_protojit-ballista"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .spawn()
            .expect("protojit-ballista starts");
        self.children.push((name.to_owned(), child));
    }

    /// Every process's log, for a failure message.
    pub fn logs(&self) -> String {
        self.children.iter().map(|(name, _)| format!("--- {name} ---\n{}", self.log(name))).collect()
    }

    /// One process's log (`scheduler`, `executor-0`, …).
    pub fn log(&self, name: &str) -> String {
        fs::read_to_string(self.logs.join(format!("{name}.log"))).unwrap_or_default()
    }

    /// The scheduler's URL for a client session.
    pub fn url(&self) -> String {
        format!("df://127.0.0.1:{}", self.port)
    }

    /// Kills executor `i` with SIGKILL (no shutdown, no goodbye to the scheduler) and
    /// reaps it.
    pub fn kill_executor(&mut self, i: usize) {
        let name = format!("executor-{i}");
        let (_, child) = self.children.iter_mut().find(|(n, _)| *n == name).expect("such an executor");
        child.kill().expect("SIGKILL the executor");
        child.wait().expect("reap the executor");
    }

    /// Waits until `port` accepts connections; fails if a process exits or the limit passes.
    fn wait_for(&mut self, port: u16, deadline: Instant) {
        let address: SocketAddr = ([127, 0, 0, 1], port).into();
        loop {
            if TcpStream::connect_timeout(&address, Duration::from_millis(500)).is_ok() {
                return;
            }
            for (name, child) in &mut self.children {
                if let Ok(Some(status)) = child.try_wait() {
                    let name = name.clone();
                    panic!("{name} exited ({status}) before the cluster came up\n{}", self.logs());
                }
            }
            if Instant::now() > deadline {
                panic!("port {port} did not open within {START_LIMIT:?}\n{}", self.logs());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A temporary directory, removed when the test ends, passing or not.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A new, empty directory for this test process.
    pub fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("protojit-ballista-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("temp directory");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// `n` ports that were free a moment ago (each bound to port 0, then released together).
fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<TcpListener> =
        (0..n).map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a free port")).collect();
    listeners.iter().map(|l| l.local_addr().expect("bound address").port()).collect()
}

/// Starts a scheduler and two executors (2 task slots each) with logs and work directories
/// under `dir`; `scheduler_args` and `executor_args` are added to their command lines.
pub fn start_cluster(dir: &Path, scheduler_args: &[&str], executor_args: &[&str]) -> Cluster {
    let logs = dir.join("logs");
    fs::create_dir_all(&logs).expect("log directory");
    let ports = free_ports(5);
    let mut cluster = Cluster { children: Vec::new(), logs, port: ports[0], work_dirs: Vec::new() };
    let deadline = Instant::now() + START_LIMIT;
    let mut args = vec!["scheduler".to_owned(), "--port".into(), ports[0].to_string()];
    args.extend(scheduler_args.iter().map(|a| a.to_string()));
    cluster.spawn("scheduler", &args);
    cluster.wait_for(ports[0], deadline);
    for (i, pair) in ports[1..].chunks(2).enumerate() {
        let work = dir.join(format!("work-{i}"));
        fs::create_dir_all(&work).expect("work directory");
        let mut args = [
            "executor",
            "--port",
            &pair[0].to_string(),
            "--grpc-port",
            &pair[1].to_string(),
            "--scheduler",
            &format!("127.0.0.1:{}", ports[0]),
            "--vcores",
            "2",
            "--work-dir",
            &work.display().to_string(),
        ]
        .map(String::from)
        .to_vec();
        args.extend(executor_args.iter().map(|a| a.to_string()));
        cluster.spawn(&format!("executor-{i}"), &args);
        cluster.work_dirs.push(work);
    }
    for &port in &ports[1..] {
        cluster.wait_for(port, deadline);
    }
    cluster
}

/// Runs `command` to its end, killing it and failing the test if it takes longer than
/// `limit` (a stuck command, not a performance check).
pub fn run_bounded(command: &mut Command, limit: Duration) -> Output {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{command:?} starts: {e}"));
    // Readers drain the pipes while the command runs, so that it never blocks on them.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the command") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{command:?}: no answer within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output { status, stdout: stdout.join().expect("stdout reader"), stderr: stderr.join().expect("stderr reader") }
}
