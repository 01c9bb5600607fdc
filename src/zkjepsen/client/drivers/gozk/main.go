// zk-lock: zkjepsen's client wire protocol (docs/client-protocol.md) served with
// go-zookeeper's zk.Lock, as Debian bookworm ships it (github.com/samuel/go-zookeeper,
// git 2018-01-30). Built module-less (GOPATH=/usr/share/gocode, GO111MODULE=off) into one
// static binary at image build time.
//
// zk.Lock is used as-is: Lock() (no timeout of its own), Unlock(), and the lock's own belief
// (its lockPath) for `holding`. It has no session handling: after a session expiry it still
// believes it holds. The application glue below adds only what the protocol needs: a timeout
// around Lock() (on timeout the attempt is abandoned and our own node deleted, so `fail` is
// true), and removal of our own leftover node after an unknown outcome.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/samuel/go-zookeeper/zk"
)

var errDeadline = errors.New("deadline")

// definite is a "no" from the server: nothing changed.
type definite struct{ name string }

func (d definite) Error() string { return d.name }

type driver struct {
	outMu       sync.Mutex
	out         *bufio.Writer
	conn        *zk.Conn
	lockPath    string
	lock        *zk.Lock // the lock object of the current (or last successful) acquisition
	dirty       bool     // an unknown outcome may have left our own node behind
	retryWrites bool
	opTimeout   time.Duration
	sessionID   int64
}

func (d *driver) send(msg map[string]interface{}) {
	b, err := json.Marshal(msg)
	if err != nil {
		b, _ = json.Marshal(map[string]interface{}{"event": "driver-error", "value": err.Error()})
	}
	d.outMu.Lock()
	defer d.outMu.Unlock()
	d.out.Write(b)
	d.out.WriteByte('\n')
	d.out.Flush()
}

func (d *driver) event(name string, value interface{}) {
	d.send(map[string]interface{}{"event": name, "value": value})
}

// within runs fn, giving up (errDeadline: outcome unknown) after the op timeout.
func within(t time.Duration, fn func() (interface{}, error)) (interface{}, error) {
	type result struct {
		v   interface{}
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := fn()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-time.After(t):
		return nil, errDeadline
	}
}

func errName(err error) string {
	switch err {
	case zk.ErrConnectionClosed:
		return "ConnectionClosed"
	case zk.ErrSessionExpired:
		return "SessionExpired"
	case zk.ErrNoServer:
		return "NoServer"
	case zk.ErrClosing:
		return "Closing"
	case zk.ErrSessionMoved:
		return "SessionMoved"
	case zk.ErrNoNode:
		return "NoNode"
	case zk.ErrBadVersion:
		return "BadVersion"
	case zk.ErrNodeExists:
		return "NodeExists"
	case errDeadline:
		return "OperationTimeout"
	}
	return err.Error()
}

// transient errors: the request may or may not have been applied; a retry may help.
func transient(err error) bool {
	switch err {
	case zk.ErrConnectionClosed, zk.ErrSessionExpired, zk.ErrNoServer, zk.ErrClosing,
		zk.ErrSessionMoved, errDeadline:
		return true
	}
	return false
}

func stateName(s zk.State) string {
	switch s {
	case zk.StateHasSession:
		return "CONNECTED"
	case zk.StateDisconnected:
		return "SUSPENDED"
	case zk.StateExpired:
		return "LOST"
	case zk.StateConnectedReadOnly:
		return "READ_ONLY"
	case zk.StateAuthFailed:
		return "AUTH_FAILED"
	}
	return "" // connecting, TCP-connected: not a session state change
}

// negotiated reads go-zookeeper's negotiated session timeout (kept unexported).
func negotiated(c *zk.Conn) int64 {
	return reflect.ValueOf(c).Elem().FieldByName("sessionTimeoutMs").Int()
}

// lockNode reads zk.Lock's own belief: the path of the node it holds ("" when it holds none).
func lockNode(l *zk.Lock) string {
	if l == nil {
		return ""
	}
	return reflect.ValueOf(l).Elem().FieldByName("lockPath").String()
}

func (d *driver) watchSession(events <-chan zk.Event, connected chan<- struct{}) {
	last := ""
	once := sync.Once{}
	for ev := range events {
		if ev.Type != zk.EventSession {
			continue
		}
		name := stateName(ev.State)
		if name == "" || name == last {
			continue
		}
		last = name
		d.event("session-state", name)
		if ev.State == zk.StateHasSession {
			id := d.conn.SessionID()
			if d.sessionID != 0 && id != d.sessionID {
				d.event("session", map[string]interface{}{
					"session_id": fmt.Sprintf("0x%x", id), "timeout_ms": negotiated(d.conn)})
			}
			d.sessionID = id
			once.Do(func() { close(connected) })
		}
	}
}

