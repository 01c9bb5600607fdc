// A client program for zkjepsen, in Go: copy it, put YOUR lock in newLock, build, then
//
//	zkjepsen client check ./zk-driver
//	zkjepsen test --recipe exec:./zk-driver --workload lock --param resource=fenced \
//	    --nemesis pause-client --clients 5
//
// It speaks the client wire protocol (docs/client-protocol.md): one JSON request per line on
// stdin, one JSON answer per line on stdout, logs on stderr. As shipped it tests go-zookeeper's
// zk.Lock. Build a static binary (the client containers have no Go):
//
//	CGO_ENABLED=0 go build -o zk-driver .      # with go.mod requiring github.com/go-zookeeper/zk
//	# or, with Debian's golang-github-samuel-go-zookeeper-dev:
//	GOPATH=/usr/share/gocode GO111MODULE=off CGO_ENABLED=0 go build -o zk-driver main.go
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync"
	"time"

	"github.com/samuel/go-zookeeper/zk"
)

// ---- YOUR LOCK GOES HERE -----------------------------------------------------------------

// yourLock: Acquire returns the path of your own lock node; Holding is your application's
// belief. The template wraps zk.Lock, which has no timeout: Acquire gives up after timeout.
type yourLock struct {
	lock *zk.Lock
	held bool
}

func newLock(conn *zk.Conn, path string) *yourLock {
	return &yourLock{lock: zk.NewLock(conn, path, zk.WorldACL(zk.PermAll))}
}

var errTimeout = errors.New("timeout")

func (l *yourLock) Acquire(timeout time.Duration) (string, error) {
	done := make(chan error, 1)
	go func() { done <- l.lock.Lock() }()
	select {
	case err := <-done:
		if err != nil {
			return "", err
		}
		l.held = true
		return lockNode(l.lock), nil
	case <-time.After(timeout):
		// zk.Lock cannot be cancelled: when the abandoned attempt gets the lock, give it back
		// at once (else the orphan would hold the lock forever). A real lock should cancel.
		go func() {
			if <-done == nil {
				l.lock.Unlock()
			}
		}()
		return "", errTimeout
	}
}

func (l *yourLock) Release() error { l.held = false; return l.lock.Unlock() }
func (l *yourLock) Holding() bool  { return l.held }

// -------------------------------------------------------------------------------------------

type driver struct {
	mu   sync.Mutex
	out  *bufio.Writer
	conn *zk.Conn
	lock *yourLock
	node string
	path string
}

func (d *driver) send(msg map[string]interface{}) {
	b, _ := json.Marshal(msg)
	d.mu.Lock() // events come from the event goroutine, answers from the main one
	defer d.mu.Unlock()
	d.out.Write(append(b, '\n'))
	d.out.Flush()
}

func (d *driver) init(req map[string]interface{}) (string, interface{}, string) {
	servers := splitHosts(req["servers"].(string))
	timeout := time.Duration(req["session_timeout_ms"].(float64)) * time.Millisecond
	conn, events, err := zk.Connect(servers, timeout, zk.WithLogger(stderrLogger{}))
	if err != nil {
		return "fail", nil, err.Error()
	}
	d.conn, d.path = conn, req["lock_path"].(string)
	connected := make(chan struct{})
	go func() {
		once := sync.Once{}
		for ev := range events {
			if ev.Type != zk.EventSession {
				continue
			}
			switch ev.State {
			case zk.StateHasSession:
				d.send(map[string]interface{}{"event": "session-state", "value": "CONNECTED"})
				once.Do(func() { close(connected) })
			case zk.StateDisconnected:
				d.send(map[string]interface{}{"event": "session-state", "value": "SUSPENDED"})
			case zk.StateExpired:
				d.send(map[string]interface{}{"event": "session-state", "value": "LOST"})
			}
		}
	}()
	select {
	case <-connected:
	case <-time.After(15 * time.Second):
		return "fail", nil, "no session within 15 s"
	}
	return "ok", map[string]interface{}{"session_id": fmt.Sprintf("0x%x", conn.SessionID()),
		"timeout_ms": timeout.Milliseconds()}, ""
}

