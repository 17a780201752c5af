// The reference side of the lock latency benchmark (benches/src/bin/lock_latency.rs,
// benches/src/latency/reference.rs, docs/performance.md): the same workloads as ours
// (benches/src/latency/workloads.rs), measured with the plain ZooKeeper Java client and with
// Apache Curator, against the same server, in the same run.
//
// Usage: java -cp <Curator and ZooKeeper jars> LockLatencyRef.java
// (single-file source launch). It prints "ready <java version>" and then reads one command per
// line on stdin:
//
//   run <workload> <client> <connect> <base> <key>=<count>...
//   quit
//
// where <workload> is raw_create_delete, raw_get, pipelined_get (client "java") or
// lock_uncontended, lock_contended, election_failover (client "curator"), and the counts are
// those of benches/src/latency/cli.rs (raw_warmup, raw_pairs, raw_gets, pipelined_gets,
// in_flight, lock_warmup, lock_cycles, contended_sessions, contended_cycles, candidates,
// failover_rounds). Everything is created under <base>, which exists already.
//
// A run answers, one line each:
//   section start            when its measured section starts (after the warm-up); it then
//                            waits for a line "go" (the driver reads the servers' counters)
//   section end <ops>        when it ends; it waits for "go" again
//   metric <json>            one per metric: {"metric":..., "samples_us":[...],
//                            "cpu_us_per_op":..., "ops_per_s":..., "violations":...}
//   done                     the run is over
//   error <message>          the run failed (the program stays ready for the next command)
//
// The definitions and constants are those of workloads.rs: 16 bytes of node data, a session
// timeout of 30 s, one session per workload (one per contender and per candidate), the same
// warm-ups, the handoff from the holder starting its release to the next holder's acquire
// returning, the failover from the leader's session close to another candidate knowing it
// leads. Keep this file ASCII.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

public final class LockLatencyRef {
    /** The node data of the raw creates and of the node read (DATA in workloads.rs). */
    static final byte[] DATA = "rzk-bench-16-byt".getBytes(StandardCharsets.US_ASCII);
    /** The session timeout of every session (workloads.rs connect). */
    static final int SESSION_TIMEOUT_MS = 30_000;
    /** How long a single wait (connect, leadership, a pipelined batch) may take. */
    static final long WAIT_LIMIT_S = 60;

    static BufferedReader in;

