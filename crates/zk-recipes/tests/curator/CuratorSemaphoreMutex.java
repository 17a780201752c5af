// A contender for the semaphore mutex interop test (crates/zk-recipes/tests/multi_lock_interop.rs,
// test `curator_and_rust_semaphore_mutexes_alternate_without_overlap`): takes Apache Curator's
// InterProcessSemaphoreMutex on a path `rounds` times, and inside the critical section checks
// mutual exclusion the same way the Rust contenders do:
//   - it creates the ephemeral node <marker>; NodeExists means another holder is inside;
//   - it increments the counter in <counter> with a read-then-unconditional-write (a lost
//     update shows an overlap);
//   - it deletes <marker>.
// Usage: java CuratorSemaphoreMutex <connect string> <lock path> <marker path> <counter path> <rounds>
// Prints "violations=<n>" and exits 0; exits 1 on any failure.

import java.nio.charset.StandardCharsets;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;

public class CuratorSemaphoreMutex {
    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String lockPath = args[1];
        String marker = args[2];
        String counter = args[3];
        int rounds = Integer.parseInt(args[4]);
        int violations = 0;
        try (CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(10000)
                .connectionTimeoutMs(10000)
                .retryPolicy(new RetryNTimes(10, 100))
                .build()) {
            client.start();
            client.blockUntilConnected();
            InterProcessSemaphoreMutex mutex = new InterProcessSemaphoreMutex(client, lockPath);
            for (int i = 0; i < rounds; i++) {
                mutex.acquire();
                try {
                    try {
                        client.create().withMode(CreateMode.EPHEMERAL).forPath(marker);
                    } catch (KeeperException.NodeExistsException e) {
                        violations++;
                    }
                    byte[] data = client.getData().forPath(counter);
                    long value = Long.parseLong(new String(data, StandardCharsets.UTF_8));
                    client.setData().forPath(counter,
                            Long.toString(value + 1).getBytes(StandardCharsets.UTF_8));
                    try {
                        client.delete().forPath(marker);
                    } catch (KeeperException.NoNodeException e) {
                        violations++;
                    }
                } finally {
                    mutex.release();
                }
            }
        } catch (Exception e) {
            e.printStackTrace();
            System.exit(1);
        }
        System.out.println("violations=" + violations);
    }
}
