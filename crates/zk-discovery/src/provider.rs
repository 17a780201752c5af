//! Picking an instance: [`ServiceProvider`], with Curator's strategies and its handling of
//! instances that failed (`noteError`, `DownInstancePolicy`).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::cache::{ServiceCache, ServiceCacheBuilder};
use crate::{Error, Result, ServiceInstance};

/// How a [`ServiceProvider`] picks among the usable instances (Curator's strategies).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Strategy {
    /// Each in turn (Curator's `RoundRobinStrategy`, its default): the `n`-th call gets the
    /// instance at `n` modulo their number, in node-name order.
    #[default]
    RoundRobin,
    /// One at random, uniformly (Curator's `RandomStrategy`).
    Random,
    /// The same instance as long as it is usable, another picked by the inner strategy once
    /// it is not (Curator's `StickyStrategy`; an instance counts as the same by its id).
    Sticky(Box<Strategy>),
}

impl Strategy {
    /// [`Strategy::Sticky`] over `inner`.
    pub fn sticky(inner: Strategy) -> Strategy {
        Strategy::Sticky(Box::new(inner))
    }
}

/// When an instance is set aside after errors (Curator's `DownInstancePolicy`): once
/// [`ServiceProvider::note_error`] was called `error_threshold` times for it, within
/// `timeout` of the first of those calls, it is not picked until `timeout` after that first
/// call. Curator's defaults: 30 seconds, 2 errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DownInstancePolicy {
    /// How long the errors count, from the first one.
    pub timeout: Duration,
    /// How many errors set the instance aside.
    pub error_threshold: u32,
}

impl Default for DownInstancePolicy {
    fn default() -> Self {
        DownInstancePolicy {
            timeout: Duration::from_secs(30),
            error_threshold: 2,
        }
    }
}

/// A filter of the instances a provider may pick.
pub type InstanceFilter = Arc<dyn Fn(&ServiceInstance) -> bool + Send + Sync>;

/// The settings of a [`ServiceProvider`]; [`start`](Self::start) starts it.
#[must_use = "a provider does nothing until started"]
pub struct ServiceProviderBuilder {
    cache: ServiceCacheBuilder,
    strategy: Strategy,
    down: DownInstancePolicy,
    filters: Vec<InstanceFilter>,
}

impl fmt::Debug for ServiceProviderBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceProviderBuilder")
            .field("cache", &self.cache)
            .field("strategy", &self.strategy)
            .field("down", &self.down)
            .field("filters", &self.filters.len())
            .finish()
    }
}

impl ServiceProviderBuilder {
    /// A provider over the cache `cache` will start (see
    /// [`ServiceDiscovery::provider`](crate::ServiceDiscovery::provider)).
    pub fn new(cache: ServiceCacheBuilder) -> ServiceProviderBuilder {
        ServiceProviderBuilder {
            cache,
            strategy: Strategy::default(),
            down: DownInstancePolicy::default(),
            filters: Vec::new(),
        }
    }

    /// The strategy ([`Strategy::RoundRobin`] by default).
    pub fn strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// When an instance that failed is set aside ([`DownInstancePolicy::default`] by
    /// default).
    pub fn down_instance_policy(mut self, policy: DownInstancePolicy) -> Self {
        self.down = policy;
        self
    }

    /// Picks only instances `filter` accepts (besides the enabled and not-down test);
    /// called on every pick, for every instance: keep it cheap.
    pub fn filter(
        mut self,
        filter: impl Fn(&ServiceInstance) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.filters.push(Arc::new(filter));
        self
    }

    /// Starts the provider's cache on the current tokio runtime.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn start(self) -> ServiceProvider {
        ServiceProvider {
            cache: self.cache.start(),
            picker: Picker::new(self.strategy),
            down: DownInstances::new(self.down),
            filters: self.filters,
        }
    }
}

