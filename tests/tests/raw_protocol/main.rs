//! The client protocol against real ZooKeeper 3.8 servers, spoken by hand with
//! [`zk_testkit::raw`]: `jute` records over a blocking `std::net::TcpStream`, with the
//! length-prefix framing written out (not taken from `jute::frame`), so these tests check the
//! codec and the framing against the server itself. One module per subject.

mod auth;
mod ensemble;
mod requests;
mod sessions;
mod watches;
