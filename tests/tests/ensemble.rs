//! The test kit's ensemble: a 3-server quorum elects one leader, survives losing it, and takes it
//! back as a follower.

use std::time::Instant;

use zk_testkit::{Ensemble, Mode, started};

#[test]
fn ensemble_of_three_elects_a_new_leader_when_the_leader_dies() {
    let t = Instant::now();
    let ensemble = started(Ensemble::start(3));
    eprintln!("ensemble start took {:.2?}", t.elapsed());
    assert_eq!(ensemble.len(), 3);

    let modes: Vec<Mode> = (0..3).map(|i| ensemble.server(i).mode().unwrap()).collect();
    assert_eq!(
        modes.iter().filter(|m| **m == Mode::Leader).count(),
        1,
        "{modes:?}"
    );
    assert_eq!(
        modes.iter().filter(|m| **m == Mode::Follower).count(),
        2,
        "{modes:?}"
    );
    for i in 0..3 {
        let s = ensemble.server(i);
        assert_eq!(s.id() as usize, i + 1);
        assert_eq!(s.four_letter("ruok").unwrap(), "imok");
        let conf = s.four_letter("conf").unwrap();
        assert!(conf.contains(&format!("serverId={}", i + 1)), "{conf}");
        assert!(
            std::fs::read_to_string(s.data_dir().join("myid"))
                .unwrap()
                .trim()
                == s.id().to_string()
        );
    }
    let cs = ensemble.connect_string();
    assert_eq!(cs.split(',').count(), 3);
    assert!(cs.split(',').all(|a| a.starts_with("127.0.0.1:")), "{cs}");

    let leader = ensemble.leader_index().expect("a leader");
    assert_eq!(modes[leader], Mode::Leader);
    let old_port = ensemble.server(leader).port();

    let t = Instant::now();
    ensemble.kill(leader);
    assert!(!ensemble.server(leader).is_running());
    let new_leader = ensemble
        .wait_for_leader()
        .expect("the remaining two elect a leader");
    eprintln!("re-election took {:.2?}", t.elapsed());
    assert_ne!(new_leader, leader);
    assert_eq!(ensemble.leader_index(), Some(new_leader));

    let t = Instant::now();
    ensemble.restart(leader).expect("the old leader comes back");
    eprintln!("rejoin took {:.2?}", t.elapsed());
    assert_eq!(ensemble.server(leader).port(), old_port);
    assert_eq!(ensemble.server(leader).mode().unwrap(), Mode::Follower);
    assert_eq!(ensemble.wait_for_leader().unwrap(), new_leader);

    // A graceful stop of a follower leaves a working quorum of two.
    let follower = (0..3).find(|&i| i != new_leader).unwrap();
    ensemble.stop(follower);
    assert_eq!(ensemble.wait_for_leader().unwrap(), new_leader);
    ensemble.restart(follower).unwrap();
    ensemble.wait_until_serving(follower).unwrap();

    let dir = ensemble.dir().to_path_buf();
    drop(ensemble);
    if std::env::var_os(zk_testkit::ENV_KEEP).is_none() {
        assert!(!dir.exists());
    }
}
