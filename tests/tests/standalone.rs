//! The test kit's standalone server: start, four-letter words, stop/kill/restart.

use std::time::{Duration, Instant};

use zk_testkit::{Mode, ZkServer};

#[test]
fn standalone_server_starts_answers_and_restarts_on_the_same_port() {
    let started = Instant::now();
    let server = ZkServer::builder()
        .tick_time(Duration::from_millis(500))
        .extended_types(true)
        .start()
        .expect("start a standalone ZooKeeper");
    eprintln!("standalone start took {:.2?}", started.elapsed());

    let addr = server.addr();
    assert!(addr.ip().is_loopback());
    assert_eq!(
        server.connect_string(),
        format!("127.0.0.1:{}", server.port())
    );
    assert_eq!(server.four_letter("ruok").unwrap(), "imok");

    let srvr = server.four_letter("srvr").unwrap();
    assert!(srvr.contains("Zookeeper version: 3.8"), "srvr: {srvr}");
    assert_eq!(server.mode().unwrap(), Mode::Standalone);

    let conf = server.four_letter("conf").unwrap();
    assert!(conf.contains("tickTime=500"), "conf: {conf}");
    let envi = server.four_letter("envi").unwrap();
    assert!(envi.contains("java.version=17"), "envi: {envi}");
    let mntr = server.four_letter("mntr").unwrap();
    assert!(mntr.contains("zk_server_state\tstandalone"), "mntr: {mntr}");
    assert!(server.data_dir().starts_with(server.dir()));
    if std::path::Path::new("/dev/shm").is_dir() && std::env::var_os(zk_testkit::ENV_DIR).is_none()
    {
        assert!(
            server.dir().starts_with("/dev/shm"),
            "{}",
            server.dir().display()
        );
    }
    // The extended-types property reached the JVM, and the log goes to the file.
    let log = std::fs::read_to_string(server.log_path()).unwrap();
    assert!(log.contains("-Dzookeeper.extendedTypesEnabled=true"));
    assert!(
        log.contains("binding to port"),
        "no server logging in {}",
        server.log_path().display()
    );

    let pid = server.pid().expect("running");
    let started = Instant::now();
    server.restart().expect("restart");
    eprintln!("standalone restart took {:.2?}", started.elapsed());
    assert_ne!(server.pid().expect("running again"), pid);
    assert_eq!(server.addr(), addr);
    assert_eq!(server.four_letter("ruok").unwrap(), "imok");

    server.kill();
    assert!(!server.is_running());
    assert!(server.pid().is_none());
    assert!(server.four_letter("ruok").is_err());
    server.restart().expect("start after kill");
    assert_eq!(server.addr(), addr);
    assert_eq!(server.mode().unwrap(), Mode::Standalone);

    server.stop();
    assert!(!server.is_running());

    let dir = server.dir().to_path_buf();
    drop(server);
    if std::env::var_os(zk_testkit::ENV_KEEP).is_none() {
        assert!(!dir.exists(), "{} not removed on drop", dir.display());
    }
}

#[test]
fn a_taken_port_is_detected_and_retried_a_bounded_number_of_times() {
    let first = ZkServer::start().expect("first server");
    // Force every attempt of the second server onto the first one's port.
    let started = Instant::now();
    let err = ZkServer::builder()
        .config("clientPort", first.port())
        .start()
        .expect_err("the port is taken");
    let msg = err.to_string();
    eprintln!("expected error: {msg}");
    assert!(msg.contains("ports kept being taken"), "{msg}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    // The first server is untouched.
    assert_eq!(first.mode().unwrap(), Mode::Standalone);
}

#[test]
fn servers_in_parallel_get_distinct_ports_and_dirs() {
    let a = std::thread::spawn(|| ZkServer::start().expect("server a"));
    let b = ZkServer::start().expect("server b");
    let a = a.join().unwrap();
    assert_ne!(a.port(), b.port());
    assert_ne!(a.dir(), b.dir());
    assert_eq!(a.four_letter("ruok").unwrap(), "imok");
    assert_eq!(b.four_letter("ruok").unwrap(), "imok");
}

#[test]
fn a_bad_config_fails_fast_with_the_log_tail() {
    let started = Instant::now();
    let err = ZkServer::builder()
        .config("tickTime", "not-a-number")
        .start()
        .expect_err("a broken zoo.cfg must not start");
    let msg = err.to_string();
    eprintln!("expected error: {msg}");
    assert!(
        matches!(err, zk_testkit::Error::StartFailed { .. }),
        "{msg}"
    );
    assert!(msg.contains("exited"), "{msg}");
    assert!(msg.contains("last lines of"), "{msg}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
}