func num(m map[string]interface{}, k string, dflt float64) float64 {
	if v, ok := m[k].(float64); ok {
		return v
	}
	return dflt
}

func (d *driver) init(req map[string]interface{}) (interface{}, error) {
	params, _ := req["params"].(map[string]interface{})
	if params == nil {
		params = map[string]interface{}{}
	}
	d.retryWrites = params["retry_writes"] != false
	requestS := num(params, "request_timeout_s", 15)
	// Ops end (as info) well inside the recorder's deadline for one request.
	d.opTimeout = time.Duration(requestS*1000*2/3) * time.Millisecond
	d.lockPath, _ = req["lock_path"].(string)
	servers, _ := req["servers"].(string)
	session := time.Duration(num(req, "session_timeout_ms", 4000)) * time.Millisecond
	conn, events, err := zk.Connect(strings.Split(servers, ","), session, zk.WithLogInfo(false))
	if err != nil {
		return nil, definite{"could not start: " + err.Error()}
	}
	d.conn = conn
	connected := make(chan struct{})
	go d.watchSession(events, connected)
	select {
	case <-connected:
	case <-time.After(15 * time.Second):
		return nil, definite{"no session within 15 s"}
	}
	return map[string]interface{}{"session_id": fmt.Sprintf("0x%x", conn.SessionID()),
		"timeout_ms": negotiated(conn)}, nil
}

// removeOwnLeftovers deletes the nodes our own session left under the lock path (never
// another session's): what a careful application does after an unknown outcome.
func (d *driver) removeOwnLeftovers() error {
	_, err := within(d.opTimeout, func() (interface{}, error) {
		me := d.conn.SessionID()
		kids, _, err := d.conn.Children(d.lockPath)
		if err == zk.ErrNoNode {
			return nil, nil
		} else if err != nil {
			return nil, err
		}
		for _, k := range kids {
			p := d.lockPath + "/" + k
			ok, st, err := d.conn.Exists(p)
			if err != nil {
				return nil, err
			}
			if ok && st.EphemeralOwner == me {
				if err := d.conn.Delete(p, -1); err != nil && err != zk.ErrNoNode {
					return nil, err
				}
			}
		}
		return nil, nil
	})
	if err == nil {
		d.dirty = false
	}
	return err
}

func seqOf(path string) interface{} {
	i := len(path)
	for i > 0 && path[i-1] >= '0' && path[i-1] <= '9' {
		i--
	}
	if len(path)-i != 10 {
		return nil
	}
	var n int64
	fmt.Sscanf(path[i:], "%d", &n)
	return n
}

func (d *driver) acquire(timeoutMs float64) (interface{}, error) {
	if d.dirty {
		if err := d.removeOwnLeftovers(); err != nil {
			return nil, err
		}
	}
	l := zk.NewLock(d.conn, d.lockPath, zk.WorldACL(zk.PermAll))
	done := make(chan error, 1)
	go func() { done <- l.Lock() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Duration(timeoutMs) * time.Millisecond):
		select {
		case err = <-done: // finished just now: use its result
		default:
			// Abandon the attempt: if it ever acquires, it lets go at once; our own node
			// is deleted now so the clients queued behind it move on.
			go func() {
				if <-done == nil {
					l.Unlock()
				}
			}()
			if d.removeOwnLeftovers() != nil {
				d.dirty = true
			}
			return nil, definite{"timeout"}
		}
	}
	if err != nil {
		d.dirty = true
		return nil, err
	}
	d.lock = l
	node := lockNode(l)
	var token interface{}
	if v, err := within(d.opTimeout, func() (interface{}, error) {
		ok, st, err := d.conn.Exists(node)
		if err != nil || !ok {
			return nil, err
		}
		return st.Czxid, nil
	}); err == nil {
		token = v
	}
	return map[string]interface{}{"token": token, "node": node, "seq": seqOf(node)}, nil
}

func (d *driver) release() (interface{}, error) {
	l := d.lock
	if lockNode(l) == "" {
		return nil, definite{"NotHeld"}
	}
	d.lock = nil // one lock object per acquisition: go-zk keeps lockPath when Unlock fails
	_, err := within(d.opTimeout, func() (interface{}, error) { return nil, l.Unlock() })
	if err == zk.ErrNoNode {
		return nil, nil // the node is gone already (its session expired): nothing is held
	}
	if err != nil {
		d.dirty = true
	}
	return nil, err
}

