//! The local KDC of the Kerberos tests (`zk_testkit::kdc`): a realm that issues tickets to the
//! keytabs it exports, refuses deleted principals and stale keytabs, and leaves no process or
//! directory behind.

use std::path::Path;

use zk_testkit::kdc::{Kdc, REALM, SERVER_PRINCIPAL};

#[test]
fn the_kdc_issues_tickets_to_its_keytabs_and_stops_on_drop() {
    let kdc = Kdc::start().unwrap_or_else(|e| panic!("{e}"));
    let realm = kdc.realm().clone();
    assert_eq!(realm.principal("carol"), format!("carol@{REALM}"));
    let ccache = format!("FILE:{}", realm.dir().join("carol.ccache").display());

    realm.add_principal("carol").expect("add carol");
    realm
        .kinit("carol", &ccache)
        .expect("a ticket from carol's keytab");
    // The server's keytab was exported when the realm was created.
    assert!(realm.keytab(SERVER_PRINCIPAL).is_file());
    let jaas = std::fs::read_to_string(realm.server_jaas()).expect("the server's JAAS file");
    assert!(
        jaas.contains(&format!("principal=\"{SERVER_PRINCIPAL}@{REALM}\"")),
        "{jaas}"
    );

    realm.change_key("carol").expect("a new key");
    let stale = realm.kinit("carol", &ccache).expect_err("a stale keytab");
    assert!(stale.to_string().contains("kinit"), "{stale}");
    realm.delete_principal("carol").expect("delete carol");
    assert!(
        realm.kinit("carol", &ccache).is_err(),
        "a deleted principal"
    );
    assert!(
        realm.kadmin("delprinc -force carol").is_err(),
        "deleted twice"
    );

    let pid = kdc.pid().expect("the KDC runs");
    let dir = realm.dir().to_path_buf();
    drop(kdc);
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the KDC is gone"
    );
    assert!(!dir.exists(), "its directory is removed");
}
