// An Apache Curator 5 process for the interop tests (crates/zk-recipes/tests/lock.rs and
// crates/zk-recipes/tests/election.rs), driven line by line on stdin. It prints "ready" once
// started, then one reply line per command:
//
//   <slot> mutex|read|write <path> <timeout ms>  acquire InterProcessMutex / the read or write
//                                                side of InterProcessReadWriteLock on <path>,
//                                                waiting at most <timeout ms>
//                                                -> acquired | timeout
//   <slot> mutex-bg|read-bg|write-bg <path>      start such an acquire without a timeout
//                                                -> submitted
//   <slot> held <wait ms>                        wait at most <wait ms> for that acquire
//                                                -> acquired | pending
//   <slot> release                               release the slot's lock -> released
//   <slot> latch <path> <id> <marker>            start a LeaderLatch with participant id <id>;
//                                                whenever it becomes leader it creates the
//                                                ephemeral node <marker>, and NodeExists there
//                                                (another leader is in) counts as a violation
//                                                -> started
//   <slot> await <timeout ms>                    LeaderLatch.await -> leader | not-leader
//   <slot> has                                   LeaderLatch.hasLeadership -> leader | not-leader
//   <slot> close                                 delete the marker if this latch created it,
//                                                then close the latch -> closed
//   <slot> semaphore <path> <max> <timeout ms>   acquire a lease of InterProcessSemaphoreV2(<path>,
//                                                <max>), waiting at most <timeout ms>
//                                                -> acquired | timeout
//   <slot> return                                return the slot's lease -> returned
//   - violations                                 -> violations=<n> (latch markers so far)
//   - sem-stress <path> <max> <base> <threads> <rounds>
//                                                <threads> threads, each with its own session,
//                                                take a lease of InterProcessSemaphoreV2(<path>,
//                                                <max>) <rounds> times and count the holders
//                                                inside (see below)
//                                                -> violations=<n> most=<n> leases=<n>
//   - rw-stress <path> <base> <writer rounds> <reader rounds>
//                                                one writer thread and one reader thread, each
//                                                with its own session, take the write / read
//                                                side of InterProcessReadWriteLock(<path>) and
//                                                check the exclusion inside (see below)
//                                                -> violations=<n> writes=<n> reads=<n>
//   - quit
//
// A failed command replies "error <message>". Every slot has its own session and its own
// thread: Curator's locks belong to the thread that acquired them.
//
// The check inside a semaphore lease (the Rust side makes the same one): create the ephemeral
// <base>/holders/<unique>, list <base>/holders (more than <max> children: a violation; the most
// seen is reported), sleep, delete the own node.
//
// The checks inside the read-write lock (the Rust side makes the same ones):
//   writer: create the ephemeral <base>/writer (NodeExists: another writer is in), list
//           <base>/readers (a child: a reader is in), read <base>/counter, sleep, write it + 1
//           (a lost update shows an overlap), delete <base>/writer (NoNode: someone removed it);
//   reader: create the ephemeral <base>/readers/<unique>, check that <base>/writer does not
//           exist, read the counter, sleep, read it again (a change: a writer was in), check
//           <base>/writer again, delete the own node.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;

public class CuratorPeer {
    static String connect;
    static final AtomicInteger latchViolations = new AtomicInteger();

    static CuratorFramework newClient() throws InterruptedException {
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

    static final class Slot {
        final CuratorFramework client;
        final ExecutorService thread = Executors.newSingleThreadExecutor();
        InterProcessLock lock;
        Lease lease;
        Future<Boolean> pending;
        LeaderLatch latch;
        String marker;
        boolean markerOwned;

        Slot() throws InterruptedException {
            client = newClient();
        }

        <T> T onThread(Callable<T> task) throws Exception {
            return thread.submit(task).get();
        }
    }

    static InterProcessLock newLock(CuratorFramework client, String kind, String path) {
        switch (kind) {
            case "mutex":
                return new InterProcessMutex(client, path);
            case "read":
                return new InterProcessReadWriteLock(client, path).readLock();
            case "write":
                return new InterProcessReadWriteLock(client, path).writeLock();
            default:
                throw new IllegalArgumentException("no lock kind " + kind);
        }
    }

    public static void main(String[] args) throws Exception {
        connect = args[0];
        Map<String, Slot> slots = new HashMap<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        System.out.println("ready");
        System.out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split(" ");
            if (w.length < 2) {
                continue;
            }
            String reply;
            try {
                if (w[0].equals("-")) {
                    reply = global(w);
                    if (reply == null) {
                        break;
                    }
                } else {
                    Slot slot = slots.get(w[0]);
                    if (slot == null) {
                        slot = new Slot();
                        slots.put(w[0], slot);
                    }
                    reply = command(slot, w);
                }
            } catch (Throwable e) {
                e.printStackTrace();
                reply = "error " + e;
            }
            System.out.println(reply);
            System.out.flush();
        }
        for (Slot slot : slots.values()) {
            slot.thread.shutdownNow();
            slot.client.close();
        }
        System.exit(0);
    }

