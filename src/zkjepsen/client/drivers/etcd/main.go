// etcd-lock: zkjepsen's client wire protocol (docs/client-protocol.md) served with etcd's own
// locks, from the etcd 3.4.23 source Debian bookworm ships (golang-etcd-server-dev), built
// module-less (GOPATH=/usr/share/gocode, GO111MODULE=off) into one static binary at image build
// time. One argument, the mode:
//
//   - mutex: clientv3/concurrency's Session (a lease kept alive in the background) and Mutex
//     (Lock(ctx) / Unlock(ctx)), as applications (and `etcdctl lock`) use them;
//   - rpc:   the server-side v3lock service (v3lockpb.Lock{name, lease} -> key,
//     v3lockpb.Unlock{key}), on the lease of the same kind of Session.
//
// The library is used as-is. The glue below adds only what the protocol needs: a deadline on
// every call, the honest classification of failures (a call whose effect is unknown is
// answered `info`), the removal of our own leftover lock key after an unknown outcome (what a
// careful application does), and a new Session once the old one is done (its lease lost), as
// the concurrency package's users must do themselves.
//
// The protected resource is a plain etcd key (resource.go: as the backend's host session keeps
// it): `read` is a (linearizable) Get, an unguarded `write` a plain Put, a fenced one a Txn that
// puts only if Compare(CreateRevision(lock key) == our revision) holds: Mutex.IsOwner(),
// etcd's documented fence.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/clientv3"
)

// definite is a "no" from the server (or from us, before sending anything): nothing changed.
type definite struct{ name string }

func (d definite) Error() string { return d.name }

type driver struct {
	outMu sync.Mutex
	out   *bufio.Writer

	mode        string // "mutex" or "rpc"
	cli         *clientv3.Client
	lockPath    string
	ttl         int // the session's lease TTL asked for, in seconds
	opTimeout   time.Duration
	retryWrites bool
	// the application's Unlock deadline and what it does when Unlock fails (release in lock.go)
	unlockTimeout time.Duration
	unlockRetry   string

	sess    *session // the current session (nil: none yet, or the last one could not start)
	lock    locker   // the lock of the current acquisition (nil: none believed held)
	dirty   bool     // an unknown outcome may have left our own lock key behind
	pending chan struct{}
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

func num(m map[string]interface{}, k string, dflt float64) float64 {
	if v, ok := m[k].(float64); ok {
		return v
	}
	return dflt
}

// numParam reads a --param given as a number or as its text.
func numParam(m map[string]interface{}, k string, dflt float64) float64 {
	if s, ok := m[k].(string); ok {
		if v, err := strconv.ParseFloat(s, 64); err == nil {
			return v
		}
	}
	return num(m, k, dflt)
}

// endpoints turns the protocol's `servers` into clientv3 endpoints: "ip:port" as-is,
// "http(s)://ip:port" as-is, any other scheme (e.g. "etcd://") dropped.
func endpoints(servers string) []string {
	var out []string
	for _, s := range strings.Split(servers, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if i := strings.Index(s, "://"); i >= 0 && !strings.HasPrefix(s, "http") {
			s = s[i+3:]
		}
		out = append(out, s)
	}
	return out
}

// ttlSeconds is the lease TTL for a session timeout: whole seconds, rounded up, at least 1
// (etcd itself raises a TTL below its minimum, and TimeToLive says what it granted).
func ttlSeconds(ms float64) int {
	s := int((ms + 999) / 1000)
	if s < 1 {
		return 1
	}
	return s
}

func (d *driver) init(req map[string]interface{}) (interface{}, error) {
	params, _ := req["params"].(map[string]interface{})
	if params == nil {
		params = map[string]interface{}{}
	}
	d.retryWrites = params["retry_writes"] != false && params["retry_writes"] != "false"
	d.unlockTimeout = time.Duration(numParam(params, "unlock_timeout_ms", 0) * 1e6)
	d.unlockRetry, _ = params["unlock_retry"].(string)
	requestS := num(params, "request_timeout_s", 15)
	// Ops end (as info) well inside the recorder's deadline for one request.
	d.opTimeout = time.Duration(requestS*1000*2/3) * time.Millisecond
	d.lockPath, _ = req["lock_path"].(string)
	servers, _ := req["servers"].(string)
	d.ttl = ttlSeconds(num(req, "session_timeout_ms", 4000))
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints(servers),
		DialTimeout: 5 * time.Second,
		// Notice a dead connection (a cut-off client) within seconds, not TCP's minutes; the
		// server allows pings every 5 s (--grpc-keepalive-min-time).
		DialKeepAliveTime:    5 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
	})
	if err != nil {
		return nil, definite{"could not start: " + err.Error()}
	}
	d.cli = cli
	go d.watchConnection()
	s, err := d.newSession(15 * time.Second)
	if err != nil {
		return nil, definite{"no session within 15 s: " + errName(err)}
	}
	d.sess = s
	d.event("session-state", "CONNECTED")
	return s.describe(), nil
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
		return d.lock != nil, nil
	case "read":
		path, _ := req["path"].(string)
		return d.read(path)
	case "write":
		path, _ := req["path"].(string)
		data, _ := req["data"].(string)
		return d.write(path, data, int64(num(req, "version", -1)), req["fenced"] == true)
	}
	return nil, definite{"unknown op " + op}
}

// shutdown revokes the session's lease (its lock key goes with it; bounded: when the server
// cannot be reached the lease expires on its own) and closes the client.
func (d *driver) shutdown() {
	if d.sess != nil {
		atomic.StoreInt32(&d.sess.closing, 1)
		d.sess.s.Orphan()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		d.cli.Revoke(ctx, d.sess.s.Lease())
		cancel()
	}
	if d.cli != nil {
		d.cli.Close()
	}
}

func main() {
	mode := "mutex"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	if mode != "mutex" && mode != "rpc" {
		fmt.Fprintf(os.Stderr, "usage: %s [mutex|rpc]\n", os.Args[0])
		os.Exit(2)
	}
	d := &driver{out: bufio.NewWriter(os.Stdout), mode: mode, opTimeout: 10 * time.Second,
		retryWrites: true}
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
			d.send(map[string]interface{}{"in_reply_to": id, "type": "ok", "value": nil})
			d.shutdown()
			os.Exit(0)
		}
		if op != "init" && d.cli == nil {
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
	d.shutdown()
}
