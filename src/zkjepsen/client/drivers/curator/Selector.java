package zkjepsen.curator;

import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.leader.CancelLeadershipException;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListener;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

/**
 * LeaderSelector for the election workload, used as its documentation shows: leadership is the
 * time `takeLeadership` runs; it returns to give leadership up. acquire = start a selector and
 * await `takeLeadership`; release = let it return (and wait for the lock node to go), then close
 * the selector. A selector not leading within the timeout is closed, and `fail` is said only once
 * its participant node is gone: close() interrupts the selector's thread, whose mutex deletes the
 * node after close() has returned, and a node left behind would still queue (or, lowest, lead)
 * for a client that said it gave up. A node that outlives the wait is an unknown outcome.
 *
 * `tolerant` false: the listener is LeaderSelectorListenerAdapter (leadership cancelled at
 * SUSPENDED or LOST, the documented default). `tolerant` true: the listener cancels only at LOST
 * and rides out SUSPENDED, which is what SessionConnectionStateErrorPolicy makes the adapter do
 * (CURATOR-460); written as a listener so that every suite's Curator runs the same code.
 * Curator 3+ posts LOST itself once a session timeout has passed in SUSPENDED; 2.x only when the
 * server says the session expired.
 */
final class Selector implements Subject {
    private final CuratorFramework client;
    private final String path;
    private final String id;
    private final boolean tolerant;
    private LeaderSelector selector;
    private CountDownLatch elected;
    private CountDownLatch resign;
    private volatile boolean leading;
    private volatile String node;

    Selector(CuratorFramework client, String path, String id, boolean tolerant) {
        this.client = client;
        this.path = path;
        this.id = id;
        this.tolerant = tolerant;
    }

    /** The application's leader work: say it leads, then wait until told to resign (or until
     * the listener cancels leadership, which interrupts this thread). */
    private void lead(LeaderSelector mine, CountDownLatch electedNow, CountDownLatch resignNow)
            throws Exception {
        try {
            InterProcessMutex mutex =
                    (InterProcessMutex) Reflect.field(mine, LeaderSelector.class, "mutex");
            node = Reflect.lockPath(mutex); // this thread holds it
        } catch (ReflectiveOperationException e) {
            node = null;
        }
        leading = true;
        electedNow.countDown();
        try {
            resignNow.await();
        } finally {
            leading = false;
        }
    }

    private LeaderSelectorListener listener(CountDownLatch electedNow, CountDownLatch resignNow) {
        final LeaderSelector[] mine = new LeaderSelector[1];
        LeaderSelectorListener l = new LeaderSelectorListener() {
            @Override
            public void takeLeadership(CuratorFramework c) throws Exception {
                lead(mine[0], electedNow, resignNow);
            }

            @Override
            public void stateChanged(CuratorFramework c, ConnectionState state) {
                // LeaderSelectorListenerAdapter's rule (Standard policy), or LOST only
                boolean cancel = tolerant ? state == ConnectionState.LOST
                        : state == ConnectionState.SUSPENDED || state == ConnectionState.LOST;
                if (cancel) {
                    throw new CancelLeadershipException();
                }
            }
        };
        selector = mine[0] = new LeaderSelector(client, path, l);
        return l;
    }

    @Override
    public String acquire(long timeoutMs) throws Exception {
        if (selector == null) {
            elected = new CountDownLatch(1);
            resign = new CountDownLatch(1);
            node = null;
            listener(elected, resign);
            selector.setId(id);
            selector.start();
        }
        if (elected.await(timeoutMs, TimeUnit.MILLISECONDS) && leading) {
            String own = node;
            if (own == null) {
                throw new IllegalStateException("leading, but its lock node is unreadable");
            }
            return own;
        }
        close();
        awaitOwnNodesGone();
        return null;
    }

    /** Wait until no node of this session's is left under the election path. */
    private void awaitOwnNodesGone() throws Exception {
        long me = client.getZookeeperClient().getZooKeeper().getSessionId();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (ownsANode(me)) {
            if (System.nanoTime() > until) {
                throw new IllegalStateException("its participant node outlived the close");
            }
            Thread.sleep(10);
        }
    }

    private boolean ownsANode(long session) throws Exception {
        List<String> children;
        try {
            children = client.getChildren().forPath(path);
        } catch (KeeperException.NoNodeException e) {
            return false;
        }
        for (String child : children) {
            Stat st = client.checkExists().forPath(path + "/" + child);
            if (st != null && st.getEphemeralOwner() == session) {
                return true;
            }
        }
        return false;
    }

    @Override
    public void release() throws Exception {
        if (selector == null) {
            throw new IllegalMonitorStateException("not a participant");
        }
        String own = node;
        resign.countDown(); // takeLeadership returns: LeaderSelector deletes the lock node
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        try {
            while (own != null && client.checkExists().forPath(own) != null) {
                if (System.nanoTime() > until) {
                    throw new IllegalStateException("the lock node outlived the resignation");
                }
                Thread.sleep(10);
            }
        } finally {
            close();
        }
    }

    @Override
    public boolean holding() {
        return selector != null && leading;
    }

    @Override
    public void close() {
        if (selector != null) {
            LeaderSelector gone = selector;
            selector = null;
            resign.countDown();
            try {
                gone.close();
            } catch (Exception e) {
                // best effort: the session's end removes the node anyway
            }
        }
    }
}
