import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.queue.DistributedDelayQueue;
import org.apache.curator.framework.recipes.queue.DistributedIdQueue;
import org.apache.curator.framework.recipes.queue.DistributedPriorityQueue;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryForever;

/**
 * Curator's queues (DistributedQueue, DistributedIdQueue, DistributedPriorityQueue,
 * DistributedDelayQueue) for the interop tests of zk_recipes::curator_queue. Items are UTF-8
 * strings. Usage (kind: fifo, id, priority, delay):
 *
 *   CuratorQueue <connect> produce <kind> <path> <count> <tag>
 *     puts items "<tag>-<i>" for i in 0..count, in the foreground; id "i<i>", priority
 *     priority(i), due now + delay(i) ms; then prints "produced <count>" and exits.
 *   CuratorQueue <connect> consume <kind> <path> <lockPath|-> <hangAfter|-> <sessionMs>
 *     consumes with lockPath (lock-safe) or without, its session asking for sessionMs; prints
 *     "ready", then "item <text>" per item as it consumes it (one consumer thread: Curator's
 *     default executor runs consumeMessage in its loop). With hangAfter = n, it consumes n items, then prints
 *     "holding <text>" for the next and blocks inside consumeMessage (to be killed). Quits
 *     on "quit" on stdin, closing the queue and the session.
 *   CuratorQueue <connect> remove <path> <id>
 *     DistributedIdQueue.remove(id) (producer only); prints "removed <n>".
 *   CuratorQueue <connect> bench <path> <n> <warmup> <lockPath|->
 *     for benches/src/bin/queues.rs: a warm-up round of <warmup> items (on <path>-warmup),
 *     then the timed one: puts n items one after the other (foreground), then starts a
 *     consumer (with lockPath or not) and waits until it consumed all n; prints
 *     "bench put_ns=<ns> take_ns=<ns>" (the take timed from the consumer's start).
 *
 * The test side computes the same priority(i) and delay(i).
 */
public class CuratorQueue {
    static int priority(int i) {
        return (int) (((long) i * 7919L) % 201L) - 100;
    }

    static long delay(int i) {
        return (i % 4) * 250L;
    }