/// Picks instances of one service (Curator's `ServiceProvider`) from a [`ServiceCache`]:
/// among the instances that are enabled, not set aside after errors
/// ([`note_error`](Self::note_error)) and accepted by the filters, by its [`Strategy`].
pub struct ServiceProvider {
    cache: ServiceCache,
    picker: Picker,
    down: DownInstances,
    filters: Vec<InstanceFilter>,
}

impl fmt::Debug for ServiceProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceProvider")
            .field("cache", &self.cache)
            .field("strategy", &self.picker.strategy)
            .finish_non_exhaustive()
    }
}

impl ServiceProvider {
    /// An instance to use, `None` when none is usable. Synchronous: it reads the cache.
    pub fn get_instance(&self) -> Option<Arc<ServiceInstance>> {
        let usable: Vec<_> = self
            .cache
            .instances()
            .into_iter()
            .filter(|i| i.enabled && !self.down.is_down(&i.id))
            .filter(|i| self.filters.iter().all(|f| f(i)))
            .collect();
        self.picker.pick(&usable)
    }

    /// Every cached instance, usable or not (Curator's `getAllInstances`).
    pub fn all_instances(&self) -> Vec<Arc<ServiceInstance>> {
        self.cache.instances()
    }

    /// Notes that `instance` failed (Curator's `noteError`): after the policy's number of
    /// errors it is set aside for the rest of the policy's timeout.
    pub fn note_error(&self, instance: &ServiceInstance) {
        self.down.add(&instance.id);
    }

    /// Waits until the cache's first full load is done; at most `timeout`.
    ///
    /// # Errors
    ///
    /// As [`ServiceCache::wait_initialized`].
    pub async fn wait_initialized(&self, timeout: Option<Duration>) -> Result<()> {
        self.cache.wait_initialized(timeout).await
    }

    /// Why the provider's cache ended, `None` while it runs.
    pub fn ended(&self) -> Option<Error> {
        self.cache.ended()
    }

    /// Waits until the provider's cache ends, and returns why.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only observes.
    pub async fn wait_ended(&self) -> Error {
        self.cache.wait_ended().await
    }

    /// The cache behind the provider.
    pub fn cache(&self) -> &ServiceCache {
        &self.cache
    }
}

/// A strategy with its state.
#[derive(Debug)]
struct Picker {
    strategy: Strategy,
    /// The round robin's next index.
    next: AtomicU64,
    /// The sticky strategy's instance id.
    sticky: Mutex<Option<String>>,
    /// The sticky strategy's inner picker.
    inner: Option<Box<Picker>>,
}

impl Picker {
    fn new(strategy: Strategy) -> Picker {
        let inner = match &strategy {
            Strategy::Sticky(inner) => Some(Box::new(Picker::new((**inner).clone()))),
            _ => None,
        };
        Picker {
            strategy,
            next: AtomicU64::new(0),
            sticky: Mutex::new(None),
            inner,
        }
    }

    fn pick(&self, instances: &[Arc<ServiceInstance>]) -> Option<Arc<ServiceInstance>> {
        if instances.is_empty() {
            return None;
        }
        let len = u64::try_from(instances.len()).unwrap_or(u64::MAX);
        match (&self.strategy, &self.inner) {
            (Strategy::Sticky(_), Some(inner)) => {
                let mut sticky = self.sticky.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(id) = sticky.as_deref()
                    && let Some(same) = instances.iter().find(|i| i.id == id)
                {
                    return Some(same.clone());
                }
                let picked = inner.pick(instances)?;
                *sticky = Some(picked.id.clone());
                Some(picked)
            }
            (Strategy::Random, _) => {
                let index = usize::try_from(fastrand::u64(..len)).unwrap_or(0);
                instances.get(index).cloned()
            }
            _ => {
                let n = self.next.fetch_add(1, Ordering::Relaxed);
                let index = usize::try_from(n % len).unwrap_or(0);
                instances.get(index).cloned()
            }
        }
    }
}

