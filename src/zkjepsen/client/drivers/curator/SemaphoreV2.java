package zkjepsen.curator;

import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;

/**
 * InterProcessSemaphoreV2 as-is, with `permits` leases (the semaphore workload's param, default
 * 2), as its documentation shows: acquire a Lease, close it to give it back. Curator keeps no
 * belief of its own for a semaphore: the application holds a Lease, so the belief is "a Lease
 * not yet returned" (nothing tells the holder its lease node went with its session).
 */
final class SemaphoreV2 implements Subject {
    private final InterProcessSemaphoreV2 semaphore;
    private final String path;
    private Lease lease;

    SemaphoreV2(CuratorFramework client, String path, int permits) {
        this.semaphore = new InterProcessSemaphoreV2(client, path, permits);
        this.path = path;
    }

    @Override
    public String acquire(long timeoutMs) throws Exception {
        Lease got = semaphore.acquire(timeoutMs, TimeUnit.MILLISECONDS);
        if (got == null) {
            return null;
        }
        lease = got;
        // the lease's node, under the semaphore's leases directory (InterProcessSemaphoreV2)
        return path + "/leases/" + lease.getNodeName();
    }

    @Override
    public void release() throws Exception {
        if (lease == null) {
            throw new IllegalMonitorStateException("no lease");
        }
        Lease giving = lease;
        lease = null;
        giving.close(); // semaphore.returnLease: deletes the node, or throws (unknown)
    }

    @Override
    public boolean holding() {
        return lease != null;
    }

    @Override
    public void close() {
    }
}
