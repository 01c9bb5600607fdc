// porcbench: the Porcupine side of benchmarks/vs_porcupine.py (see its docstring).
//
// Usage: porcbench [-min SECONDS] GROUP=MODEL:FILE[,FILE...] ...
//
// MODEL is "etcd" (a CAS register over Jepsen log lines, the model Porcupine's own tests use
// on test_data/jepsen) or "kv" (get/put/append of strings, partitioned per key, with an FNV-1a
// state hash, as Porcupine's tests use on test_data/kv). The files are parsed first (not
// timed); then every file of a group is checked with porcupine.CheckEvents, pass after pass,
// until at least -min seconds of process CPU (getrusage RUSAGE_SELF: every thread counts) are
// spent (with -verbose, porcupine.CheckEventsVerbose, which also returns the partial
// linearizations a counterexample is drawn from). One JSON object per group goes to stdout:
// {"group", "files", "passes", "valid", "cpu", "wall"} (cpu and wall in seconds per pass).
//
// Written for zkjepsen; the parsers below are this program's own (plain field splitting), and
// follow the conventions of Porcupine's test data: an op still pending at the end of a file
// returns at the end with an "unknown" (etcd) or empty (kv) output, and an etcd read that
// failed with :timed-out returns "unknown" where it failed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/anishathalye/porcupine"
)

// ---- etcd: a register holding an int or nothing, with read, write and cas ----

const absent = -1000000 // the register's "nil"

type regIn struct {
	kind     byte // 'r' read, 'w' write, 'c' cas
	from, to int  // write: from is the value; cas: from -> to
}

type regOut struct {
	unknown bool // timed out or never returned: any result is acceptable
	casOK   bool
	found   bool // read saw a value
	value   int
}

func regStep(state, input, output interface{}) (bool, interface{}) {
	s := state.(int)
	in := input.(regIn)
	out := output.(regOut)
	switch in.kind {
	case 'r':
		if out.unknown {
			return true, s
		}
		if out.found {
			return s == out.value, s
		}
		return s == absent, s
	case 'w':
		return true, in.from
	default:
		next := s
		if s == in.from {
			next = in.to
		}
		return out.unknown || out.casOK == (s == in.from), next
	}
}

var regModel = porcupine.Model{
	Init: func() interface{} { return absent },
	Step: regStep,
}

// Fields of a Jepsen log line "INFO  jepsen.util - PROC\t:TYPE\t:F\tVALUE": the part after
// " - ", split on white space; nil when the line is something else.
func jepsenFields(line string) []string {
	at := strings.Index(line, "jepsen.util - ")
	if at < 0 {
		return nil
	}
	return strings.Fields(line[at+len("jepsen.util - "):])
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(fmt.Sprintf("not an integer: %q", s))
	}
	return n
}

// Events of one log: calls numbered in order, a return matched to its process's open call.
type eventLog struct {
	events []porcupine.Event
	open   map[int]int // process -> id of its open call
	next   int
}

func newLog() *eventLog { return &eventLog{open: map[int]int{}} }

func (l *eventLog) call(proc int, in interface{}) {
	l.events = append(l.events, porcupine.Event{ClientId: proc, Kind: porcupine.CallEvent, Value: in, Id: l.next})
	l.open[proc] = l.next
	l.next++
}

func (l *eventLog) ret(proc int, out interface{}) {
	id, ok := l.open[proc]
	if !ok {
		panic(fmt.Sprintf("return of process %d without a call", proc))
	}
	delete(l.open, proc)
	l.events = append(l.events, porcupine.Event{ClientId: proc, Kind: porcupine.ReturnEvent, Value: out, Id: id})
}

// finish returns every op still open at the end of the file with output `out`.
func (l *eventLog) finish(out interface{}) []porcupine.Event {
	for proc := range l.open {
		l.ret(proc, out)
	}
	return l.events
}

func readLines(path string, each func(string)) {
	fh, err := os.Open(path)
	if err != nil {
		panic(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		each(sc.Text())
	}
	if err := sc.Err(); err != nil {
		panic(err)
	}
}

func parseEtcd(path string) []porcupine.Event {
	l := newLog()
	readLines(path, func(line string) {
		f := jepsenFields(line)
		if len(f) < 4 {
			return
		}
		proc := atoi(f[0])
		typ, op, val := f[1], f[2], strings.Join(f[3:], " ")
		switch {
		case typ == ":invoke" && op == ":read":
			l.call(proc, regIn{kind: 'r'})
		case typ == ":invoke" && op == ":write":
			l.call(proc, regIn{kind: 'w', from: atoi(val)})
		case typ == ":invoke" && op == ":cas":
			a, b := casPair(val)
			l.call(proc, regIn{kind: 'c', from: a, to: b})
		case typ == ":ok" && op == ":read":
			if val == "nil" {
				l.ret(proc, regOut{})
			} else {
				l.ret(proc, regOut{found: true, value: atoi(val)})
			}
		case typ == ":ok" && op == ":write":
			l.ret(proc, regOut{})
		case (typ == ":ok" || typ == ":fail") && op == ":cas":
			l.ret(proc, regOut{casOK: typ == ":ok"})
		case typ == ":fail" && op == ":read" && val == ":timed-out":
			l.ret(proc, regOut{unknown: true})
		}
		// :info lines leave the op open: it returns "unknown" at the end of the history.
	})
	return l.finish(regOut{unknown: true})
}

// casPair parses "[A B]".
func casPair(v string) (int, int) {
	f := strings.Fields(strings.Trim(v, "[]"))
	if len(f) != 2 {
		panic(fmt.Sprintf("bad cas value %q", v))
	}
	return atoi(f[0]), atoi(f[1])
}

// ---- kv: per-key strings with get, put and append ----

type kvIn struct {
	kind       byte // 'g' get, 'p' put, 'a' append
	key, value string
}

type kvOut struct{ value string }

func kvStep(state, input, output interface{}) (bool, interface{}) {
	s := state.(string)
	in := input.(kvIn)
	switch in.kind {
	case 'g':
		return output.(kvOut).value == s, s
	case 'p':
		return true, in.value
	default:
		return true, s + in.value
	}
}

func kvPartition(history []porcupine.Event) [][]porcupine.Event {
	byKey := map[string][]porcupine.Event{}
	keyOf := map[int]string{}
	var order []string
	for _, e := range history {
		var k string
		if e.Kind == porcupine.CallEvent {
			k = e.Value.(kvIn).key
			keyOf[e.Id] = k
		} else {
			k = keyOf[e.Id]
		}
		if _, seen := byKey[k]; !seen {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], e)
	}
	out := make([][]porcupine.Event, 0, len(order))
	for _, k := range order {
		out = append(out, byKey[k])
	}
	return out
}

