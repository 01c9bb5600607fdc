package main

// The session: concurrency.Session (a lease, kept alive in the background by clientv3's
// KeepAlive) and the events the protocol wants from it.
//
// Session.Done() closes when the keep-alive stops: the lease expired (the server said so, or
// the client saw no answer for a TTL), or the session was closed. That is etcd's "session
// lost": the keys attached to the lease are gone, but the Mutex keeps its key and revision and
// nothing tells it: its holder keeps believing (the flaw Jepsen's etcd 3.4.3 analysis shows).
// We report it as the event `session-state LOST`, and start a new session at the next acquire
// (with a `session` event), as the concurrency package's users must do themselves.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/clientv3/concurrency"
	"google.golang.org/grpc/connectivity"
)

type session struct {
	s        *concurrency.Session
	ttlMs    int64 // what the server granted (TimeToLive), else what we asked for
	closing  int32 // set before we close it ourselves: no LOST event then
	lostOnce sync.Once
	// the server said the lease is gone (Done closes only when the keep-alive loop notices)
	leaseLost bool
}

func (s *session) id() string { return fmt.Sprintf("0x%x", int64(s.s.Lease())) }

func (s *session) done() bool {
	if s.leaseLost {
		return true
	}
	select {
	case <-s.s.Done():
		return true
	default:
		return false
	}
}

// describe is the session as the protocol says it: its id, its lease (timeout_ms) and the
// longest gap between two renewals of that lease (renew_ms), which the checkers count a frozen
// holder's lease from. clientv3 (clientv3/lease.go, etcd 3.4) does not renew every TTL/3: on
// each keep-alive answer recvKeepAlive sets nextKeepAlive = now + TTL/3, and sendKeepAliveLoop
// sends the keep-alives that are due, then sleeps retryConnWait (500 ms) before it looks again.
// So a renewal can come TTL/3 + 0.5 s after the answer to the last (1.17 s with a 2 s lease:
// 58 % of it, where a third is 0.67 s). Not counted: the round trip of each keep-alive.
func (s *session) describe() map[string]interface{} {
	return map[string]interface{}{
		"session_id": s.id(), "timeout_ms": s.ttlMs, "renew_ms": (s.ttlMs+2)/3 + keepAliveLoopMs,
	}
}

// keepAliveLoopMs is clientv3's retryConnWait: how often its sendKeepAliveLoop wakes.
const keepAliveLoopMs = 500

// newSession starts a concurrency.Session with the driver's TTL. NewSession has no deadline of
// its own (it grants the lease with the client's context), so it runs aside and is abandoned
// (closed when it ever returns) after `timeout`.
func (d *driver) newSession(timeout time.Duration) (*session, error) {
	type result struct {
		s   *concurrency.Session
		err error
	}
	deadline := time.Now().Add(timeout)
	ch := make(chan result, 1)
	go func() {
		s, err := concurrency.NewSession(d.cli, concurrency.WithTTL(d.ttl))
		ch <- result{s, err}
	}()
	var r result
	select {
	case r = <-ch:
	case <-time.After(timeout):
		go func() {
			if late := <-ch; late.s != nil {
				late.s.Close()
			}
		}()
		return nil, context.DeadlineExceeded
	}
	if r.err != nil {
		return nil, r.err
	}
	s := &session{s: r.s, ttlMs: int64(d.ttl) * 1000}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	if ttl, err := d.cli.TimeToLive(ctx, r.s.Lease()); err == nil && ttl.GrantedTTL > 0 {
		s.ttlMs = ttl.GrantedTTL * 1000
	}
	cancel()
	go func() {
		<-s.s.Done()
		if atomic.LoadInt32(&s.closing) == 0 {
			d.lost(s)
		}
	}()
	return s, nil
}

func (d *driver) lost(s *session) {
	s.lostOnce.Do(func() { d.event("session-state", "LOST") })
}

// ensureSession gives the session for the next acquisition: the current one, or a new one when
// it is done (its lease lost), announced as a new session.
func (d *driver) ensureSession(timeout time.Duration) (*session, error) {
	if d.sess != nil && !d.sess.done() {
		return d.sess, nil
	}
	old := d.sess
	s, err := d.newSession(timeout)
	if err != nil {
		return nil, err
	}
	if old != nil {
		d.lost(old) // once per session, whoever noticed first
		atomic.StoreInt32(&old.closing, 1)
		go old.s.Orphan() // nothing left to revoke: its lease is gone or going
	}
	d.sess = s
	d.dirty = false // our leftover key, if any, was attached to the old lease
	d.event("session", s.describe())
	d.event("session-state", "CONNECTED")
	return s, nil
}

// watchConnection reports the gRPC connection's state: SUSPENDED when no endpoint can be
// reached (TRANSIENT_FAILURE; the lease may still be alive), RECONNECTED when one can again.
func (d *driver) watchConnection() {
	conn := d.cli.ActiveConnection()
	state := conn.GetState()
	suspended := false
	for conn.WaitForStateChange(context.Background(), state) {
		state = conn.GetState()
		switch state {
		case connectivity.TransientFailure:
			if !suspended {
				suspended = true
				d.event("session-state", "SUSPENDED")
			}
		case connectivity.Ready:
			if suspended {
				suspended = false
				d.event("session-state", "RECONNECTED")
			}
		case connectivity.Shutdown:
			return
		}
	}
}

// ownKey is the lock key our session puts under the lock path: the Mutex's own naming
// (fmt "%s%x" of prefix and lease), which the server-side Lock RPC uses too.
func (d *driver) ownKey(s *session) string {
	return fmt.Sprintf("%s/%x", d.lockPath, int64(s.s.Lease()))
}
