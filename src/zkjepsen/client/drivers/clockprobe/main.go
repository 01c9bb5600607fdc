// clockprobe (Go): print what the Go runtime reads from its clocks (through the vDSO, at the
// address it found at start-up), COUNT lines every INTERVAL_MS:
// `raw_mono_ns wall_ns go_elapsed_ns raw_elapsed_ns`, where raw_* are read by a raw syscall
// (no patch reaches it) and go_elapsed is time.Since(start) on Go's monotonic reading.
package main

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

func rawMono() int64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

func main() {
	count, ms := 1, 100
	if len(os.Args) > 1 {
		count, _ = strconv.Atoi(os.Args[1])
	}
	if len(os.Args) > 2 {
		ms, _ = strconv.Atoi(os.Args[2])
	}
	start, raw0 := time.Now(), rawMono()
	for i := 0; i < count; i++ {
		raw := rawMono()
		fmt.Printf("%d %d %d %d\n", raw, time.Now().UnixNano(), int64(time.Since(start)), raw-raw0)
		if i+1 < count {
			time.Sleep(time.Duration(ms) * time.Millisecond)
		}
	}
}
