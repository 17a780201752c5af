// An Apache Curator 5.4 service-discovery process (curator-x-discovery) for the interop and
// fault tests of zk-discovery, driven line by line on stdin:
//
//   java CuratorDiscovery.java <connect string> <base path> <session timeout ms>
//
// It prints "ready" once connected, then one reply line per command:
//
//   register <name> <id> <address> <port> <zone>  registerService(ServiceInstance) of a DYNAMIC
//                                                 instance whose payload is the map
//                                                 {"zone": <zone>} -> registered
//   update <id> <zone>                            updateService with the payload's zone changed
//                                                 -> updated
//   unregister <id>                               unregisterService -> unregistered
//   names                                         queryForNames -> names <a,b,..> (sorted)
//   query <name>                                  queryForInstances -> a JSON array of
//                                                 describe(instance), sorted by id
//   cache <name>                                  build and start a ServiceCache (start waits
//                                                 for its first load) -> started
//   cache-wait <view> <timeout ms>                wait until the cache's view is <view>: its
//                                                 instances as <id>:<port>, sorted,
//                                                 comma-separated, "-" for none
//                                                 -> ok | timeout <view now>
//   cache-get <id>                                the cache's instance <id> -> describe(it) or none
//   cache-changes                                 -> changes <n> (cacheChanged calls so far)
//   bench <name> <instances> <queries> <changes>  the benchmark's Curator side
//                                                 (benches/src/bin/discovery.rs): registers
//                                                 <instances> instances bench-<i>, starts a
//                                                 ServiceCache on a second client, times
//                                                 <queries> queryForInstances and <changes>
//                                                 updateService calls until that cache holds the
//                                                 change, then unregisters them
//                                                 -> bench query=<us>,<us>,.. change=<us>,..
//   quit                                          close discovery, cache and client, then exit
//
// describe(instance) is one JSON object: name, id, address, port, sslPort, enabled,
// serviceType, registrationTimeUTC and payload (as Curator read it: a map, its own JSON).
// A failed command replies "error <message>".

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceType;
import org.apache.curator.x.discovery.UriSpec;
import org.apache.curator.x.discovery.details.ServiceCacheListener;

