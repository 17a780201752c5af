// A holder of Apache Curator's PersistentTtlNode for the TTL node fault tests
// (tests/tests/fault_recipes/ttl.rs): starts the node and keeps it until killed.
// Usage: java CuratorTtlNode <connect string> <path> <ttl ms> <data>
// Prints "started" once the node was created (waitForInitialCreate), then runs until killed;
// exits 1 on any failure.

import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.nodes.PersistentTtlNode;
import org.apache.curator.retry.RetryNTimes;

public class CuratorTtlNode {
    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String path = args[1];
        long ttlMs = Long.parseLong(args[2]);
        byte[] data = args[3].getBytes(StandardCharsets.UTF_8);
        try {
            CuratorFramework client = CuratorFrameworkFactory.builder()
                    .connectString(connect)
                    .sessionTimeoutMs(10000)
                    .connectionTimeoutMs(10000)
                    .retryPolicy(new RetryNTimes(10, 100))
                    .build();
            client.start();
            client.blockUntilConnected();
            PersistentTtlNode node = new PersistentTtlNode(client, path, ttlMs, data);
            node.start();
            if (!node.waitForInitialCreate(20, TimeUnit.SECONDS)) {
                throw new IllegalStateException("not created within 20 s");
            }
            System.out.println("started");
            System.out.flush();
            Thread.sleep(Long.MAX_VALUE);
        } catch (Exception e) {
            e.printStackTrace();
            System.exit(1);
        }
    }
}
