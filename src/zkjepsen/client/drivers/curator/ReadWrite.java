package zkjepsen.curator;

import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;

/**
 * InterProcessReadWriteLock as-is, for the rwlock workload: each acquire, release and holding
 * request names its `mode` (read or write; none: write, a plain mutex) and goes to that side's
 * InterProcessMutex (readLock() / writeLock() of one InterProcessReadWriteLock).
 */
final class ReadWrite implements Subject {
    private final InterProcessMutex read;
    private final InterProcessMutex write;
    private InterProcessMutex current;

    ReadWrite(CuratorFramework client, String path) {
        InterProcessReadWriteLock lock = new InterProcessReadWriteLock(client, path);
        this.read = lock.readLock();
        this.write = lock.writeLock();
        this.current = write;
    }

    @Override
    public void select(String mode) {
        if (mode != null && !mode.equals("read") && !mode.equals("write")) {
            throw new IllegalArgumentException("mode must be read or write, not " + mode);
        }
        current = "read".equals(mode) ? read : write;
    }

    @Override
    public String acquire(long timeoutMs) throws Exception {
        if (!current.acquire(timeoutMs, TimeUnit.MILLISECONDS)) {
            return null;
        }
        return Reflect.lockPath(current);
    }

    @Override
    public void release() throws Exception {
        current.release(); // IllegalMonitorStateException when not held
    }

    @Override
    public boolean holding() {
        return current.isAcquiredInThisProcess();
    }

    @Override
    public void close() {
    }
}
