package zkjepsen.curator;

import java.lang.reflect.Field;
import java.util.Collection;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.curator.framework.api.transaction.OperationType;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.utils.ZKPaths;

/**
 * Curator 2.7 (Debian bullseye) has no transactionOp()/CuratorOp (Curator 3.0 added them), so
 * for that suite only the driver's fenced write (check the own lock node, then setData, in one
 * multi) uses the 2.x fluent transaction instead. Same ZooKeeper multi on the wire. Nor has
 * it Lease.getNodeName() or LeaderLatch.getOurPath(): the driver only reads them for the
 * token, so here they are read from the recipes' own fields (read, never written).
 */
final class Compat {
    private Compat() {
    }

    static int fencedSetData(CuratorFramework client, String fence, String path, byte[] bytes,
            int version) throws Exception {
        Collection<CuratorTransactionResult> res = client.inTransaction()
                .check().forPath(fence).and()
                .setData().withVersion(version).forPath(path, bytes).and()
                .commit();
        for (CuratorTransactionResult r : res) {
            if (r.getType() == OperationType.SET_DATA) {
                return r.getResultStat().getVersion();
            }
        }
        throw new IllegalStateException("the transaction returned no setData result");
    }

    /** The lease's node name: 2.7's lease is an anonymous class holding its full path. */
    static String nodeName(Lease lease) throws ReflectiveOperationException {
        Field f = lease.getClass().getDeclaredField("val$path");
        f.setAccessible(true);
        return ZKPaths.getNodeFromPath((String) f.get(lease));
    }

    /** The latch's own node (null before it made one). */
    static String ourPath(LeaderLatch latch) {
        try {
            Field f = LeaderLatch.class.getDeclaredField("ourPath");
            f.setAccessible(true);
            Object v = f.get(latch);
            return v instanceof AtomicReference ? (String) ((AtomicReference<?>) v).get()
                    : (String) v;
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }
}
