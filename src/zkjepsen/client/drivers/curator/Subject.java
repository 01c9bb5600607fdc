package zkjepsen.curator;

import java.lang.reflect.Field;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.ConnectionStateListener;

/**
 * The lock objects under test: Curator's recipes used exactly as its documentation shows. One
 * Subject serves acquisitions until an unknown outcome; then the driver makes a fresh one.
 */
interface Subject {
    /** The own lock node once acquired; null when not acquired within the timeout (certainly
     * not holding). An exception means the outcome is unknown. */
    String acquire(long timeoutMs) throws Exception;

    /** Give it up. IllegalMonitorStateException: this process did not hold it. */
    void release() throws Exception;

    /** The application's belief. */
    boolean holding();

    /** Drop listeners (never another client's node). */
    void close();

    /** The side of the lock the next requests are for (the rwlock workload's `mode`: read or
     * write); null when the request names none. Only a read-write lock has sides. */
    default void select(String mode) {
    }

    /** The driver's modes: the recipe each one runs. */
    List<String> MODES = List.of("mutex", "careful", "semaphore", "latch", "semaphore-v2",
            "rwlock", "selector", "selector-tolerant");

    static Subject make(String mode, CuratorFramework client, String path, String id,
            Map<?, ?> params) {
        switch (mode) {
            case "mutex": return new Mutex(client, path, false);
            case "careful": return new Mutex(client, path, true);
            case "semaphore": return new SemaphoreMutex(client, path);
            case "latch": return new Latch(client, path, id);
            case "semaphore-v2": return new SemaphoreV2(client, path, permits(params));
            case "rwlock": return new ReadWrite(client, path);
            case "selector": return new Selector(client, path, id, false);
            case "selector-tolerant": return new Selector(client, path, id, true);
            default: throw new IllegalArgumentException("unknown mode " + mode + " " + MODES);
        }
    }

    /** The semaphore workload's `permits` (default 2), as a number or its text. */
    static int permits(Map<?, ?> params) {
        Object v = params.get("permits");
        if (v instanceof Number) {
            return ((Number) v).intValue();
        }
        return v == null ? 2 : Integer.parseInt(String.valueOf(v).trim());
    }
}

/** InterProcessMutex as-is. `careful`: the application also registers a
 * ConnectionStateListener, as Curator's docs ask, and abandons its critical section at the
 * first SUSPENDED or LOST after the acquire began (it cannot know whether the session lives). */
final class Mutex implements Subject {
    /** The only addition is reading the protected lock path, which Curator keeps for itself. */
    private static final class Exposed extends InterProcessMutex {
        Exposed(CuratorFramework client, String path) {
            super(client, path);
        }

        String node() {
            return getLockPath();
        }
    }

    private final Exposed mutex;
    private final CuratorFramework client;
    private final ConnectionStateListener listener;
    private volatile boolean trouble;

    Mutex(CuratorFramework client, String path, boolean careful) {
        this.client = client;
        this.mutex = new Exposed(client, path);
        if (careful) {
            listener = (c, state) -> {
                if (state == ConnectionState.SUSPENDED || state == ConnectionState.LOST) {
                    trouble = true;
                }
            };
            client.getConnectionStateListenable().addListener(listener);
        } else {
            listener = null;
        }
    }

    @Override
    public String acquire(long timeoutMs) throws Exception {
        trouble = false;
        if (!mutex.acquire(timeoutMs, TimeUnit.MILLISECONDS)) {
            return null;
        }
        return mutex.node();
    }

    @Override
    public void release() throws Exception {
        mutex.release();
    }

    @Override
    public boolean holding() {
        return mutex.isAcquiredInThisProcess() && !(listener != null && trouble);
    }

    @Override
    public void close() {
        if (listener != null) {
            client.getConnectionStateListenable().removeListener(listener);
        }
    }
}

/** InterProcessSemaphoreMutex as-is (a non-reentrant mutex built on a one-lease semaphore). */
final class SemaphoreMutex implements Subject {
    private final InterProcessSemaphoreMutex mutex;
    private final String path;

    SemaphoreMutex(CuratorFramework client, String path) {
        this.mutex = new InterProcessSemaphoreMutex(client, path);
        this.path = path;
    }

    @Override
    public String acquire(long timeoutMs) throws Exception {
        if (!mutex.acquire(timeoutMs, TimeUnit.MILLISECONDS)) {
            return null;
        }
        return leaseNode();
    }

    /** The lease node is Curator's private state; read it (only read it) for the token. Its
     * name is relative to the semaphore's leases directory (InterProcessSemaphoreV2). */
    private String leaseNode() {
        try {
            Field f = InterProcessSemaphoreMutex.class.getDeclaredField("lease");
            f.setAccessible(true);
            Lease lease = (Lease) f.get(mutex);
            return lease == null ? null : path + "/leases/" + lease.getNodeName();
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    @Override
    public void release() throws Exception {
        if (!mutex.isAcquiredInThisProcess()) {
            throw new IllegalMonitorStateException("not acquired");
        }
        mutex.release();
    }

    @Override
    public boolean holding() {
        return mutex.isAcquiredInThisProcess();
    }

    @Override
    public void close() {
    }
}

/** LeaderLatch for the election workload: acquire = start and await leadership; release =
 * close (resign). A latch that did not lead within the timeout is closed, so `fail` is true. */
final class Latch implements Subject {
    private final CuratorFramework client;
    private final String path;
    private final String id;
    private LeaderLatch latch;

    Latch(CuratorFramework client, String path, String id) {
        this.client = client;
        this.path = path;
        this.id = id;
    }

    @Override
    public String acquire(long timeoutMs) throws Exception {
        if (latch == null) {
            latch = new LeaderLatch(client, path, id);
            latch.start();
        }
        if (latch.await(timeoutMs, TimeUnit.MILLISECONDS)) {
            return latch.getOurPath();
        }
        LeaderLatch gone = latch;
        latch = null;
        gone.close();
        return null;
    }

    @Override
    public void release() throws Exception {
        if (latch == null) {
            throw new IllegalMonitorStateException("not a participant");
        }
        LeaderLatch gone = latch;
        latch = null;
        gone.close();
    }

    @Override
    public boolean holding() {
        return latch != null && latch.hasLeadership();
    }

    @Override
    public void close() {
        if (latch != null) {
            try {
                latch.close();
            } catch (Exception e) {
                // best effort: the session's end removes the node anyway
            }
            latch = null;
        }
    }
}