var kvModel = porcupine.Model{
	PartitionEvent: kvPartition,
	Init:           func() interface{} { return "" },
	Step:           kvStep,
	Hash: func(state interface{}) uint64 {
		h := fnv.New64a()
		h.Write([]byte(state.(string)))
		return h.Sum64()
	},
}

// ednFields reads one flat EDN map of a kv line, `{:process 3, :type :ok, :f :get, :key "1",
// :value "x"}`, into keyword -> raw text (strings unquoted; the data has no escapes).
func ednFields(line string) map[string]string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "{") || !strings.HasSuffix(line, "}") {
		return nil
	}
	out := map[string]string{}
	rest := line[1 : len(line)-1]
	for len(rest) > 0 {
		rest = strings.TrimLeft(rest, " ,")
		if rest == "" {
			break
		}
		sp := strings.IndexByte(rest, ' ')
		if sp < 0 {
			panic(fmt.Sprintf("bad kv line %q", line))
		}
		name := rest[:sp]
		rest = strings.TrimLeft(rest[sp:], " ")
		var val string
		if strings.HasPrefix(rest, "\"") {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				panic(fmt.Sprintf("bad kv line %q", line))
			}
			val, rest = rest[1:end+1], rest[end+2:]
		} else {
			end := strings.IndexByte(rest, ',')
			if end < 0 {
				end = len(rest)
			}
			val, rest = strings.TrimSpace(rest[:end]), rest[end:]
		}
		out[name] = val
	}
	return out
}

func parseKv(path string) []porcupine.Event {
	l := newLog()
	readLines(path, func(line string) {
		m := ednFields(line)
		if m == nil {
			return
		}
		proc := atoi(m[":process"])
		switch m[":type"] {
		case ":invoke":
			kind := map[string]byte{":get": 'g', ":put": 'p', ":append": 'a'}[m[":f"]]
			if kind == 0 {
				panic(fmt.Sprintf("unknown kv op %q", m[":f"]))
			}
			in := kvIn{kind: kind, key: m[":key"]}
			if kind != 'g' {
				in.value = m[":value"]
			}
			l.call(proc, in)
		case ":ok":
			out := kvOut{}
			if m[":f"] == ":get" {
				out.value = m[":value"]
			}
			l.ret(proc, out)
		}
	})
	return l.finish(kvOut{})
}

// ---- timing ----

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

func main() {
	min := flag.Float64("min", 0.2, "CPU seconds to spend per group")
	// -verbose: CheckEventsVerbose, which also returns the partial linearizations (what a
	// counterexample is drawn from), as zkjepsen's check always returns its counterexample
	verbose := flag.Bool("verbose", false, "check with CheckEventsVerbose (no timeout)")
	flag.Parse()
	enc := json.NewEncoder(os.Stdout)
	for _, spec := range flag.Args() {
		eq, colon := strings.IndexByte(spec, '='), strings.IndexByte(spec, ':')
		if eq < 0 || colon < eq {
			fmt.Fprintf(os.Stderr, "porcbench: bad group %q (want GROUP=MODEL:FILE,...)\n", spec)
			os.Exit(2)
		}
		group, model, files := spec[:eq], spec[eq+1:colon], strings.Split(spec[colon+1:], ",")
		var m porcupine.Model
		var parse func(string) []porcupine.Event
		switch model {
		case "etcd":
			m, parse = regModel, parseEtcd
		case "kv":
			m, parse = kvModel, parseKv
		default:
			fmt.Fprintf(os.Stderr, "porcbench: unknown model %q\n", model)
			os.Exit(2)
		}
		histories := make([][]porcupine.Event, len(files))
		for i, f := range files {
			histories[i] = parse(f)
		}
		passes, valid := 0, 0
		c0, w0 := cpuSeconds(), time.Now()
		for {
			valid = 0
			for _, h := range histories {
				if *verbose {
					if res, _ := porcupine.CheckEventsVerbose(m, h, 0); res == porcupine.Ok {
						valid++
					}
				} else if porcupine.CheckEvents(m, h) {
					valid++
				}
			}
			passes++
			if cpuSeconds()-c0 >= *min {
				break
			}
		}
		cpu, wall := cpuSeconds()-c0, time.Since(w0).Seconds()
		enc.Encode(map[string]interface{}{
			"group": group, "files": len(files), "passes": passes, "valid": valid,
			"cpu": cpu / float64(passes), "wall": wall / float64(passes),
		})
	}
}