    static final QueueSerializer<String> UTF8 = new QueueSerializer<String>() {
        public byte[] serialize(String item) {
            return item.getBytes(StandardCharsets.UTF_8);
        }

        public String deserialize(byte[] bytes) {
            return new String(bytes, StandardCharsets.UTF_8);
        }
    };

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String command = args[1];
        int sessionMs = command.equals("consume") ? Integer.parseInt(args[6]) : 30000;
        CuratorFramework client = CuratorFrameworkFactory.builder()
            .connectString(connect)
            .sessionTimeoutMs(sessionMs)
            .connectionTimeoutMs(15000)
            .retryPolicy(new RetryForever(100))
            .build();
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.out.println("error: not connected");
            System.exit(2);
        }
        switch (command) {
            case "produce":
                produce(client, args[2], args[3], Integer.parseInt(args[4]), args[5]);
                break;
            case "consume":
                consume(client, args[2], args[3], args[4], args[5]);
                break;
            case "bench": {
                String lock = args[5].equals("-") ? null : args[5];
                int warmup = Integer.parseInt(args[4]);
                if (warmup > 0) {
                    bench(client, args[2] + "-warmup", warmup, lock == null ? null : lock + "-warmup");
                }
                long[] ns = bench(client, args[2], Integer.parseInt(args[3]), lock);
                System.out.println("bench put_ns=" + ns[0] + " take_ns=" + ns[1]);
                break;
            }
            case "remove":
                DistributedIdQueue<String> q = QueueBuilder.builder(client, null, UTF8, args[2])
                    .putInBackground(false).buildIdQueue();
                q.start();
                System.out.println("removed " + q.remove(args[3]));
                q.close();
                break;
            default:
                System.out.println("error: unknown command " + command);
        }
        client.close();
        System.exit(0);
    }

    static long[] bench(CuratorFramework client, String path, int n, String lockPath)
        throws Exception {
        DistributedQueue<String> producer =
            QueueBuilder.builder(client, null, UTF8, path).putInBackground(false).buildQueue();
        producer.start();
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) producer.put("b-" + i);
        long putNs = System.nanoTime() - t0;
        producer.close();
        final CountDownLatch all = new CountDownLatch(n);
        QueueConsumer<String> consumer = new QueueConsumer<String>() {
            public void consumeMessage(String message) {
                all.countDown();
            }

            public void stateChanged(CuratorFramework c, ConnectionState s) {}
        };
        QueueBuilder<String> builder = QueueBuilder.builder(client, consumer, UTF8, path);
        if (lockPath != null) builder = builder.lockPath(lockPath);
        DistributedQueue<String> queue = builder.buildQueue();
        long t1 = System.nanoTime();
        queue.start();
        if (!all.await(600, TimeUnit.SECONDS)) throw new IllegalStateException("take timed out");
        long takeNs = System.nanoTime() - t1;
        queue.close();
        return new long[] {putNs, takeNs};
    }

    static void produce(CuratorFramework client, String kind, String path, int count, String tag)
        throws Exception {
        QueueBuilder<String> builder =
            QueueBuilder.builder(client, null, UTF8, path).putInBackground(false);
        long now = System.currentTimeMillis();
        switch (kind) {
            case "fifo": {
                DistributedQueue<String> q = builder.buildQueue();
                q.start();
                for (int i = 0; i < count; i++) q.put(tag + "-" + i);
                q.close();
                break;
            }
            case "id": {
                DistributedIdQueue<String> q = builder.buildIdQueue();
                q.start();
                for (int i = 0; i < count; i++) q.put(tag + "-" + i, "i" + i);
                q.close();
                break;
            }
            case "priority": {
                DistributedPriorityQueue<String> q = builder.buildPriorityQueue(0);
                q.start();
                for (int i = 0; i < count; i++) q.put(tag + "-" + i, priority(i));
                q.close();
                break;
            }
            case "delay": {
                DistributedDelayQueue<String> q = builder.buildDelayQueue();
                q.start();
                for (int i = 0; i < count; i++) q.put(tag + "-" + i, now + delay(i));
                q.close();
                break;
            }
            default:
                throw new IllegalArgumentException(kind);
        }
        System.out.println("produced " + count);
    }

    static void consume(CuratorFramework client, String kind, String path, String lockPath,
        String hangAfter) throws Exception {
        final int hang = hangAfter.equals("-") ? -1 : Integer.parseInt(hangAfter);
        final int[] consumed = {0};
        final CountDownLatch forever = new CountDownLatch(1);
        QueueConsumer<String> consumer = new QueueConsumer<String>() {
            public void consumeMessage(String message) throws Exception {
                synchronized (consumed) {
                    if (consumed[0] == hang) {
                        System.out.println("holding " + message);
                        forever.await();
                    }
                    consumed[0]++;
                    System.out.println("item " + message);
                }
            }

            public void stateChanged(CuratorFramework c, ConnectionState s) {}
        };
        QueueBuilder<String> builder = QueueBuilder.builder(client, consumer, UTF8, path);
        if (!lockPath.equals("-")) builder = builder.lockPath(lockPath);
        java.io.Closeable queue;
        switch (kind) {
            case "fifo": {
                DistributedQueue<String> q = builder.buildQueue();
                q.start();
                queue = q;
                break;
            }
            case "id": {
                DistributedIdQueue<String> q = builder.buildIdQueue();
                q.start();
                queue = q;
                break;
            }
            case "priority": {
                DistributedPriorityQueue<String> q = builder.buildPriorityQueue(0);
                q.start();
                queue = q;
                break;
            }
            case "delay": {
                DistributedDelayQueue<String> q = builder.buildDelayQueue();
                q.start();
                queue = q;
                break;
            }
            default:
                throw new IllegalArgumentException(kind);
        }
        System.out.println("ready");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null && !line.equals("quit")) {}
        queue.close();
    }
}
