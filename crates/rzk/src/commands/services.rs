//! `services BASE [NAME] [--watch [--count N]]`: the services registered under BASE in Apache
//! Curator's service-discovery layout (`zk-discovery`), the instances of one, or those
//! instances and then their changes as they come, until interrupted.

use serde_json::{Value, json};
use zk_discovery::{ServiceDiscovery, ServiceEvent, ServiceInstance};
use zk_proto::Client;

use crate::exit::{ExitClass, Failure, Outcome};
use crate::output::Output;
use crate::supervise::Signals;

/// Lists the services under `base`, or the instances of `name`; with `watch`, the instances
/// and then every change until SIGINT, SIGTERM or SIGHUP (exit 0), `count` changes, or the
/// session's end (exit 6).
pub(super) async fn services(
    client: &Client,
    base: &str,
    name: Option<&str>,
    watch: bool,
    count: Option<u64>,
    out: Output,
) -> Outcome {
    let discovery = ServiceDiscovery::new(client, base);
    let Some(name) = name else {
        let names = discovery
            .query_for_names()
            .await
            .map_err(|e| failure("services", base, &e))?;
        if out.json {
            out.json(&json!({ "base": base, "services": names }))?;
        } else {
            out.lines(&names)?;
        }
        return Ok(0);
    };
    if watch {
        return watch_instances(&discovery, name, count, out).await;
    }
    let found = discovery
        .query_for_instances(name)
        .await
        .map_err(|e| failure("services", &discovery.service_path(name), &e))?;
    for instance in &found.instances {
        print_instance(instance, out)?;
    }
    for skipped in &found.skipped {
        say!("skipped {}: {}", skipped.path, skipped.reason);
    }
    Ok(0)
}

/// The instances now, then their changes.
async fn watch_instances(
    discovery: &ServiceDiscovery,
    name: &str,
    count: Option<u64>,
    out: Output,
) -> Outcome {
    let mut signals = Signals::new()?;
    let path = discovery.service_path(name);
    let cache = discovery.cache(name).start();
    let mut events = cache.events();
    tokio::select! {
        loaded = cache.wait_initialized(None) => loaded.map_err(|e| failure("services", &path, &e))?,
        _ = signals.recv() => return Ok(0),
    }
    for instance in cache.instances() {
        print_instance(&instance, out)?;
    }
    for skipped in cache.skipped() {
        say!("skipped {}: {}", skipped.path, skipped.reason);
    }
    if out.verbose {
        say!("watching the instances of {path}");
    }
    let mut seen = 0u64;
    loop {
        tokio::select! {
            event = events.next() => {
                let event = event.map_err(|e| failure("services", &path, &e))?;
                let (kind, id, instance) = match &event {
                    ServiceEvent::Added(i) => ("added", i.id.as_str(), Some(&**i)),
                    ServiceEvent::Updated { new, .. } => ("updated", new.id.as_str(), Some(&**new)),
                    ServiceEvent::Removed { id, .. } => ("removed", id.as_str(), None),
                    ServiceEvent::Malformed(skipped) => {
                        say!("skipped {}: {}", skipped.path, skipped.reason);
                        ("malformed", skipped.path.rsplit('/').next().unwrap_or_default(), None)
                    }
                    _ => continue,
                };
                if out.json {
                    let mut value = json!({ "event": kind, "id": id });
                    if let Some(instance) = instance {
                        value["instance"] = instance_json(instance);
                    }
                    out.json(&value)?;
                } else {
                    let sign = match kind {
                        "added" => "+",
                        "updated" => "~",
                        "removed" => "-",
                        _ => "?",
                    };
                    let text = instance.map_or_else(|| id.to_owned(), instance_line);
                    out.line(&format!("{sign} {text}"))?;
                }
                seen += 1;
                if count.is_some_and(|n| seen >= n) {
                    return Ok(0);
                }
            }
            _ = signals.recv() => return Ok(0),
        }
    }
}

fn print_instance(instance: &ServiceInstance, out: Output) -> Result<(), Failure> {
    if out.json {
        out.json(&instance_json(instance))
    } else {
        out.line(&instance_line(instance))
    }
}

/// The instance as Curator's JSON (with its unknown fields).
fn instance_json(instance: &ServiceInstance) -> Value {
    serde_json::from_slice(&instance.to_json()).unwrap_or(Value::Null)
}

/// `ID ADDRESS:PORT [ssl:PORT] [disabled] [TYPE] [PAYLOAD]`.
fn instance_line(instance: &ServiceInstance) -> String {
    let mut line = format!(
        "{} {}:{}",
        instance.id,
        instance.address.as_deref().unwrap_or("-"),
        instance
            .port
            .map_or_else(|| "-".to_owned(), |p| p.to_string())
    );
    if let Some(ssl) = instance.ssl_port {
        line.push_str(&format!(" ssl:{ssl}"));
    }
    if !instance.enabled {
        line.push_str(" disabled");
    }
    if instance.service_type != zk_discovery::ServiceType::Dynamic {
        line.push(' ');
        line.push_str(instance.service_type.as_str());
    }
    if let Some(payload) = &instance.payload {
        line.push(' ');
        line.push_str(&payload.to_string());
    }
    line
}

/// A discovery error while doing `what` on `path`.
fn failure(what: &str, path: &str, error: &zk_discovery::Error) -> Failure {
    match error {
        zk_discovery::Error::Zk(e) => Failure::zk(&format!("{what} {path}"), e),
        zk_discovery::Error::Timeout => {
            Failure::new(ExitClass::Timeout, format!("{what} {path}: {error}"))
        }
        zk_discovery::Error::InvalidName { .. } => {
            Failure::usage(format!("{what} {path}: {error}"))
        }
        e => Failure::new(ExitClass::Failure, format!("{what} {path}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_line_says_what_matters() {
        let mut instance = ServiceInstance::builder("api")
            .id("i1")
            .address("10.0.0.1")
            .port(80)
            .build();
        assert_eq!(instance_line(&instance), "i1 10.0.0.1:80");
        instance.ssl_port = Some(443);
        instance.enabled = false;
        instance.payload = Some(json!({"zone": "a"}));
        instance.service_type = zk_discovery::ServiceType::Static;
        assert_eq!(
            instance_line(&instance),
            r#"i1 10.0.0.1:80 ssl:443 disabled STATIC {"zone":"a"}"#
        );
    }
}
