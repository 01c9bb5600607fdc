package zkjepsen.curator;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.RetryPolicy;
import org.apache.curator.RetrySleeper;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryUntilElapsed;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;

/**
 * zkjepsen's client wire protocol (docs/client-protocol.md) served with the real Apache Curator
 * 5.4.0 from Debian. `java -jar zkjepsen-curator.jar MODE`, MODE one of mutex (InterProcessMutex
 * as-is), careful (the same plus a ConnectionStateListener that abandons the critical section on
 * SUSPENDED/LOST), semaphore (InterProcessSemaphoreMutex), latch (LeaderLatch, for elections),
 * semaphore-v2 (InterProcessSemaphoreV2 with `permits` leases), rwlock
 * (InterProcessReadWriteLock: each request's `mode` picks its side), selector and
 * selector-tolerant (LeaderSelector, cancelled at SUSPENDED or only at LOST).
 *
 * One request at a time on the main thread (Curator's mutex is owned by a thread, so acquire and
 * release must run on the same one); session-state events come from Curator's listener thread.
 */
public final class Driver {
    /** Counts the retries Curator makes, so a definite-looking error after a retried (and so
     * possibly applied) attempt is answered `info`, never a false `fail`. */
    static final class CountingRetry implements RetryPolicy {
        final AtomicInteger retries = new AtomicInteger();
        private final RetryPolicy inner;

        CountingRetry(RetryPolicy inner) {
            this.inner = inner;
        }

        @Override
        public boolean allowRetry(int retryCount, long elapsedTimeMs, RetrySleeper sleeper) {
            retries.incrementAndGet();
            return inner.allowRetry(retryCount, elapsedTimeMs, sleeper);
        }
    }

    /** A definite "no" from the server: nothing changed. */
    static final class Definite extends Exception {
        Definite(String error) {
            super(error);
        }
    }

    private final PrintStream out;
    private final String mode;
    private CuratorFramework client;
    private CountingRetry retry;
    private String lockPath;
    private String clientId;
    private Map<?, ?> params = Map.of();
    private Subject subject;
    private String node; // own lock node while the application believes it holds
    private boolean dirty; // an unknown outcome may have left our own node behind
    private boolean retryWrites = true;
    private long sessionId;

    Driver(PrintStream out, String mode) {
        this.out = out;
        this.mode = mode;
    }

