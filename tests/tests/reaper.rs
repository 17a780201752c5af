//! Clean-up after test processes that were killed: their JVMs (and KDCs) are killed and their
//! directories removed, but nothing that belongs to a live process.

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn orphans_of_dead_test_processes_are_reaped_and_live_ones_are_not() {
    let base = zk_testkit::base_dir();
    fs::create_dir_all(&base).unwrap();
    let me = std::process::id();

    // A pid that no process can have: Linux allocates pids below PID_MAX_LIMIT (2^22). (An
    // exited child's pid can be handed out again, to a process or a thread, while the test
    // runs.)
    let dead_pid: u32 = 1 << 22;
    assert!(
        !std::path::Path::new(&format!("/proc/{dead_pid}")).exists(),
        "no process has pid {dead_pid}"
    );

    // An "orphaned JVM": a process whose command line names the directory. (A loop, so that
    // the shell cannot exec into its last command and lose the directory from its argv.)
    // A name no earlier run can have left behind (a pid is reused across runs), so that no
    // reaper can take the directory for a stale one while it is being filled.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let orphan_dir = base.join(format!("reaper-test-orphan-{me}-{nanos}"));
    fs::create_dir(&orphan_dir).unwrap();
    fs::create_dir(orphan_dir.join("server-1")).unwrap();
    let mut orphan = Command::new("sh")
        .args([
            "-c",
            "while :; do sleep 0.1; done",
            orphan_dir.to_str().unwrap(),
        ])
        .spawn()
        .unwrap();
    shows_in_command_line(orphan.id(), &orphan_dir.to_string_lossy());
    fs::write(
        orphan_dir.join("server-1/java.pid"),
        orphan.id().to_string(),
    )
    .unwrap();

    // An "orphaned KDC" (zk_testkit::kdc), recorded in a `kdc.pid` file.
    let mut orphan_kdc = Command::new("sh")
        .args([
            "-c",
            "while :; do sleep 0.1; done",
            orphan_dir.to_str().unwrap(),
        ])
        .spawn()
        .unwrap();
    shows_in_command_line(orphan_kdc.id(), &orphan_dir.to_string_lossy());
    fs::write(orphan_dir.join("kdc.pid"), orphan_kdc.id().to_string()).unwrap();

    // A process recorded in a dead owner's directory whose command line does not name it.
    let mut bystander = Command::new("sleep").arg("30").spawn().unwrap();
    shows_in_command_line(bystander.id(), "sleep");
    fs::write(orphan_dir.join("java.pid"), bystander.id().to_string()).unwrap();
    // The owner last: a reaper (of any test process) skips a directory
    // without one, so none can act on this one before its pid files are written.
    fs::write(orphan_dir.join("owner.pid"), dead_pid.to_string()).unwrap();

    // A directory of a live owner (pid 1) must stay.
    let live_dir = base.join(format!("reaper-test-live-{me}"));
    fs::create_dir_all(&live_dir).unwrap();
    let _cleanup = RemoveOnDrop(live_dir.clone());
    fs::write(live_dir.join("owner.pid"), "1").unwrap();

    zk_testkit::reap_orphans();

    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = orphan.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            // What the reaper saw, for whoever reads the failure.
            let cmdline = fs::read(format!("/proc/{}/cmdline", orphan.id()))
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "));
            let _ = orphan.kill();
            let _ = orphan_kdc.kill();
            let _ = bystander.kill();
            panic!(
                "the orphan was not killed (its directory {} exists: {}; its command line: \
                 {cmdline:?})",
                orphan_dir.display(),
                orphan_dir.exists()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(
        status.signal(),
        Some(9),
        "the orphan was SIGKILLed: {status}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let kdc_status = loop {
        if let Some(status) = orphan_kdc.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = orphan_kdc.kill();
            let _ = bystander.kill();
            panic!("the orphaned KDC was not killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(
        kdc_status.signal(),
        Some(9),
        "the orphaned KDC was SIGKILLed: {kdc_status}"
    );
    assert!(!orphan_dir.exists());
    assert!(
        bystander.try_wait().unwrap().is_none(),
        "the bystander must survive"
    );
    assert!(live_dir.exists());

    bystander.kill().unwrap();
    bystander.wait().unwrap();
}

/// Removes the directory even when the test fails (its owner pid 1 keeps the reaper off it).
struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Waits until `/proc/<pid>/cmdline` shows `text`. `spawn` returns once the child is past the
/// point of no return of its exec, but the kernel sets up the new command line a little later:
/// a reaper that looked in between would see an empty one, and rightly leave the process alone.
fn shows_in_command_line(pid: u32, text: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let cmdline = fs::read(format!("/proc/{pid}/cmdline"))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .unwrap_or_default();
        if cmdline.contains(text) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "process {pid} never showed {text:?} in its command line ({cmdline:?})"
        );
        std::thread::yield_now();
    }
}
