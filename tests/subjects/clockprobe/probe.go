// A client program (docs/client-protocol.md) that logs its own clock readings, as probe.py
// does: every 100 ms `CLOCKPROBE <real_boot_ns> <wall_ns> <mono_ns>` on stderr, the first by a
// raw clock_gettime(CLOCK_BOOTTIME) syscall, the others as Go reads its clocks (time.Now's
// wall and its monotonic reading, time.Since(start) + the first raw reading). Its lock never
// grants. Built static (CGO_ENABLED=0) by tests/integration/test_client_clock_forms.py.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

func realBoot() int64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 7, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

func ancestors() []string {
	out, pid := []string{}, "self"
	for pid != "0" && pid != "1" {
		cmd, err := os.ReadFile("/proc/" + pid + "/cmdline")
		if err != nil {
			break
		}
		line := strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
		if len(line) > 120 {
			line = line[:120]
		}
		out = append(out, line)
		status, err := os.ReadFile("/proc/" + pid + "/status")
		if err != nil {
			break
		}
		for _, ln := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(ln, "PPid:") {
				pid = strings.TrimSpace(strings.TrimPrefix(ln, "PPid:"))
			}
		}
	}
	return out
}

func logClocks() {
	start, base := time.Now(), realBoot()
	for {
		now := time.Now()
		fmt.Fprintf(os.Stderr, "CLOCKPROBE %d %d %d\n", realBoot(), now.UnixNano(), base+int64(now.Sub(start)))
		time.Sleep(100 * time.Millisecond)
	}
}

// What a time.Sleep(500 ms) really takes: `CLOCKPROBE-SLEEP <real_boot_ns> <real ns>`.
func logSleeps() {
	for {
		t := realBoot()
		time.Sleep(500 * time.Millisecond)
		fmt.Fprintf(os.Stderr, "CLOCKPROBE-SLEEP %d %d\n", t, realBoot()-t)
	}
}

func main() {
	fmt.Fprintf(os.Stderr, "CLOCKPROBE-TREE %s\n", strings.Join(ancestors(), " <- "))
	go logClocks()
	go logSleeps()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req map[string]interface{}
		if json.Unmarshal(in.Bytes(), &req) != nil {
			continue
		}
		reply := map[string]interface{}{"in_reply_to": req["id"], "type": "ok", "value": nil}
		switch req["op"] {
		case "init":
			reply["value"] = map[string]interface{}{
				"session_id": fmt.Sprintf("probe-%v", req["client"]), "timeout_ms": req["session_timeout_ms"]}
		case "acquire":
			reply["type"], reply["error"] = "fail", "timeout"
		case "holding":
			reply["value"] = false
		case "release", "close":
		case "write":
			reply["type"], reply["error"] = "fail", "Fenced"
		default:
			reply["type"], reply["error"] = "fail", "unsupported"
		}
		out.Encode(reply)
		if req["op"] == "close" {
			return
		}
	}
}