func (d *driver) handle(op string, req map[string]interface{}) (string, interface{}, string) {
	switch op {
	case "init":
		return d.init(req)
	case "acquire":
		if d.lock == nil {
			d.lock = newLock(d.conn, d.path)
		}
		node, err := d.lock.Acquire(time.Duration(req["timeout_ms"].(float64)) * time.Millisecond)
		if err == errTimeout {
			d.lock = nil
			return "fail", nil, "timeout"
		} else if err != nil {
			d.lock = nil
			return "info", nil, err.Error()
		}
		_, stat, err := d.conn.Exists(node) // the fencing token is the node's czxid
		if err != nil || stat == nil {
			return "ok", map[string]interface{}{"token": nil, "node": node}, ""
		}
		d.node = node
		return "ok", map[string]interface{}{"token": stat.Czxid, "node": node}, ""
	case "release":
		if d.lock != nil {
			if err := d.lock.Release(); err != nil {
				d.lock = nil
				return "info", nil, err.Error()
			}
		}
		d.node = ""
		return "ok", nil, ""
	case "holding":
		return "ok", d.lock != nil && d.lock.Holding(), ""
	case "read":
		path := req["path"].(string)
		if req["sync"] == true {
			d.conn.Sync(path)
		}
		data, stat, err := d.conn.Get(path)
		if err != nil {
			return "fail", nil, err.Error() // a read changes nothing: fail is safe
		}
		return "ok", map[string]interface{}{"data": string(data), "version": stat.Version}, ""
	case "write":
		return d.write(req)
	case "close":
		d.conn.Close()
		return "ok", nil, ""
	}
	return "fail", nil, "unknown op " + op
}

func (d *driver) write(req map[string]interface{}) (string, interface{}, string) {
	path, data := req["path"].(string), []byte(req["data"].(string))
	version := int32(req["version"].(float64))
	if req["fenced"] != true {
		stat, err := d.conn.Set(path, data, version)
		return outcome(err, func() interface{} { return map[string]interface{}{"version": stat.Version} })
	}
	if d.node == "" {
		return "fail", nil, "Fenced"
	}
	// Fencing is the application's job: check our own lock node in the same transaction.
	res, err := d.conn.Multi(&zk.CheckVersionRequest{Path: d.node, Version: -1},
		&zk.SetDataRequest{Path: path, Data: data, Version: version})
	if err != nil && len(res) == 2 && res[0].Error != nil {
		return "fail", nil, "Fenced"
	}
	return outcome(err, func() interface{} { return map[string]interface{}{"version": res[1].Stat.Version} })
}

func outcome(err error, value func() interface{}) (string, interface{}, string) {
	switch err {
	case nil:
		return "ok", value(), ""
	case zk.ErrBadVersion:
		return "fail", nil, "BadVersion"
	case zk.ErrNoNode:
		return "fail", nil, "NoNode"
	}
	return "info", nil, err.Error() // connection loss etc.: unknown
}

func main() {
	d := &driver{out: bufio.NewWriter(os.Stdout)}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		var req map[string]interface{}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "not a request:", in.Text())
			continue
		}
		op, _ := req["op"].(string)
		typ, value, errText := d.handle(op, req)
		msg := map[string]interface{}{"in_reply_to": req["id"], "type": typ, "value": value}
		if errText != "" {
			msg["error"] = errText
		}
		d.send(msg)
		if op == "close" {
			return
		}
	}
}

// lockNode: the path of zk.Lock's own node (go-zookeeper keeps it in an unexported field).
func lockNode(l *zk.Lock) string {
	return reflect.ValueOf(l).Elem().FieldByName("lockPath").String()
}

type stderrLogger struct{}

func (stderrLogger) Printf(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", a...)
}

func splitHosts(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}
