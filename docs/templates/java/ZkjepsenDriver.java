/*
 * A client program for zkjepsen, in Java: copy it, put YOUR lock in YourLock, build, then
 *
 *   zkjepsen client check "java -cp 'lib/*:.' ZkjepsenDriver" --client-dir build/
 *   zkjepsen test --client-cmd "java -cp 'lib/*:.' ZkjepsenDriver" --client-dir build/ \
 *       --workload lock --param resource=fenced --nemesis pause-client --clients 5
 *
 * It speaks the client wire protocol (docs/client-protocol.md): one JSON request per line on
 * stdin, one JSON answer per line on stdout, logs on stderr. As shipped it tests Apache Curator's
 * InterProcessMutex. Build (Debian: libcurator-recipes-java, libzookeeper-java):
 *
 *   mkdir -p build/lib && cd /usr/share/java && cp curator-recipes.jar curator-framework.jar \
 *       curator-client.jar zookeeper.jar zookeeper-jute.jar guava.jar slf4j-api.jar \
 *       slf4j-simple.jar "$OLDPWD/build/lib/" && cd -   # what your lock needs at run time
 *   javac -cp 'build/lib/*' -d build ZkjepsenDriver.java
 *
 * The client image has a Java runtime; --client-dir is mounted read-only as the program's cwd.
 * No JSON library needed: Json at the bottom reads and writes the few shapes the protocol uses.
 */

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

public final class ZkjepsenDriver {

    // ---- YOUR LOCK GOES HERE ----------------------------------------------------------------
    /** acquire: your own lock node's path, or null on timeout; holding: your app's belief. */
    static final class YourLock {
        /** InterProcessMutex keeps its node to itself; a subclass may read it (protected). */
        static final class Mutex extends InterProcessMutex {
            Mutex(CuratorFramework client, String path) {
                super(client, path);
            }

            String node() {
                return getLockPath();
            }
        }

        final Mutex mutex;

        YourLock(CuratorFramework client, String path) {
            this.mutex = new Mutex(client, path);
        }

        String acquire(long timeoutMs) throws Exception {
            return mutex.acquire(timeoutMs, TimeUnit.MILLISECONDS) ? mutex.node() : null;
        }

        void release() throws Exception {
            mutex.release();
        }

        boolean holding() {
            return mutex.isAcquiredInThisProcess();
        }
    }
    // -------------------------------------------------------------------------------------------

    private final PrintStream out;
    private CuratorFramework client;
    private YourLock lock;
    private String node; // our own lock node while we believe we hold it
    private String lockPath;