/// The instances that failed, by id (Curator's `DownInstanceManager`).
#[derive(Debug)]
struct DownInstances {
    policy: DownInstancePolicy,
    /// Id to (first error, errors since).
    errors: Mutex<HashMap<String, (Instant, u32)>>,
}

impl DownInstances {
    fn new(policy: DownInstancePolicy) -> DownInstances {
        DownInstances {
            policy,
            errors: Mutex::new(HashMap::new()),
        }
    }

    fn purged(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Instant, u32)>> {
        let mut errors = self.errors.lock().unwrap_or_else(PoisonError::into_inner);
        let timeout = self.policy.timeout;
        errors.retain(|_, (first, _)| first.elapsed() < timeout);
        errors
    }

    fn add(&self, id: &str) {
        let mut errors = self.purged();
        errors.entry(id.to_owned()).or_insert((Instant::now(), 0)).1 += 1;
    }

    fn is_down(&self, id: &str) -> bool {
        self.purged()
            .get(id)
            .is_some_and(|(_, count)| *count >= self.policy.error_threshold)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instances(ids: &[&str]) -> Vec<Arc<ServiceInstance>> {
        ids.iter()
            .map(|id| Arc::new(ServiceInstance::builder("s").id(id).build()))
            .collect()
    }

    fn ids(picker: &Picker, from: &[Arc<ServiceInstance>], n: usize) -> Vec<String> {
        (0..n)
            .map(|_| picker.pick(from).map(|i| i.id.clone()).unwrap_or_default())
            .collect()
    }

    #[test]
    fn the_handles_can_be_shared_between_tasks() {
        fn shared<T: Send + Sync + 'static>() {}
        shared::<ServiceProvider>();
        shared::<crate::ServiceCache>();
        shared::<crate::Registration>();
        shared::<crate::ServiceDiscovery>();
        fn sent<T: Send + 'static>() {}
        sent::<crate::ServiceEvents>();
    }

    #[test]
    fn round_robin_takes_each_in_turn() {
        let all = instances(&["a", "b", "c"]);
        let picker = Picker::new(Strategy::RoundRobin);
        assert_eq!(ids(&picker, &all, 5), ["a", "b", "c", "a", "b"]);
        assert!(picker.pick(&[]).is_none());
    }

    #[test]
    fn sticky_keeps_its_instance_while_it_is_there() {
        let all = instances(&["a", "b", "c"]);
        let picker = Picker::new(Strategy::sticky(Strategy::RoundRobin));
        assert_eq!(ids(&picker, &all, 3), ["a", "a", "a"]);
        let without_a = instances(&["b", "c"]);
        // The inner round robin goes on from where it was: its second pick.
        assert_eq!(ids(&picker, &without_a, 2), ["c", "c"]);
        assert_eq!(ids(&picker, &all, 1), ["c"]);
    }

    #[test]
    fn random_picks_only_given_instances_and_all_of_them() {
        let all = instances(&["a", "b"]);
        let picker = Picker::new(Strategy::Random);
        let picked = ids(&picker, &all, 200);
        assert!(picked.iter().all(|id| id == "a" || id == "b"));
        assert!(picked.iter().any(|id| id == "a") && picked.iter().any(|id| id == "b"));
    }

    #[test]
    fn an_instance_is_down_after_the_threshold_until_the_timeout() {
        let down = DownInstances::new(DownInstancePolicy {
            timeout: Duration::from_secs(3600),
            error_threshold: 2,
        });
        down.add("a");
        assert!(!down.is_down("a"));
        down.add("a");
        assert!(down.is_down("a"));
        assert!(!down.is_down("b"));

        let expired = DownInstances::new(DownInstancePolicy {
            timeout: Duration::ZERO,
            error_threshold: 1,
        });
        expired.add("a");
        assert!(!expired.is_down("a"));
    }
}