func (d *driver) read(path string, doSync bool) (interface{}, error) {
	return within(d.opTimeout, func() (interface{}, error) {
		if doSync {
			if _, err := d.conn.Sync(path); err != nil {
				return nil, err
			}
		}
		data, st, err := d.conn.Get(path)
		if err == zk.ErrNoNode {
			return nil, definite{"NoNode"}
		} else if err != nil {
			return nil, err
		}
		return map[string]interface{}{"data": string(data), "version": st.Version}, nil
	})
}

func (d *driver) writeOnce(path string, data []byte, version int32, fence string) (interface{}, error) {
	if fence == "" {
		st, err := d.conn.Set(path, data, version)
		if err != nil {
			return nil, err
		}
		return map[string]interface{}{"version": st.Version}, nil
	}
	res, err := d.conn.Multi(&zk.CheckVersionRequest{Path: fence, Version: -1},
		&zk.SetDataRequest{Path: path, Data: data, Version: version})
	if len(res) > 0 && res[0].Error != nil {
		return nil, definite{"Fenced"}
	}
	if err == zk.ErrNoNode {
		return nil, definite{"Fenced"} // the server answered the failed multi in its header
	}
	if err != nil {
		return nil, err
	}
	return map[string]interface{}{"version": res[1].Stat.Version}, nil
}

// write retries after a connection loss or a session expiry when retry_writes (the default),
// as applications do; once an attempt's outcome is unknown, a later refusal is no longer a
// definite "no" (the first attempt may have landed).
func (d *driver) write(path, data string, version int32, fenced bool) (interface{}, error) {
	fence := lockNode(d.lock)
	if fenced && fence == "" {
		return nil, definite{"Fenced"}
	}
	if !fenced {
		fence = ""
	}
	deadline := time.Now().Add(d.opTimeout)
	uncertain := false
	delay := 100 * time.Millisecond
	for {
		left := time.Until(deadline)
		v, err := within(left, func() (interface{}, error) {
			return d.writeOnce(path, []byte(data), version, fence)
		})
		if err == zk.ErrNoNode || err == zk.ErrBadVersion || err == zk.ErrNodeExists {
			err = definite{errName(err)}
		}
		if _, ok := err.(definite); ok && uncertain {
			return nil, fmt.Errorf("%s after a retry", err.Error())
		}
		if err == nil || !transient(err) || !d.retryWrites || time.Until(deadline) < delay {
			return v, err
		}
		uncertain = true
		time.Sleep(delay)
		if delay < time.Second {
			delay *= 2
		}
	}
}

func (d *driver) handle(op string, req map[string]interface{}) (interface{}, error) {
	switch op {
	case "init":
		return d.init(req)
	case "acquire":
		return d.acquire(num(req, "timeout_ms", 10000))
	case "release":
		return d.release()
	case "holding":
		return lockNode(d.lock) != "", nil
	case "read":
		path, _ := req["path"].(string)
		return d.read(path, req["sync"] == true)
	case "write":
		path, _ := req["path"].(string)
		data, _ := req["data"].(string)
		return d.write(path, data, int32(num(req, "version", -1)), req["fenced"] == true)
	}
	return nil, definite{"unknown op " + op}
}

func main() {
	d := &driver{out: bufio.NewWriter(os.Stdout), opTimeout: 10 * time.Second, retryWrites: true}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<16), 1<<24)
	for in.Scan() {
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		var req map[string]interface{}
		if err := json.Unmarshal([]byte(line), &req); err != nil {
			fmt.Fprintln(os.Stderr, "unreadable request:", line)
			continue
		}
		id := req["id"]
		op, _ := req["op"].(string)
		if op == "close" {
			if d.conn != nil {
				d.conn.Close()
			}
			d.send(map[string]interface{}{"in_reply_to": id, "type": "ok", "value": nil})
			os.Exit(0)
		}
		if op != "init" && d.conn == nil {
			d.send(map[string]interface{}{"in_reply_to": id, "type": "fail", "error": "no init"})
			continue
		}
		v, err := d.handle(op, req)
		switch e := err.(type) {
		case nil:
			d.send(map[string]interface{}{"in_reply_to": id, "type": "ok", "value": v})
		case definite:
			d.send(map[string]interface{}{"in_reply_to": id, "type": "fail", "error": e.name})
		default:
			d.send(map[string]interface{}{"in_reply_to": id, "type": "info", "error": errName(err)})
		}
	}
	if d.conn != nil {
		d.conn.Close()
	}
}
