// A client program (docs/client-protocol.md) that logs its own clock readings, as probe.py
// does: every 100 ms `CLOCKPROBE <real_boot_ns> <wall_ns> <mono_ns>` on stderr. Java has no raw
// syscall, so the real clock is /proc/uptime (the kernel's CLOCK_BOOTTIME, 10 ms steps, read
// from a file: nothing that skews a program's clock reaches it); the others are
// System.currentTimeMillis (x 10^6) and System.nanoTime; and after each Thread.sleep(500),
// `CLOCKPROBE-SLEEP <real_boot_ns> <real ns it took>`. Its lock never grants. Run as a single
// source file: `java Probe.java` (JDK 11+).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.channels.Selector;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public class Probe {
    static long realBoot() {
        try {
            String up = Files.readString(Path.of("/proc/uptime")).split(" ")[0];
            String[] p = up.split("\\.");
            return Long.parseLong(p[0]) * 1_000_000_000L + Long.parseLong((p[1] + "000000000").substring(0, 9));
        } catch (Exception e) {
            return -1;
        }
    }

    static String ancestors() {
        List<String> out = new ArrayList<>();
        String pid = "self";
        while (!pid.equals("0") && !pid.equals("1")) {
            try {
                String cmd = new String(Files.readAllBytes(Path.of("/proc/" + pid + "/cmdline"))).replace('\0', ' ').trim();
                out.add(cmd.length() > 120 ? cmd.substring(0, 120) : cmd);
                String next = "0";
                for (String ln : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
                    if (ln.startsWith("PPid:")) next = ln.substring(5).trim();
                }
                pid = next;
            } catch (Exception e) {
                break;
            }
        }
        return String.join(" <- ", out);
    }

    static String field(String line, String name) {
        Matcher m = Pattern.compile("\"" + name + "\"\\s*:\\s*(\"([^\"]*)\"|(-?\\d+))").matcher(line);
        if (!m.find()) return null;
        return m.group(2) != null ? m.group(2) : m.group(3);
    }

    static synchronized void say(String s) {
        System.out.println(s);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        System.err.println("CLOCKPROBE-TREE " + ancestors());
        Selector selector = Selector.open();
        Thread t = new Thread(() -> {
            while (true) {
                System.err.println("CLOCKPROBE " + realBoot() + " " + System.currentTimeMillis() * 1_000_000L + " " + System.nanoTime());
                try {
                    selector.select(100); // epoll_wait's timeout is relative: a real 0.1 s
                } catch (Exception e) {
                    return;
                }
            }
        });
        t.setDaemon(true);
        t.start();
        Thread sleeper = new Thread(() -> { // what a Thread.sleep(500) really takes
            while (true) {
                long t0 = realBoot();
                try {
                    Thread.sleep(500);
                } catch (InterruptedException e) {
                    return;
                }
                System.err.println("CLOCKPROBE-SLEEP " + t0 + " " + (realBoot() - t0));
            }
        });
        sleeper.setDaemon(true);
        sleeper.start();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String id = field(line, "id"), op = field(line, "op");
            String head = "{\"in_reply_to\": " + id + ", ";
            if ("init".equals(op)) {
                String timeout = field(line, "session_timeout_ms");
                say(head + "\"type\": \"ok\", \"value\": {\"session_id\": \"probe-" + field(line, "client")
                        + "\", \"timeout_ms\": " + (timeout == null ? "4000" : timeout) + "}}");
            } else if ("acquire".equals(op)) {
                say(head + "\"type\": \"fail\", \"error\": \"timeout\"}");
            } else if ("holding".equals(op)) {
                say(head + "\"type\": \"ok\", \"value\": false}");
            } else if ("release".equals(op) || "close".equals(op)) {
                say(head + "\"type\": \"ok\", \"value\": null}");
                if ("close".equals(op)) return;
            } else {
                say(head + "\"type\": \"fail\", \"error\": \"" + ("write".equals(op) ? "Fenced" : "unsupported") + "\"}");
            }
        }
    }
}