    ZkjepsenDriver(PrintStream out) {
        this.out = out;
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false,
                StandardCharsets.UTF_8);
        System.setOut(System.err); // stdout carries protocol lines only
        ZkjepsenDriver d = new ZkjepsenDriver(out);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in,
                StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            Map<String, Object> req = Json.object(line);
            Object id = req.get("id");
            String op = (String) req.get("op");
            Map<String, Object> reply = new LinkedHashMap<>();
            reply.put("in_reply_to", id);
            try {
                Object value = d.handle(op, req);
                reply.put("type", "ok");
                reply.put("value", value);
            } catch (Definite e) { // certainly did not happen
                reply.put("type", "fail");
                reply.put("error", e.getMessage());
            } catch (Exception e) { // connection loss, timeouts, bugs: we do not know
                d.lock = null;
                reply.put("type", "info");
                reply.put("error", e.getClass().getSimpleName());
            }
            d.send(reply);
            if ("close".equals(op)) {
                System.exit(0);
            }
        }
    }

    static final class Definite extends Exception {
        Definite(String error) {
            super(error);
        }
    }

    synchronized void send(Map<String, Object> msg) { // events come from Curator's thread
        out.print(Json.write(msg) + "\n");
        out.flush();
    }

    Object handle(String op, Map<String, Object> req) throws Exception {
        switch (op) {
            case "init": {
                lockPath = (String) req.get("lock_path");
                int timeout = ((Number) req.get("session_timeout_ms")).intValue();
                client = CuratorFrameworkFactory.newClient((String) req.get("servers"), timeout,
                        Math.min(timeout, 5000), new ExponentialBackoffRetry(100, 3));
                client.getConnectionStateListenable().addListener((c, state) -> {
                    Map<String, Object> ev = new LinkedHashMap<>();
                    ev.put("event", "session-state");
                    ev.put("value", state.name());
                    send(ev);
                });
                client.start();
                if (!client.blockUntilConnected(15, TimeUnit.SECONDS)) {
                    throw new Definite("no connection within 15 s");
                }
                var zk = client.getZookeeperClient().getZooKeeper();
                Map<String, Object> v = new LinkedHashMap<>();
                v.put("session_id", "0x" + Long.toHexString(zk.getSessionId()));
                v.put("timeout_ms", zk.getSessionTimeout());
                return v;
            }
            case "acquire": {
                if (lock == null) {
                    lock = new YourLock(client, lockPath);
                }
                String n = lock.acquire(((Number) req.get("timeout_ms")).longValue());
                if (n == null) {
                    throw new Definite("timeout");
                }
                Stat stat = client.checkExists().forPath(n); // fencing token: the czxid
                node = n;
                Map<String, Object> v = new LinkedHashMap<>();
                v.put("token", stat == null ? null : stat.getCzxid());
                v.put("node", n);
                return v;
            }
            case "release":
                if (lock != null) {
                    lock.release();
                }
                node = null;
                return null;
            case "holding":
                return lock != null && lock.holding();
            case "read": {
                String path = (String) req.get("path");
                if (Boolean.TRUE.equals(req.get("sync"))) {
                    client.sync().forPath(path);
                }
                Stat stat = new Stat();
                byte[] data;
                try {
                    data = client.getData().storingStatIn(stat).forPath(path);
                } catch (KeeperException e) {
                    throw new Definite(e.code().name()); // a read changes nothing
                }
                Map<String, Object> v = new LinkedHashMap<>();
                v.put("data", data == null ? null : new String(data, StandardCharsets.UTF_8));
                v.put("version", stat.getVersion());
                return v;
            }
            case "write":
                return write((String) req.get("path"), (String) req.get("data"),
                        ((Number) req.get("version")).intValue(),
                        Boolean.TRUE.equals(req.get("fenced")));
            case "close":
                client.close();
                return null;
            default:
                throw new Definite("unknown op " + op);
        }
    }

    private Object write(String path, String data, int version, boolean fenced) throws Exception {
        byte[] bytes = data.getBytes(StandardCharsets.UTF_8);
        Map<String, Object> v = new LinkedHashMap<>();
        try {
            if (!fenced) {
                v.put("version", client.setData().withVersion(version).forPath(path, bytes)
                        .getVersion());
                return v;
            }
            if (node == null) {
                throw new Definite("Fenced");
            }
            // Fencing is the application's job: check our own lock node in the same transaction.
            CuratorOp check = client.transactionOp().check().forPath(node);
            CuratorOp set = client.transactionOp().setData().withVersion(version)
                    .forPath(path, bytes);
            List<CuratorTransactionResult> res = client.transaction().forOperations(check, set);
            v.put("version", res.get(1).getResultStat().getVersion());
            return v;
        } catch (KeeperException.NoNodeException e) {
            throw new Definite(fenced && node != null && node.equals(e.getPath())
                    ? "Fenced" : "NoNode");
        } catch (KeeperException.BadVersionException e) {
            throw new Definite("BadVersion");
        }
    }

    /** Just enough JSON for the protocol: objects, strings, numbers, booleans, null. */
    static final class Json {
        private final String s;
        private int i;

        private Json(String s) {
            this.s = s;
        }

        @SuppressWarnings("unchecked")
        static Map<String, Object> object(String text) {
            return (Map<String, Object>) new Json(text).value();
        }

        private Object value() {
            ws();
            char c = s.charAt(i);
            if (c == '{') {
                Map<String, Object> m = new LinkedHashMap<>();
                i++;
                ws();
                if (s.charAt(i) == '}') {
                    i++;
                    return m;
                }
                while (true) {
                    ws();
                    String k = (String) value();
                    ws();
                    i++; // ':'
                    m.put(k, value());
                    ws();
                    if (s.charAt(i++) == '}') {
                        return m;
                    }
                }
            }
            if (c == '[') {
                List<Object> l = new ArrayList<>();
                i++;
                ws();
                if (s.charAt(i) == ']') {
                    i++;
                    return l;
                }
                while (true) {
                    l.add(value());
                    ws();
                    if (s.charAt(i++) == ']') {
                        return l;
                    }
                }
            }
            if (c == '"') {
                StringBuilder b = new StringBuilder();
                i++;
                while (s.charAt(i) != '"') {
                    char ch = s.charAt(i++);
                    if (ch == '\\') {
                        char e = s.charAt(i++);
                        switch (e) {
                            case 'n': b.append('\n'); break;
                            case 't': b.append('\t'); break;
                            case 'r': b.append('\r'); break;
                            case 'b': b.append('\b'); break;
                            case 'f': b.append('\f'); break;
                            case 'u': b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                                i += 4; break;
                            default: b.append(e);
                        }
                    } else {
                        b.append(ch);
                    }
                }
                i++;
                return b.toString();
            }
            int start = i;
            while (i < s.length() && ",}] \t\r\n".indexOf(s.charAt(i)) < 0) {
                i++;
            }
            String w = s.substring(start, i);
            switch (w) {
                case "true": return Boolean.TRUE;
                case "false": return Boolean.FALSE;
                case "null": return null;
                default:
                    return w.contains(".") || w.contains("e") || w.contains("E")
                            ? (Object) Double.parseDouble(w) : (Object) Long.parseLong(w);
            }
        }

        private void ws() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }

        static String write(Object v) {
            if (v == null) {
                return "null";
            }
            if (v instanceof String) {
                StringBuilder b = new StringBuilder("\"");
                for (char c : ((String) v).toCharArray()) {
                    if (c == '"' || c == '\\') {
                        b.append('\\').append(c);
                    } else if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
                return b.append('"').toString();
            }
            if (v instanceof Map) {
                StringBuilder b = new StringBuilder("{");
                for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                    if (b.length() > 1) {
                        b.append(", ");
                    }
                    b.append(write(String.valueOf(e.getKey()))).append(": ").append(write(e.getValue()));
                }
                return b.append('}').toString();
            }
            return String.valueOf(v); // numbers, booleans
        }
    }
}
