// The ordering oracle of the unit test `ordering_and_grants_equal_curators`
// (crates/zk-recipes/src/lock.rs): Apache Curator's own code sorts a listing and decides who
// holds. Nothing connects to ZooKeeper (the client is never started); the recipes' lock names,
// sorters, drivers and lease counts are read from Curator's objects, not restated here.
//
// stdin, one case per line:  <recipe>\t<own node>\t<child>\t<child>...
//   recipe: mutex (InterProcessMutex), read / write (InterProcessReadWriteLock's sides),
//           latch (LeaderLatch)
// stdout, one line per case: <sorted child>\t...\t|\t<true|false>\t<node to watch or ->
//   locks: LockInternals.getSortedChildren, then the driver's getsTheLock;
//   latch: LockInternals.getSortedChildren with LeaderLatch's sorter; it leads at index 0 and
//          watches the node before its own (LeaderLatch.checkLeadership).

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.LockInternals;
import org.apache.curator.framework.recipes.locks.LockInternalsDriver;
import org.apache.curator.framework.recipes.locks.LockInternalsSorter;
import org.apache.curator.framework.recipes.locks.PredicateResults;
import org.apache.curator.retry.RetryOneTime;

public class CuratorOrder {
    static Object field(Object target, Class<?> cls, String name) throws Exception {
        Field f = cls.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(target);
    }

    static final class Recipe {
        final String lockName;
        final LockInternalsSorter sorter;
        final LockInternalsDriver driver; // null: the latch
        final int maxLeases;

        Recipe(String lockName, LockInternalsSorter sorter, LockInternalsDriver driver, int maxLeases) {
            this.lockName = lockName;
            this.sorter = sorter;
            this.driver = driver;
            this.maxLeases = maxLeases;
        }
    }

    static Recipe of(InterProcessMutex mutex) throws Exception {
        Object internals = field(mutex, InterProcessMutex.class, "internals");
        LockInternalsDriver driver = (LockInternalsDriver) field(internals, LockInternals.class, "driver");
        return new Recipe(
                (String) field(internals, LockInternals.class, "lockName"),
                driver,
                driver,
                (Integer) field(internals, LockInternals.class, "maxLeases"));
    }

    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient("127.0.0.1:1", new RetryOneTime(1));
        InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, "/oracle/rw");
        Map<String, Recipe> recipes = new HashMap<>();
        recipes.put("mutex", of(new InterProcessMutex(client, "/oracle/mutex")));
        recipes.put("read", of(rw.readLock()));
        recipes.put("write", of(rw.writeLock()));
        recipes.put("latch", new Recipe(
                (String) field(null, LeaderLatch.class, "LOCK_NAME"),
                (LockInternalsSorter) field(null, LeaderLatch.class, "sorter"),
                null,
                1));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            String[] w = line.split("\t", -1);
            Recipe recipe = recipes.get(w[0]);
            String own = w[1];
            List<String> children = new ArrayList<>(Arrays.asList(w).subList(2, w.length));
            List<String> sorted = LockInternals.getSortedChildren(recipe.lockName, recipe.sorter, children);
            boolean holds;
            String watch;
            if (recipe.driver != null) {
                PredicateResults result = recipe.driver.getsTheLock(client, sorted, own, recipe.maxLeases);
                holds = result.getsTheLock();
                watch = result.getPathToWatch();
            } else {
                int index = sorted.indexOf(own);
                holds = index == 0;
                watch = index > 0 ? sorted.get(index - 1) : null;
            }
            out.append(String.join("\t", sorted)).append("\t|\t").append(holds).append('\t')
                    .append(watch == null ? "-" : watch).append('\n');
        }
        System.out.print(out);
        System.out.flush();
        System.exit(0);
    }
}
