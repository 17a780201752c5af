import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.retry.RetryForever;

/**
 * Curator's DistributedBarrier and DistributedDoubleBarrier, one session, driven line by line
 * on stdin, for the barrier interop tests of zk_recipes (tests/curator_barrier.rs). Usage:
 * CuratorBarrier <connect> <path>; prints "ready", then one reply per command:
 *
 *   set       DistributedBarrier.setBarrier()                   -> "ok"
 *   remove    DistributedBarrier.removeBarrier()                -> "ok"
 *   wait      DistributedBarrier.waitOnBarrier(60 s)            -> "waited <true|false>"
 *   enter <n> DistributedDoubleBarrier(path, n).enter(60 s)     -> "entered <true|false>"
 *   leave     the same barrier's leave(60 s)                    -> "left <true|false>"
 *   quit      closes the session and exits
 *
 * An exception is replied as "error <exception>".
 */
public class CuratorBarrier {
    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.builder()
            .connectString(args[0])
            .sessionTimeoutMs(30000)
            .connectionTimeoutMs(15000)
            .retryPolicy(new RetryForever(100))
            .build();
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.out.println("error: not connected");
            System.exit(2);
        }
        String path = args[1];
        DistributedBarrier barrier = new DistributedBarrier(client, path);
        DistributedDoubleBarrier doubleBarrier = null;
        System.out.println("ready");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null && !line.equals("quit")) {
            String[] words = line.split(" ");
            try {
                switch (words[0]) {
                    case "set":
                        barrier.setBarrier();
                        System.out.println("ok");
                        break;
                    case "remove":
                        barrier.removeBarrier();
                        System.out.println("ok");
                        break;
                    case "wait":
                        System.out.println("waited " + barrier.waitOnBarrier(60, TimeUnit.SECONDS));
                        break;
                    case "enter":
                        doubleBarrier =
                            new DistributedDoubleBarrier(client, path, Integer.parseInt(words[1]));
                        System.out.println("entered " + doubleBarrier.enter(60, TimeUnit.SECONDS));
                        break;
                    case "leave":
                        System.out.println("left " + doubleBarrier.leave(60, TimeUnit.SECONDS));
                        break;
                    default:
                        System.out.println("error unknown command " + line);
                }
            } catch (Exception e) {
                System.out.println("error " + e);
            }
        }
        client.close();
        System.exit(0);
    }
}
