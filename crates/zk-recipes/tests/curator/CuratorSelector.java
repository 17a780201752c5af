// A candidate of Apache Curator's LeaderSelector for the selector interop tests
// (crates/zk-recipes/tests/selector_interop.rs and tests/tests/fault_recipes/selector.rs).
// Each tenure (takeLeadership) writes its start and its end into a log that every candidate,
// Curator's and ours, shares: the persistent sequential nodes <log>/e-<seq> with the data
// "start <id>" and "end <id>", written while leading. The server orders them: tenures that
// never overlap give start, end, start, end, ... each end of the same id as its start.
// Usage: java CuratorSelector <connect string> <selector path> <id> <log path> <tenures>
//        <hold ms> [<session timeout ms>]
// Prints "started" once its selector is started, "tenures=<n>" once it has led <tenures>
// times (then closes the selector and exits 0); exits 1 on any failure. With <tenures> = 0 it
// leads forever (until killed), printing "leading" at the start of each tenure.
//
// The failover benchmark (benches/src/bin/selector.rs):
//   java CuratorSelector bench <connect string> <selector path> <tenures>
// Two LeaderSelectors (auto-requeue), each on its own client, take turns <tenures> times in
// all; each tenure returns at once. Prints "failover=<us>,<us>,..." (one per tenure after the
// first: from the end of a tenure, its takeLeadership returning, to the start of the next, the
// other candidate's takeLeadership called) and exits 0.

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.CreateMode;

public class CuratorSelector {
    public static void main(String[] args) throws Exception {
        if (args[0].equals("bench")) {
            bench(args[1], args[2], Integer.parseInt(args[3]));
            return;
        }
        String connect = args[0];
        String path = args[1];
        String id = args[2];
        String log = args[3];
        int tenures = Integer.parseInt(args[4]);
        long holdMs = Long.parseLong(args[5]);
        int sessionTimeout = args.length > 6 ? Integer.parseInt(args[6]) : 10000;
        AtomicInteger led = new AtomicInteger();
        CountDownLatch done = new CountDownLatch(1);
        try (CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(sessionTimeout)
                .connectionTimeoutMs(10000)
                .retryPolicy(new RetryNTimes(10, 100))
                .build()) {
            client.start();
            client.blockUntilConnected();
            LeaderSelector selector = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
                @Override
                public void takeLeadership(CuratorFramework c) throws Exception {
                    c.create().withMode(CreateMode.PERSISTENT_SEQUENTIAL)
                            .forPath(log + "/e-", ("start " + id).getBytes(StandardCharsets.UTF_8));
                    if (tenures == 0) {
                        System.out.println("leading");
                        System.out.flush();
                        Thread.sleep(Long.MAX_VALUE);
                    }
                    Thread.sleep(holdMs);
                    c.create().withMode(CreateMode.PERSISTENT_SEQUENTIAL)
                            .forPath(log + "/e-", ("end " + id).getBytes(StandardCharsets.UTF_8));
                    if (led.incrementAndGet() == tenures) {
                        done.countDown();
                    }
                }
            });
            selector.setId(id);
            selector.autoRequeue();
            selector.start();
            System.out.println("started");
            System.out.flush();
            done.await();
            selector.close();
            System.out.println("tenures=" + led.get());
        } catch (Exception e) {
            e.printStackTrace();
            System.exit(1);
        }
    }

    static CuratorFramework connect(String connect) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(10000)
                .connectionTimeoutMs(10000)
                .retryPolicy(new RetryNTimes(10, 100))
                .build();
        client.start();
        client.blockUntilConnected();
        return client;
    }

    static void bench(String connect, String path, int tenures) throws Exception {
        List<Long> samples = new ArrayList<>();
        AtomicLong lastEnd = new AtomicLong(0);
        AtomicInteger led = new AtomicInteger();
        CountDownLatch done = new CountDownLatch(1);
        List<CuratorFramework> clients = new ArrayList<>();
        List<LeaderSelector> selectors = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            CuratorFramework client = connect(connect);
            clients.add(client);
            LeaderSelector selector = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
                @Override
                public void takeLeadership(CuratorFramework c) {
                    long start = System.nanoTime();
                    long end = lastEnd.get();
                    synchronized (samples) {
                        if (end != 0) {
                            samples.add((start - end) / 1000);
                        }
                    }
                    if (led.incrementAndGet() >= tenures) {
                        done.countDown();
                    }
                    lastEnd.set(System.nanoTime());
                }
            });
            selector.setId("bench-" + i);
            selector.autoRequeue();
            selectors.add(selector);
        }
        for (LeaderSelector selector : selectors) {
            selector.start();
        }
        done.await();
        for (LeaderSelector selector : selectors) {
            selector.close();
        }
        for (CuratorFramework client : clients) {
            client.close();
        }
        StringBuilder out = new StringBuilder("failover=");
        synchronized (samples) {
            for (int i = 0; i < samples.size(); i++) {
                if (i > 0) {
                    out.append(',');
                }
                out.append(samples.get(i));
            }
        }
        System.out.println(out);
    }
}