    static String global(String[] w) throws Exception {
        switch (w[1]) {
            case "quit":
                return null;
            case "violations":
                return "violations=" + latchViolations.get();
            case "rw-stress":
                return rwStress(w[2], w[3], Integer.parseInt(w[4]), Integer.parseInt(w[5]));
            case "sem-stress":
                return semStress(w[2], Integer.parseInt(w[3]), w[4], Integer.parseInt(w[5]), Integer.parseInt(w[6]));
            default:
                throw new IllegalArgumentException("no command " + w[1]);
        }
    }

    static String command(Slot slot, String[] w) throws Exception {
        switch (w[1]) {
            case "mutex":
            case "read":
            case "write": {
                InterProcessLock lock = newLock(slot.client, w[1], w[2]);
                long timeout = Long.parseLong(w[3]);
                boolean acquired = slot.onThread(() -> lock.acquire(timeout, TimeUnit.MILLISECONDS));
                if (acquired) {
                    slot.lock = lock;
                }
                return acquired ? "acquired" : "timeout";
            }
            case "mutex-bg":
            case "read-bg":
            case "write-bg": {
                InterProcessLock lock = newLock(slot.client, w[1].substring(0, w[1].length() - 3), w[2]);
                slot.lock = lock;
                slot.pending = slot.thread.submit(() -> {
                    lock.acquire();
                    return true;
                });
                return "submitted";
            }
            case "held":
                try {
                    slot.pending.get(Long.parseLong(w[2]), TimeUnit.MILLISECONDS);
                    return "acquired";
                } catch (TimeoutException e) {
                    return "pending";
                }
            case "release": {
                InterProcessLock lock = slot.lock;
                slot.onThread(() -> {
                    lock.release();
                    return null;
                });
                slot.lock = null;
                return "released";
            }
            case "semaphore": {
                InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(slot.client, w[2], Integer.parseInt(w[3]));
                long timeout = Long.parseLong(w[4]);
                Lease lease = slot.onThread(() -> semaphore.acquire(timeout, TimeUnit.MILLISECONDS));
                slot.lease = lease;
                return lease != null ? "acquired" : "timeout";
            }
            case "return": {
                Lease lease = slot.lease;
                slot.onThread(() -> {
                    lease.close();
                    return null;
                });
                slot.lease = null;
                return "returned";
            }
            case "latch": {
                LeaderLatch latch = new LeaderLatch(slot.client, w[2], w[3]);
                slot.latch = latch;
                slot.marker = w[4];
                slot.markerOwned = false;
                latch.addListener(new LeaderLatchListener() {
                    @Override
                    public void isLeader() {
                        try {
                            slot.client.create().withMode(CreateMode.EPHEMERAL).forPath(slot.marker);
                            slot.markerOwned = true;
                        } catch (KeeperException.NodeExistsException e) {
                            latchViolations.incrementAndGet();
                        } catch (Exception e) {
                            e.printStackTrace();
                            latchViolations.incrementAndGet();
                        }
                    }

                    @Override
                    public void notLeader() {}
                }, slot.thread);
                latch.start();
                return "started";
            }
            case "await":
                return slot.latch.await(Long.parseLong(w[2]), TimeUnit.MILLISECONDS) ? "leader" : "not-leader";
            case "has":
                return slot.latch.hasLeadership() ? "leader" : "not-leader";
            case "close":
                // On the slot's thread, after any isLeader callback queued before.
                slot.onThread(() -> {
                    if (slot.markerOwned) {
                        slot.client.delete().forPath(slot.marker);
                        slot.markerOwned = false;
                    }
                    slot.latch.close();
                    return null;
                });
                return "closed";
            default:
                throw new IllegalArgumentException("no command " + w[1]);
        }
    }

