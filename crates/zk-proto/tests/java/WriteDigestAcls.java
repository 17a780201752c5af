// Writes two nodes with digest ACLs through the real ZooKeeper Java client (3.8), for the
// tests of crates/zk-proto/tests/java_strings.rs.
//
// Usage: java WriteDigestAcls.java <connect string> <explicit path> <auth path> <user hex>
//        <password hex>
// The user and the password are the hex of their UTF-8 bytes: the JVM decodes the command line
// with the platform charset, which depends on the locale; hex keeps it out of the way.
//
// Creates
//   <explicit path>  with ACL [ALL for digest:<generateDigest("user:password")>,
//                    READ for world:anyone]: the client serializes the id string itself;
//   <auth path>      after addAuthInfo("digest", UTF-8 bytes of "user:password"), with ACL
//                    [ALL for auth:"", READ for world:anyone]: the server puts in the digest id
//                    it derives from the session's credentials.
// Prints "digest=<hex of the UTF-8 bytes of generateDigest("user:password")>" and exits 0;
// any failure is an exception (exit 1).

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.server.auth.DigestAuthenticationProvider;

public class WriteDigestAcls {
    public static void main(String[] args) throws Exception {
        String connect = args[0];
        String explicitPath = args[1];
        String authPath = args[2];
        String credentials = fromHex(args[3]) + ":" + fromHex(args[4]);
        String digest = DigestAuthenticationProvider.generateDigest(credentials);

        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(connect, 10000, event -> {
            if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        try {
            if (!connected.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("not connected to " + connect + " within 30 s");
            }
            zk.create(explicitPath, new byte[0], acl(new Id("digest", digest)),
                    CreateMode.PERSISTENT);
            zk.addAuthInfo("digest", credentials.getBytes(StandardCharsets.UTF_8));
            zk.create(authPath, new byte[0], acl(ZooDefs.Ids.AUTH_IDS), CreateMode.PERSISTENT);
        } finally {
            zk.close();
        }
        System.out.println("digest=" + toHex(digest.getBytes(StandardCharsets.UTF_8)));
    }

    private static List<ACL> acl(Id owner) {
        List<ACL> acl = new ArrayList<>();
        acl.add(new ACL(ZooDefs.Perms.ALL, owner));
        acl.add(new ACL(ZooDefs.Perms.READ, ZooDefs.Ids.ANYONE_ID_UNSAFE));
        return acl;
    }

    private static String fromHex(String hex) {
        byte[] bytes = new byte[hex.length() / 2];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        }
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static String toHex(byte[] bytes) {
        StringBuilder out = new StringBuilder();
        for (byte b : bytes) {
            out.append(String.format("%02x", b & 0xff));
        }
        return out.toString();
    }
}