    public static void main(String[] args) throws Exception {
        in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        say("ready " + System.getProperty("java.version"));
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split("\\s+");
            if (words.length == 0 || words[0].isEmpty()) {
                continue;
            }
            if (words[0].equals("quit")) {
                break;
            }
            if (!words[0].equals("run") || words.length < 5) {
                say("error unknown command: " + line);
                continue;
            }
            try {
                Map<String, Integer> counts = new HashMap<>();
                for (int i = 5; i < words.length; i++) {
                    String[] kv = words[i].split("=", 2);
                    counts.put(kv[0], Integer.parseInt(kv[1]));
                }
                Run run = new Run(words[3], words[4], counts);
                String key = words[1] + " " + words[2];
                switch (key) {
                    case "raw_create_delete java": run.rawCreateDelete(); break;
                    case "raw_get java": run.rawGet(); break;
                    case "pipelined_get java": run.pipelinedGet(); break;
                    case "lock_uncontended curator": run.lockUncontended(); break;
                    case "lock_contended curator": run.lockContended(); break;
                    case "election_failover curator": run.electionFailover(); break;
                    default: throw new IllegalArgumentException("no such workload: " + key);
                }
                say("done");
            } catch (Throwable e) {
                String message = String.valueOf(e).replace('\n', ' ').replace('\r', ' ');
                say("error " + message);
            }
        }
        // Client threads a failed run may have left behind must not keep the JVM alive.
        System.exit(0);
    }

    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** Process CPU time (every thread of the JVM), nanoseconds. */
    static long cpuNanos() {
        java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean) {
            return ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime();
        }
        return -1;
    }

    /** Waits for the driver's "go". */
    static void awaitGo() throws Exception {
        String line = in.readLine();
        if (line == null || !line.trim().equals("go")) {
            throw new IllegalStateException("expected go, got " + line);
        }
    }

    /** The measured section of a run: CPU and wall clock, the driver reads the counters. */
    static final class Section {
        long cpu0;
        long wall0;
        double cpuUsPerOp;
        double opsPerS;

        void start() throws Exception {
            say("section start");
            awaitGo();
            cpu0 = cpuNanos();
            wall0 = System.nanoTime();
        }

        void end(int ops) throws Exception {
            long wall = System.nanoTime() - wall0;
            long cpu = cpuNanos() - cpu0;
            say("section end " + ops);
            awaitGo();
            cpuUsPerOp = cpu0 < 0 ? Double.NaN : cpu / 1e3 / Math.max(ops, 1);
            opsPerS = ops / (wall / 1e9);
        }
    }

    /** One metric line; cpu and ops/s are NaN when absent, violations negative. */
    static void metric(String name, List<Long> nanos, double cpuUsPerOp, double opsPerS, long violations) {
        StringBuilder sb = new StringBuilder(64 + nanos.size() * 10);
        sb.append("metric {\"metric\":\"").append(name).append("\",\"samples_us\":[");
        for (int i = 0; i < nanos.size(); i++) {
            if (i > 0) {
                sb.append(',');
            }
            long ns = Math.max(nanos.get(i), 0);
            long frac = ns % 1000;
            sb.append(ns / 1000).append('.');
            if (frac < 100) {
                sb.append('0');
            }
            if (frac < 10) {
                sb.append('0');
            }
            sb.append(frac);
        }
        sb.append("],\"cpu_us_per_op\":").append(number(cpuUsPerOp));
        sb.append(",\"ops_per_s\":").append(number(opsPerS));
        sb.append(",\"violations\":").append(violations < 0 ? "null" : Long.toString(violations));
        sb.append('}');
        say(sb.toString());
    }

    static String number(double v) {
        return Double.isFinite(v) ? String.format(java.util.Locale.ROOT, "%.3f", v) : "null";
    }

    /** One run of one workload. */
    static final class Run {
        final String connect;
        final String base;
        final Map<String, Integer> counts;

        Run(String connect, String base, Map<String, Integer> counts) {
            this.connect = connect;
            this.base = base;
            this.counts = counts;
        }

        int count(String key) {
            Integer n = counts.get(key);
            if (n == null) {
                throw new IllegalArgumentException("missing count " + key);
            }
            return n;
        }

        /** A ZooKeeper Java client session, connected. */
        ZooKeeper zookeeper() throws Exception {
            CountDownLatch connected = new CountDownLatch(1);
            ZooKeeper zk = new ZooKeeper(connect, SESSION_TIMEOUT_MS, event -> {
                if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                    connected.countDown();
                }
            });
            if (!connected.await(WAIT_LIMIT_S, TimeUnit.SECONDS)) {
                zk.close();
                throw new IllegalStateException("no session with " + connect);
            }
            return zk;
        }

        /** A Curator client (its own session), connected; no ensemble tracking (as ours). */
        CuratorFramework curator() throws Exception {
            CuratorFramework client = CuratorFrameworkFactory.builder()
                    .connectString(connect)
                    .sessionTimeoutMs(SESSION_TIMEOUT_MS)
                    .connectionTimeoutMs((int) (WAIT_LIMIT_S * 1000))
                    .retryPolicy(new RetryOneTime(100))
                    .ensembleTracker(false)
                    .build();
            client.start();
            if (!client.blockUntilConnected((int) WAIT_LIMIT_S, TimeUnit.SECONDS)) {
                client.close();
                throw new IllegalStateException("no Curator session with " + connect);
            }
            return client;
        }

        static void ensureNode(ZooKeeper zk, String path, byte[] data) throws Exception {
            try {
                zk.create(path, data, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            } catch (KeeperException.NodeExistsException e) {
                // fine
            }
        }

        static void ensureNode(CuratorFramework client, String path) throws Exception {
            try {
                client.create().withMode(CreateMode.PERSISTENT).forPath(path, new byte[0]);
            } catch (KeeperException.NodeExistsException e) {
                // fine
            }
        }

        void rawCreateDelete() throws Exception {
            int warmup = count("raw_warmup");
            int pairs = count("raw_pairs");
            ZooKeeper zk = zookeeper();
            try {
                String path = base + "/raw";
                List<Long> creates = new ArrayList<>(pairs);
                List<Long> deletes = new ArrayList<>(pairs);
                List<Long> both = new ArrayList<>(pairs);
                Section section = new Section();
                for (int i = 0; i < warmup + pairs; i++) {
                    if (i == warmup) {
                        section.start();
                    }
                    long t0 = System.nanoTime();
                    zk.create(path, DATA, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL);
                    long t1 = System.nanoTime();
                    zk.delete(path, -1);
                    long t2 = System.nanoTime();
                    if (i >= warmup) {
                        creates.add(t1 - t0);
                        deletes.add(t2 - t1);
                        both.add(t2 - t0);
                    }
                }
                section.end(pairs);
                metric("raw_create", creates, Double.NaN, Double.NaN, -1);
                metric("raw_delete", deletes, Double.NaN, Double.NaN, -1);
                metric("raw_pair", both, section.cpuUsPerOp, Double.NaN, -1);
            } finally {
                zk.close();
            }
        }

        void rawGet() throws Exception {
            int n = count("raw_gets");
            ZooKeeper zk = zookeeper();
            try {
                String path = base + "/get";
                ensureNode(zk, path, DATA);
                for (int i = 0; i < Math.min(n, 200); i++) {
                    zk.getData(path, false, null);
                }
                List<Long> samples = new ArrayList<>(n);
                Section section = new Section();
                section.start();
                for (int i = 0; i < n; i++) {
                    long t0 = System.nanoTime();
                    zk.getData(path, false, null);
                    samples.add(System.nanoTime() - t0);
                }
                section.end(n);
                metric("raw_get", samples, section.cpuUsPerOp, section.opsPerS, -1);
            } finally {
                zk.close();
            }
        }

        void pipelinedGet() throws Exception {
            int n = count("pipelined_gets");
            int window = count("in_flight");
            ZooKeeper zk = zookeeper();
            try {
                String path = base + "/get";
                ensureNode(zk, path, DATA);
                pipeline(zk, path, Math.max(n / 10, 1), window);
                Section section = new Section();
                section.start();
                long[] lat = pipeline(zk, path, n, window);
                section.end(n);
                List<Long> samples = new ArrayList<>(n);
                for (long l : lat) {
                    samples.add(l);
                }
                metric("pipelined_get", samples, section.cpuUsPerOp, section.opsPerS, -1);
            } finally {
                zk.close();
            }
        }

        /** n asynchronous getData calls, at most window in flight; each one's latency. */
        static long[] pipeline(ZooKeeper zk, String path, int n, int window) throws Exception {
            long[] lat = new long[n];
            Semaphore slots = new Semaphore(window);
            CountDownLatch done = new CountDownLatch(n);
            AtomicReference<String> failure = new AtomicReference<>();
            for (int i = 0; i < n; i++) {
                if (!slots.tryAcquire(WAIT_LIMIT_S, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("pipelined getData: no reply within the limit");
                }
                final int index = i;
                final long t0 = System.nanoTime();
                zk.getData(path, false, (rc, p, ctx, data, stat) -> {
                    lat[index] = System.nanoTime() - t0;
                    if (rc != 0) {
                        failure.compareAndSet(null, "getData: " + KeeperException.Code.get(rc));
                    }
                    slots.release();
                    done.countDown();
                }, null);
            }
            if (!done.await(WAIT_LIMIT_S, TimeUnit.SECONDS)) {
                throw new IllegalStateException("pipelined getData: no reply within the limit");
            }
            if (failure.get() != null) {
                throw new IllegalStateException(failure.get());
            }
            return lat;
        }

        void lockUncontended() throws Exception {
            int warmup = count("lock_warmup");
            int cycles = count("lock_cycles");
            CuratorFramework client = curator();
            try {
                String path = base + "/lock-uncontended";
                ensureNode(client, path);
                InterProcessMutex lock = new InterProcessMutex(client, path);
                List<Long> acquires = new ArrayList<>(cycles);
                List<Long> releases = new ArrayList<>(cycles);
                List<Long> both = new ArrayList<>(cycles);
                Section section = new Section();
                for (int i = 0; i < warmup + cycles; i++) {
                    if (i == warmup) {
                        section.start();
                    }
                    long t0 = System.nanoTime();
                    lock.acquire();
                    long t1 = System.nanoTime();
                    lock.release();
                    long t2 = System.nanoTime();
                    if (i >= warmup) {
                        acquires.add(t1 - t0);
                        releases.add(t2 - t1);
                        both.add(t2 - t0);
                    }
                }
                section.end(cycles);
                metric("lock_acquire", acquires, Double.NaN, Double.NaN, -1);
                metric("lock_release", releases, Double.NaN, Double.NaN, -1);
                metric("lock_cycle", both, section.cpuUsPerOp, Double.NaN, -1);
            } finally {
                client.close();
            }
        }

        void lockContended() throws Exception {
            int sessions = count("contended_sessions");
            int cycles = count("contended_cycles");
            String path = base + "/lock-contended";
            List<CuratorFramework> clients = new ArrayList<>();
            try {
                for (int i = 0; i < sessions; i++) {
                    clients.add(curator());
                }
                ensureNode(clients.get(0), path);
                // Warm-up: one cycle per session, one after the other.
                for (CuratorFramework client : clients) {
                    InterProcessMutex lock = new InterProcessMutex(client, path);
                    lock.acquire();
                    lock.release();
                }
                AtomicInteger holders = new AtomicInteger();
                AtomicLong violations = new AtomicLong();
                AtomicLong releaseStarted = new AtomicLong(-1);
                ConcurrentLinkedQueue<Long> handoffs = new ConcurrentLinkedQueue<>();
                ConcurrentLinkedQueue<Long> releases = new ConcurrentLinkedQueue<>();
                AtomicReference<Throwable> failure = new AtomicReference<>();
                Section section = new Section();
                section.start();
                List<Thread> threads = new ArrayList<>();
                for (CuratorFramework client : clients) {
                    InterProcessMutex lock = new InterProcessMutex(client, path);
                    Thread t = new Thread(() -> {
                        try {
                            for (int c = 0; c < cycles; c++) {
                                lock.acquire();
                                long acquired = System.nanoTime();
                                long started = releaseStarted.getAndSet(-1);
                                if (started >= 0) {
                                    handoffs.add(acquired - started);
                                }
                                if (holders.getAndIncrement() != 0) {
                                    violations.incrementAndGet();
                                }
                                // Let the other contenders run while the lock is held.
                                Thread.yield();
                                if (holders.get() != 1) {
                                    violations.incrementAndGet();
                                }
                                holders.decrementAndGet();
                                long start = System.nanoTime();
                                releaseStarted.set(start);
                                lock.release();
                                releases.add(System.nanoTime() - start);
                            }
                        } catch (Throwable e) {
                            failure.compareAndSet(null, e);
                        }
                    });
                    t.start();
                    threads.add(t);
                }
                for (Thread t : threads) {
                    t.join();
                }
                if (failure.get() != null) {
                    throw new IllegalStateException("contender: " + failure.get(), failure.get());
                }
                int total = sessions * cycles;
                section.end(total);
                metric("lock_contended", new ArrayList<>(handoffs), section.cpuUsPerOp, section.opsPerS,
                        violations.get());
                metric("lock_contended_release", new ArrayList<>(releases), Double.NaN, Double.NaN, -1);
            } finally {
                for (CuratorFramework client : clients) {
                    client.close();
                }
            }
        }

        /** A candidate: its session and its latch, reporting its leadership to `elected`. */
        static final class Candidate {
            final CuratorFramework client;
            final LeaderLatch latch;

            Candidate(CuratorFramework client, LeaderLatch latch) {
                this.client = client;
                this.latch = latch;
            }
        }

        Candidate join(String path, int id, LinkedBlockingQueue<long[]> elected) throws Exception {
            CuratorFramework client = curator();
            LeaderLatch latch = new LeaderLatch(client, path, "c" + id);
            latch.addListener(new LeaderLatchListener() {
                @Override
                public void isLeader() {
                    elected.add(new long[] {id, System.nanoTime()});
                }

                @Override
                public void notLeader() {}
            });
            latch.start();
            return new Candidate(client, latch);
        }

        void electionFailover() throws Exception {
            int candidatesCount = count("candidates");
            int rounds = count("failover_rounds");
            String path = base + "/election";
            LinkedBlockingQueue<long[]> elected = new LinkedBlockingQueue<>();
            List<Candidate> candidates = new ArrayList<>();
            List<Integer> ids = new ArrayList<>();
            int nextId = 0;
            try {
                for (int i = 0; i < candidatesCount; i++) {
                    candidates.add(join(path, nextId, elected));
                    ids.add(nextId);
                    nextId++;
                }
                List<Long> samples = new ArrayList<>(rounds);
                Section section = new Section();
                section.start();
                for (int round = 0; round < rounds; round++) {
                    int leader = waitForLeader(candidates);
                    int leaderId = ids.get(leader);
                    Candidate old = candidates.remove(leader);
                    ids.remove(leader);
                    long t0 = System.nanoTime();
                    old.client.close();
                    long electedAt = -1;
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_LIMIT_S);
                    while (electedAt < 0) {
                        long left = deadline - System.nanoTime();
                        long[] e = elected.poll(Math.max(left, 0), TimeUnit.NANOSECONDS);
                        if (e == null) {
                            throw new IllegalStateException("no new leader within the limit");
                        }
                        // Earlier events (the old leader's own election) are not this round's.
                        if (e[0] != leaderId && e[1] >= t0) {
                            electedAt = e[1];
                        }
                    }
                    samples.add(electedAt - t0);
                    try {
                        old.latch.close();
                    } catch (Exception e) {
                        // its session is closed already
                    }
                    // A new candidate takes the old leader's place at the end of the queue.
                    candidates.add(join(path, nextId, elected));
                    ids.add(nextId);
                    nextId++;
                }
                section.end(rounds);
                metric("election_failover", samples, section.cpuUsPerOp, Double.NaN, -1);
            } finally {
                for (Candidate c : candidates) {
                    try {
                        c.latch.close();
                    } catch (Exception e) {
                        // best effort
                    }
                    c.client.close();
                }
            }
        }

        static int waitForLeader(List<Candidate> candidates) throws Exception {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_LIMIT_S);
            while (true) {
                for (int i = 0; i < candidates.size(); i++) {
                    if (candidates.get(i).latch.hasLeadership()) {
                        return i;
                    }
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("no leader within the limit");
                }
                Thread.sleep(1);
            }
        }
    }
}