    public static void main(String[] args) throws Exception {
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false,
                StandardCharsets.UTF_8);
        System.setOut(System.err); // stdout carries protocol lines only
        String mode = args.length > 0 ? args[0] : "mutex";
        if (!Subject.MODES.contains(mode)) {
            System.err.println("unknown mode " + mode + " " + Subject.MODES);
            System.exit(2);
        }
        new Driver(out, mode).serve(new BufferedReader(
                new InputStreamReader(System.in, StandardCharsets.UTF_8)));
    }

    private synchronized void send(Object msg) {
        out.print(Json.write(msg) + "\n");
        out.flush();
    }

    void event(String name, Object value) {
        send(Json.obj("event", name, "value", value));
    }

    private void serve(BufferedReader in) throws Exception {
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            Map<?, ?> req;
            try {
                req = (Map<?, ?>) Json.parse(line);
            } catch (RuntimeException e) {
                System.err.println("unreadable request: " + line);
                continue;
            }
            Object id = req.get("id");
            String op = String.valueOf(req.get("op"));
            if (op.equals("close")) {
                shutdown();
                send(Json.obj("in_reply_to", id, "type", "ok", "value", null));
                System.exit(0);
            }
            if (client == null && !op.equals("init")) {
                send(Json.obj("in_reply_to", id, "type", "fail", "error", "no init"));
                continue;
            }
            int before = retry == null ? 0 : retry.retries.get();
            try {
                send(Json.obj("in_reply_to", id, "type", "ok", "value", handle(op, req)));
            } catch (Definite d) {
                boolean retried = retry != null && retry.retries.get() != before;
                // A retried attempt may have landed before the refusal: then we do not know.
                send(Json.obj("in_reply_to", id, "type", retried ? "info" : "fail",
                        "error", retried ? d.getMessage() + " after a retry" : d.getMessage()));
            } catch (Exception e) {
                if (op.equals("acquire") || op.equals("release")) {
                    dropSubject();
                }
                send(Json.obj("in_reply_to", id, "type", "info", "error", errorName(e)));
            }
        }
        shutdown();
    }

    static String errorName(Throwable e) {
        if (e instanceof KeeperException) { // NoNodeException -> NoNode, as the protocol spells it
            return e.getClass().getSimpleName().replaceAll("Exception$", "");
        }
        return e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage());
    }

    private static long num(Map<?, ?> m, String k, long dflt) {
        Object v = m.get(k);
        return v instanceof Number ? ((Number) v).longValue() : dflt;
    }

    private Object handle(String op, Map<?, ?> req) throws Exception {
        if (subject != null && req.get("mode") instanceof String) {
            subject.select((String) req.get("mode")); // the rwlock workload's side
        }
        switch (op) {
            case "init": return init(req);
            case "acquire": return acquire(num(req, "timeout_ms", 10000));
            case "release": return release();
            case "holding": return subject != null && subject.holding();
            case "read": return read((String) req.get("path"), Boolean.TRUE.equals(req.get("sync")));
            case "write": return write((String) req.get("path"), (String) req.get("data"),
                    (int) num(req, "version", -1), Boolean.TRUE.equals(req.get("fenced")));
            default: throw new Definite("unknown op " + op);
        }
    }

    private Object init(Map<?, ?> req) throws Exception {
        Map<?, ?> params = req.get("params") instanceof Map ? (Map<?, ?>) req.get("params") : Map.of();
        int session = (int) num(req, "session_timeout_ms", 4000);
        Object rt = params.get("request_timeout_s");
        long requestMs = rt instanceof Number ? (long) (((Number) rt).doubleValue() * 1000) : 15000;
        retryWrites = !Boolean.FALSE.equals(params.get("retry_writes"));
        lockPath = (String) req.get("lock_path");
        clientId = "c" + num(req, "client", 0);
        // Retries end well inside the recorder's deadline for one request.
        retry = new CountingRetry(new RetryUntilElapsed((int) Math.max(1000, requestMs / 2), 100));
        client = CuratorFrameworkFactory.builder()
                .connectString((String) req.get("servers"))
                .sessionTimeoutMs(session)
                .connectionTimeoutMs((int) Math.min(session, Math.max(1000, requestMs / 4)))
                .retryPolicy(retry)
                .build();
        client.getConnectionStateListenable().addListener((c, state) -> onState(state));
        client.start();
        if (!client.blockUntilConnected(15, TimeUnit.SECONDS)) {
            throw new Definite("no connection within 15 s");
        }
        ZooKeeper zk = client.getZookeeperClient().getZooKeeper();
        sessionId = zk.getSessionId();
        this.params = params;
        subject = Subject.make(mode, client, lockPath, clientId, params);
        return Json.obj("session_id", "0x" + Long.toHexString(sessionId),
                "timeout_ms", zk.getSessionTimeout());
    }

    private void onState(ConnectionState state) {
        event("session-state", state.name());
        if (state == ConnectionState.CONNECTED || state == ConnectionState.RECONNECTED) {
            try {
                ZooKeeper zk = client.getZookeeperClient().getZooKeeper();
                long id = zk.getSessionId();
                if (sessionId != 0 && id != sessionId) {
                    event("session", Json.obj("session_id", "0x" + Long.toHexString(id),
                            "timeout_ms", zk.getSessionTimeout()));
                }
                sessionId = id;
            } catch (Exception e) {
                System.err.println("session id unknown after " + state + ": " + e);
            }
        }
    }

    private void dropSubject() {
        if (subject != null) {
            subject.close();
        }
        subject = Subject.make(mode, client, lockPath, clientId, params);
        node = null;
        dirty = true;
    }

    /** After an unknown outcome: delete the ephemeral nodes our own session left under the lock
     * path (never another session's). What a careful application does before trying again. */
    private void removeOwnLeftovers() throws Exception {
        long me = client.getZookeeperClient().getZooKeeper().getSessionId();
        List<String> todo = new ArrayList<>(List.of(lockPath));
        for (int depth = 0; depth < 3 && !todo.isEmpty(); depth++) {
            List<String> next = new ArrayList<>();
            for (String dir : todo) {
                List<String> kids;
                try {
                    kids = client.getChildren().forPath(dir);
                } catch (KeeperException.NoNodeException e) {
                    continue;
                }
                for (String k : kids) {
                    String p = dir + "/" + k;
                    Stat st = client.checkExists().forPath(p);
                    if (st == null) {
                        continue;
                    }
                    if (st.getEphemeralOwner() == me) {
                        try {
                            client.delete().forPath(p);
                        } catch (KeeperException.NoNodeException e) {
                            // gone already
                        }
                    } else if (st.getNumChildren() > 0) {
                        next.add(p);
                    }
                }
            }
            todo = next;
        }
        dirty = false;
    }

    private Object acquire(long timeoutMs) throws Exception {
        if (dirty) {
            removeOwnLeftovers();
        }
        String got = subject.acquire(timeoutMs);
        if (got == null) {
            throw new Definite("timeout");
        }
        node = got;
        Long token = null;
        try {
            Stat st = client.checkExists().forPath(got);
            token = st == null ? null : st.getCzxid();
        } catch (Exception e) {
            System.err.println("czxid of " + got + " unreadable: " + e);
        }
        return Json.obj("token", token, "node", got, "seq", seqOf(got));
    }

    static Long seqOf(String path) {
        int i = path.length();
        while (i > 0 && Character.isDigit(path.charAt(i - 1))) {
            i--;
        }
        return path.length() - i == 10 ? Long.parseLong(path.substring(i)) : null;
    }

    private Object release() throws Exception {
        try {
            subject.release();
        } catch (IllegalMonitorStateException e) {
            node = null;
            throw new Definite("NotHeld");
        }
        node = null;
        return null;
    }

    private Object read(String path, boolean sync) throws Exception {
        if (sync) {
            CountDownLatch done = new CountDownLatch(1);
            client.getZookeeperClient().getZooKeeper().sync(path, (rc, p, ctx) -> done.countDown(),
                    null);
            done.await(5, TimeUnit.SECONDS);
        }
        Stat stat = new Stat();
        byte[] data;
        try {
            data = client.getData().storingStatIn(stat).forPath(path);
        } catch (KeeperException.NoNodeException e) {
            throw new Definite("NoNode");
        }
        return Json.obj("data", data == null ? null : new String(data, StandardCharsets.UTF_8),
                "version", stat.getVersion());
    }

    private Object write(String path, String data, int version, boolean fenced) throws Exception {
        byte[] bytes = data.getBytes(StandardCharsets.UTF_8);
        String fence = node;
        if (fenced && fence == null) {
            throw new Definite("Fenced");
        }
        try {
            if (!retryWrites) {
                return rawWrite(path, bytes, version, fenced ? fence : null);
            }
            if (!fenced) {
                return Json.obj("version", client.setData().withVersion(version)
                        .forPath(path, bytes).getVersion());
            }
            List<CuratorOp> ops = Arrays.asList(
                    client.transactionOp().check().forPath(fence),
                    client.transactionOp().setData().withVersion(version).forPath(path, bytes));
            List<CuratorTransactionResult> res = client.transaction().forOperations(ops);
            return Json.obj("version", res.get(1).getResultStat().getVersion());
        } catch (KeeperException e) {
            throw classify(e, fenced);
        }
    }

    /** retry_writes=false: one attempt on the raw ZooKeeper handle, no retry at all. */
    private Object rawWrite(String path, byte[] bytes, int version, String fence)
            throws Exception {
        ZooKeeper zk = client.getZookeeperClient().getZooKeeper();
        if (fence == null) {
            return Json.obj("version", zk.setData(path, bytes, version).getVersion());
        }
        List<OpResult> res = zk.multi(Arrays.asList(Op.check(fence, -1),
                Op.setData(path, bytes, version)));
        return Json.obj("version", ((OpResult.SetDataResult) res.get(1)).getStat().getVersion());
    }

    private static Exception classify(KeeperException e, boolean fenced) {
        List<OpResult> results = e.getResults();
        if (fenced && results != null && !results.isEmpty()
                && results.get(0) instanceof OpResult.ErrorResult
                && ((OpResult.ErrorResult) results.get(0)).getErr() != 0) {
            return new Definite("Fenced");
        }
        switch (e.code()) {
            case NONODE:
            case BADVERSION:
            case NODEEXISTS:
                return new Definite(errorName(e));
            default:
                return e;
        }
    }

    private void shutdown() {
        try {
            if (subject != null) {
                subject.close();
            }
            if (client != null) {
                client.close();
            }
        } catch (Exception e) {
            System.err.println("close: " + e);
        }
    }
}
