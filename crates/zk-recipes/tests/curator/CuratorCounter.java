// An incrementer for the counter interop tests (crates/zk-recipes/tests/counter.rs): updates
// Apache Curator's DistributedAtomicLong or SharedCount on a path while the Rust side updates
// the same node.
//
// Usage: java CuratorCounter <connect string> atomic|shared <path> <rounds>
// Prints "ready" once connected and its counter made, waits for a line "go" on stdin, then:
//   atomic: <rounds> times DistributedAtomicLong.increment() (RetryNTimes(3, 1) for the
//           optimistic tries, so that some increments may give up); counts the ones whose
//           AtomicValue.succeeded();
//   shared: <rounds> times adds 1 to SharedCount (seed 0): trySetCount(getVersionedValue(),
//           value + 1) until it wins (a lost try refreshes the count);
// and prints "succeeded=<n>" and exits 0; exits 1 on any failure.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.retry.RetryNTimes;

public class CuratorCounter {
    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String kind = args[1];
        String path = args[2];
        int rounds = Integer.parseInt(args[3]);
        int succeeded = 0;
        try (CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(10000)
                .connectionTimeoutMs(10000)
                .retryPolicy(new RetryNTimes(10, 100))
                .build()) {
            client.start();
            client.blockUntilConnected();
            if (kind.equals("atomic")) {
                DistributedAtomicLong counter = new DistributedAtomicLong(client, path, new RetryNTimes(3, 1));
                counter.get();
                awaitGo();
                for (int i = 0; i < rounds; i++) {
                    AtomicValue<Long> result = counter.increment();
                    if (result.succeeded()) {
                        succeeded++;
                    }
                }
            } else if (kind.equals("shared")) {
                try (SharedCount count = new SharedCount(client, path, 0)) {
                    count.start();
                    awaitGo();
                    for (int i = 0; i < rounds; i++) {
                        while (true) {
                            VersionedValue<Integer> seen = count.getVersionedValue();
                            if (count.trySetCount(seen, seen.getValue() + 1)) {
                                break;
                            }
                        }
                        succeeded++;
                    }
                }
            } else {
                throw new IllegalArgumentException("no kind " + kind);
            }
        } catch (Exception e) {
            e.printStackTrace();
            System.exit(1);
        }
        System.out.println("succeeded=" + succeeded);
    }

    // Prints "ready" (everything is loaded and connected) and waits for "go".
    static void awaitGo() throws Exception {
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        if (!"go".equals(in.readLine())) {
            throw new IllegalStateException("expected go");
        }
    }
}