public class CuratorDiscovery {
    static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(args[0])
                .sessionTimeoutMs(Integer.parseInt(args[2]))
                .connectionTimeoutMs(10000)
                .retryPolicy(new RetryNTimes(1000, 100))
                .build();
        client.start();
        client.blockUntilConnected();
        ServiceDiscovery<Object> discovery = ServiceDiscoveryBuilder.builder(Object.class)
                .client(client)
                .basePath(args[1])
                .build();
        discovery.start();
        Map<String, ServiceInstance<Object>> mine = new HashMap<>();
        ServiceCache<Object> cache = null;
        AtomicInteger changes = new AtomicInteger();
        System.out.println("ready");
        System.out.flush();

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split(" ");
            String reply;
            try {
                switch (w[0]) {
                    case "register": {
                        ServiceInstance<Object> instance = ServiceInstance.builder()
                                .name(w[1]).id(w[2]).address(w[3]).port(Integer.parseInt(w[4]))
                                .payload(payload(w[5]))
                                .uriSpec(new UriSpec("{scheme}://{address}:{port}"))
                                .serviceType(ServiceType.DYNAMIC)
                                .build();
                        discovery.registerService(instance);
                        mine.put(w[2], instance);
                        reply = "registered";
                        break;
                    }
                    case "update": {
                        ServiceInstance<Object> old = mine.get(w[1]);
                        ServiceInstance<Object> instance = new ServiceInstance<Object>(old.getName(), old.getId(),
                                old.getAddress(), old.getPort(), old.getSslPort(), payload(w[2]),
                                old.getRegistrationTimeUTC(), old.getServiceType(), old.getUriSpec(), old.isEnabled());
                        discovery.updateService(instance);
                        mine.put(w[1], instance);
                        reply = "updated";
                        break;
                    }
                    case "unregister":
                        discovery.unregisterService(mine.remove(w[1]));
                        reply = "unregistered";
                        break;
                    case "names":
                        reply = "names " + String.join(",", new TreeSet<>(discovery.queryForNames()));
                        break;
                    case "query":
                        reply = describeAll(discovery.queryForInstances(w[1]));
                        break;
                    case "cache": {
                        cache = discovery.serviceCacheBuilder().name(w[1]).build();
                        cache.addListener(new ServiceCacheListener() {
                            @Override
                            public void cacheChanged() {
                                changes.incrementAndGet();
                            }

                            @Override
                            public void stateChanged(CuratorFramework c, ConnectionState s) {}
                        });
                        cache.start();
                        reply = "started";
                        break;
                    }
                    case "cache-wait": {
                        long deadline = System.currentTimeMillis() + Long.parseLong(w[2]);
                        String ids = ids(cache.getInstances());
                        while (!ids.equals(w[1]) && System.currentTimeMillis() < deadline) {
                            Thread.sleep(5); // polling the cache's view, bounded by the deadline
                            ids = ids(cache.getInstances());
                        }
                        reply = ids.equals(w[1]) ? "ok" : "timeout " + ids;
                        break;
                    }
                    case "cache-get": {
                        reply = "none";
                        for (ServiceInstance<Object> i : cache.getInstances()) {
                            if (i.getId().equals(w[1])) {
                                reply = JSON.writeValueAsString(describe(i));
                            }
                        }
                        break;
                    }
                    case "cache-changes":
                        reply = "changes " + changes.get();
                        break;
                    case "bench":
                        reply = bench(client, discovery, args[1], w[1], Integer.parseInt(w[2]),
                                Integer.parseInt(w[3]), Integer.parseInt(w[4]));
                        break;
                    case "quit":
                        if (cache != null) {
                            cache.close();
                        }
                        discovery.close();
                        client.close();
                        System.out.println("bye");
                        System.out.flush();
                        return;
                    default:
                        reply = "error unknown command " + w[0];
                }
            } catch (Exception e) {
                reply = "error " + e.toString().replace('\n', ' ');
            }
            System.out.println(reply);
            System.out.flush();
        }
    }

    static String bench(CuratorFramework client, ServiceDiscovery<Object> discovery, String base, String name,
            int instances, int queries, int changes) throws Exception {
        List<ServiceInstance<Object>> registered = new ArrayList<>();
        for (int i = 0; i < instances; i++) {
            ServiceInstance<Object> instance = ServiceInstance.builder().name(name).id("bench-" + i)
                    .address("10.9.0.1").port(10000 + i).payload(payload("z0")).build();
            discovery.registerService(instance);
            registered.add(instance);
        }
        CuratorFramework watcher = CuratorFrameworkFactory.builder()
                .connectString(client.getZookeeperClient().getCurrentConnectionString())
                .sessionTimeoutMs(10000).connectionTimeoutMs(10000)
                .retryPolicy(new RetryNTimes(10, 100)).build();
        watcher.start();
        watcher.blockUntilConnected();
        ServiceDiscovery<Object> watching = ServiceDiscoveryBuilder.builder(Object.class)
                .client(watcher).basePath(base).build();
        watching.start();
        ServiceCache<Object> cache = watching.serviceCacheBuilder().name(name).build();
        final Object seen = new Object();
        cache.addListener(new ServiceCacheListener() {
            @Override
            public void cacheChanged() {
                synchronized (seen) {
                    seen.notifyAll();
                }
            }

            @Override
            public void stateChanged(CuratorFramework c, ConnectionState s) {}
        });
        cache.start();
        StringBuilder query = new StringBuilder();
        for (int q = 0; q < queries; q++) {
            long start = System.nanoTime();
            int found = discovery.queryForInstances(name).size();
            long micros = (System.nanoTime() - start) / 1000;
            if (found != instances) {
                throw new IllegalStateException("query found " + found + " of " + instances);
            }
            query.append(q == 0 ? "" : ",").append(micros);
        }
        StringBuilder change = new StringBuilder();
        ServiceInstance<Object> first = registered.get(0);
        for (int c = 1; c <= changes; c++) {
            String zone = "z" + c;
            ServiceInstance<Object> updated = new ServiceInstance<Object>(name, first.getId(), first.getAddress(),
                    first.getPort(), null, payload(zone), first.getRegistrationTimeUTC(), ServiceType.DYNAMIC,
                    null, true);
            long start = System.nanoTime();
            discovery.updateService(updated);
            long deadline = start + 30_000_000_000L;
            synchronized (seen) {
                while (!zoneOf(cache, first.getId()).equals(zone)) {
                    long left = (deadline - System.nanoTime()) / 1_000_000;
                    if (left <= 0) {
                        throw new IllegalStateException("the cache did not see change " + c);
                    }
                    seen.wait(left);
                }
            }
            long micros = (System.nanoTime() - start) / 1000;
            change.append(c == 1 ? "" : ",").append(micros);
        }
        cache.close();
        watching.close();
        watcher.close();
        for (ServiceInstance<Object> instance : registered) {
            discovery.unregisterService(instance);
        }
        return "bench query=" + query + " change=" + change;
    }

    static String zoneOf(ServiceCache<Object> cache, String id) {
        for (ServiceInstance<Object> i : cache.getInstances()) {
            if (i.getId().equals(id) && i.getPayload() instanceof Map) {
                return String.valueOf(((Map<?, ?>) i.getPayload()).get("zone"));
            }
        }
        return "";
    }

    static Map<String, Object> payload(String zone) {
        Map<String, Object> payload = new LinkedHashMap<>();
        payload.put("zone", zone);
        return payload;
    }

    static String ids(Collection<ServiceInstance<Object>> instances) {
        TreeSet<String> ids = new TreeSet<>();
        for (ServiceInstance<Object> i : instances) {
            ids.add(i.getId() + ":" + i.getPort());
        }
        return ids.isEmpty() ? "-" : String.join(",", ids);
    }

    static Map<String, Object> describe(ServiceInstance<Object> i) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("name", i.getName());
        d.put("id", i.getId());
        d.put("address", i.getAddress());
        d.put("port", i.getPort());
        d.put("sslPort", i.getSslPort());
        d.put("enabled", i.isEnabled());
        d.put("serviceType", String.valueOf(i.getServiceType()));
        d.put("registrationTimeUTC", i.getRegistrationTimeUTC());
        d.put("uri", i.buildUriSpec());
        d.put("payload", i.getPayload());
        return d;
    }

    static String describeAll(Collection<ServiceInstance<Object>> instances) throws Exception {
        List<ServiceInstance<Object>> sorted = new ArrayList<>(instances);
        sorted.sort(Comparator.comparing(ServiceInstance::getId));
        List<Map<String, Object>> all = new ArrayList<>();
        for (ServiceInstance<Object> i : sorted) {
            all.add(describe(i));
        }
        return JSON.writeValueAsString(all);
    }
}
