// The partition suite's Curator workers (partitions/src/workload/curator.rs): one JVM per side
// of clients, with <slots> threads, each with its own CuratorFramework (its own session),
// taking turns at Curator's InterProcessMutex on <path>, or standing in Curator's LeaderLatch
// on <path>. A slot that holds (or leads) reads its fencing token (the czxid of the participant
// node with the lowest sequence number: its own) and reports what it does on standard output,
// one line each, which the Rust side turns into fenced writes and believed-held intervals:
//
//   <slot> H <token> <ns>  it holds (leads) from <ns>, with that token
//   <slot> W <token>       it writes to the protected resource with that token
//   <slot> E <0|1> <ns>    it no longer holds from <ns>: 1 when Curator told it (the connection
//                          state left CONNECTED / RECONNECTED, or the latch lost the
//                          leadership), 0 when it released after its writes
//
// <ns> is System.nanoTime(), which on Linux reads the system-wide monotonic clock
// (CLOCK_MONOTONIC) that the Rust side reads too: a belief is timed where it is held, not where
// its line is read.
//
// A slot writes every 100 ms while Curator's connection state is connected (the standard
// ConnectionStateListener pattern: SUSPENDED and LOST stop the work), <writes> times, then
// releases (the latch: closes it and stands again). The program ends when its standard input
// closes.
//
//   java -cp <Curator> CuratorFencedWorker.java <connect> <mutex|latch> <path> <slots> <writes> <session ms>

import java.io.PrintStream;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryForever;
import org.apache.zookeeper.data.Stat;

public class CuratorFencedWorker {
    static final PrintStream OUT = System.out;

    static synchronized void say(int slot, String what) {
        OUT.println(slot + " " + what);
        OUT.flush();
    }

    // The sequence number at the end of a participant node's name.
    static long sequence(String node) {
        int end = node.length();
        int start = end;
        while (start > 0 && Character.isDigit(node.charAt(start - 1))) {
            start--;
        }
        return start == end ? Long.MAX_VALUE : Long.parseLong(node.substring(start, end));
    }

    // The czxid of the participant with the lowest sequence number (the holder's), or -1.
    static long firstToken(CuratorFramework client, String path) throws Exception {
        List<String> children = client.getChildren().forPath(path);
        String first = null;
        long lowest = Long.MAX_VALUE;
        for (String child : children) {
            long seq = sequence(child);
            if (seq < lowest) {
                lowest = seq;
                first = child;
            }
        }
        if (first == null) {
            return -1;
        }
        Stat stat = client.checkExists().forPath(path + "/" + first);
        return stat == null ? -1 : stat.getCzxid();
    }

    static boolean holding(AtomicBoolean connected, LeaderLatch latch) {
        return connected.get() && (latch == null || latch.hasLeadership());
    }

    // Writes while it holds, `writes` times; returns whether Curator ended the hold.
    static boolean work(int slot, long token, int writes, AtomicBoolean connected, LeaderLatch latch)
            throws InterruptedException {
        for (int i = 0; i < writes; i++) {
            if (!holding(connected, latch)) {
                return true;
            }
            say(slot, "W " + token);
            for (int t = 0; t < 10; t++) {
                Thread.sleep(10);
                if (!holding(connected, latch)) {
                    return true;
                }
            }
        }
        return false;
    }

    static void run(String connect, String kind, String path, int slot, int writes, int sessionMs) {
        try {
            CuratorFramework client = CuratorFrameworkFactory.builder()
                    .connectString(connect)
                    .sessionTimeoutMs(sessionMs)
                    .connectionTimeoutMs(sessionMs)
                    .retryPolicy(new RetryForever(100))
                    .build();
            AtomicBoolean connected = new AtomicBoolean(false);
            client.getConnectionStateListenable()
                    .addListener((c, state) -> connected.set(state.isConnected()));
            client.start();
            client.blockUntilConnected();
            connected.set(true);
            InterProcessMutex mutex = new InterProcessMutex(client, path);
            while (true) {
                LeaderLatch latch = null;
                try {
                    if (kind.equals("latch")) {
                        latch = new LeaderLatch(client, path, Integer.toString(slot));
                        latch.start();
                        if (!latch.await(10, TimeUnit.SECONDS)) {
                            latch.close();
                            continue;
                        }
                    } else if (!mutex.acquire(2, TimeUnit.SECONDS)) {
                        continue;
                    }
                } catch (Exception e) {
                    Thread.sleep(20);
                    continue;
                }
                long token;
                try {
                    token = firstToken(client, path);
                } catch (Exception e) {
                    token = -1;
                }
                if (token >= 0) {
                    say(slot, "H " + token + " " + System.nanoTime());
                    boolean byCurator = work(slot, token, writes, connected, latch);
                    say(slot, "E " + (byCurator ? 1 : 0) + " " + System.nanoTime());
                }
                try {
                    if (latch != null) {
                        latch.close();
                    } else {
                        mutex.release();
                    }
                } catch (Exception e) {
                    // The session is gone: so is the node.
                }
            }
        } catch (Exception e) {
            say(slot, "X " + e);
        }
    }

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String kind = args[1];
        String path = args[2];
        int slots = Integer.parseInt(args[3]);
        int writes = Integer.parseInt(args[4]);
        int sessionMs = Integer.parseInt(args[5]);
        for (int slot = 0; slot < slots; slot++) {
            int s = slot;
            Thread thread = new Thread(() -> run(connect, kind, path, s, writes, sessionMs));
            thread.setDaemon(true);
            thread.start();
        }
        while (System.in.read() != -1) {
            // Until the Rust side closes our standard input.
        }
        System.exit(0);
    }
}