    static String rwStress(String path, String base, int writerRounds, int readerRounds) throws Exception {
        AtomicInteger violations = new AtomicInteger();
        AtomicInteger writes = new AtomicInteger();
        AtomicInteger reads = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread writer = new Thread(() -> {
            try (CuratorFramework client = newClient()) {
                InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, path);
                for (int i = 0; i < writerRounds; i++) {
                    rw.writeLock().acquire();
                    try {
                        violations.addAndGet(writerSection(client, base));
                        writes.incrementAndGet();
                    } finally {
                        rw.writeLock().release();
                    }
                }
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        Thread reader = new Thread(() -> {
            try (CuratorFramework client = newClient()) {
                InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, path);
                for (int i = 0; i < readerRounds; i++) {
                    rw.readLock().acquire();
                    try {
                        violations.addAndGet(readerSection(client, base, "java-" + i));
                        reads.incrementAndGet();
                    } finally {
                        rw.readLock().release();
                    }
                }
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        writer.start();
        reader.start();
        writer.join();
        reader.join();
        if (failure.get() != null) {
            failure.get().printStackTrace();
            return "error " + failure.get();
        }
        return "violations=" + violations.get() + " writes=" + writes.get() + " reads=" + reads.get();
    }

    static String semStress(String path, int max, String base, int threads, int rounds) throws Exception {
        AtomicInteger violations = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        AtomicInteger leases = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread[] all = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            String name = "java-" + t + "-";
            all[t] = new Thread(() -> {
                try (CuratorFramework client = newClient()) {
                    InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, max);
                    for (int i = 0; i < rounds; i++) {
                        Lease lease = semaphore.acquire();
                        try {
                            String own = base + "/holders/" + name + i;
                            client.create().withMode(CreateMode.EPHEMERAL).forPath(own);
                            int inside = client.getChildren().forPath(base + "/holders").size();
                            most.accumulateAndGet(inside, Math::max);
                            if (inside > max) {
                                violations.incrementAndGet();
                            }
                            Thread.sleep(2);
                            client.delete().forPath(own);
                            leases.incrementAndGet();
                        } finally {
                            lease.close();
                        }
                    }
                } catch (Throwable e) {
                    failure.set(e);
                }
            });
            all[t].start();
        }
        for (Thread thread : all) {
            thread.join();
        }
        if (failure.get() != null) {
            failure.get().printStackTrace();
            return "error " + failure.get();
        }
        return "violations=" + violations.get() + " most=" + most.get() + " leases=" + leases.get();
    }

    static int writerSection(CuratorFramework client, String base) throws Exception {
        int violations = 0;
        String marker = base + "/writer";
        try {
            client.create().withMode(CreateMode.EPHEMERAL).forPath(marker);
        } catch (KeeperException.NodeExistsException e) {
            violations++;
        }
        if (!client.getChildren().forPath(base + "/readers").isEmpty()) {
            violations++;
        }
        String counter = base + "/counter";
        long value = Long.parseLong(new String(client.getData().forPath(counter), StandardCharsets.UTF_8));
        Thread.sleep(2);
        client.setData().forPath(counter, Long.toString(value + 1).getBytes(StandardCharsets.UTF_8));
        try {
            client.delete().forPath(marker);
        } catch (KeeperException.NoNodeException e) {
            violations++;
        }
        return violations;
    }

    static int readerSection(CuratorFramework client, String base, String name) throws Exception {
        int violations = 0;
        String own = base + "/readers/" + name;
        String writer = base + "/writer";
        String counter = base + "/counter";
        client.create().withMode(CreateMode.EPHEMERAL).forPath(own);
        if (client.checkExists().forPath(writer) != null) {
            violations++;
        }
        byte[] before = client.getData().forPath(counter);
        Thread.sleep(3);
        byte[] after = client.getData().forPath(counter);
        if (!java.util.Arrays.equals(before, after)) {
            violations++;
        }
        if (client.checkExists().forPath(writer) != null) {
            violations++;
        }
        client.delete().forPath(own);
        return violations;
    }
}
