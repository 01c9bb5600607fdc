package main

// acquire / release in both modes. One lock object per acquisition (a fresh concurrency.Mutex,
// or the key a Lock RPC returned); `holding` is the application's belief: an acquisition that
// returned and has not been released. Nothing here checks the session: that is the library's
// behaviour under test.

import (
	"context"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
	"go.etcd.io/etcd/etcdserver/api/v3lock/v3lockpb"
	pb "go.etcd.io/etcd/etcdserver/etcdserverpb"
)

// held is one acquisition the application believes it holds.
type held struct {
	key string
	rev int64              // the key's create revision: the token and the fence (0: unknown)
	m   *concurrency.Mutex // mutex mode only
}

type locker = *held

// fence is the compare a fenced write puts in its transaction: Mutex.IsOwner() in mutex mode,
// the same compare built by hand around the Lock RPC's key.
func (h *held) fence() clientv3.Cmp {
	if h.m != nil {
		return h.m.IsOwner()
	}
	return clientv3.Compare(clientv3.CreateRevision(h.key), "=", h.rev)
}

// revOf reads the revision out of Mutex.IsOwner() (the Mutex keeps it unexported).
func revOf(m *concurrency.Mutex) int64 {
	c := pb.Compare(m.IsOwner())
	if cr, ok := c.TargetUnion.(*pb.Compare_CreateRevision); ok {
		return cr.CreateRevision
	}
	return 0
}

type attempt struct {
	h   *held
	err error
	// mutex mode: whether Lock's own clean-up (Unlock after a failed wait) deleted our key
	cleaned bool
}

// tryLock is one library call that takes the lock, bounded by ctx (the RPC's revision read:
// by answerBy).
func (d *driver) tryLock(ctx context.Context, s *session, answerBy time.Time) attempt {
	if d.mode == "mutex" {
		m := concurrency.NewMutex(s.s, d.lockPath)
		if err := m.Lock(ctx); err != nil {
			return attempt{err: err, cleaned: m.Key() == "\x00"}
		}
		return attempt{h: &held{key: m.Key(), rev: revOf(m), m: m}}
	}
	resp, err := v3lockpb.NewLockClient(d.cli.ActiveConnection()).Lock(ctx,
		&v3lockpb.LockRequest{Name: []byte(d.lockPath), Lease: int64(s.s.Lease())})
	if err != nil {
		return attempt{err: err}
	}
	h := &held{key: string(resp.Key)}
	// The reply names the key, not its revision: read it (our token and our fence).
	gctx, cancel := context.WithDeadline(context.Background(), answerBy)
	defer cancel()
	if g, err := d.cli.Get(gctx, h.key); err == nil && len(g.Kvs) > 0 {
		h.rev = g.Kvs[0].CreateRevision
	}
	return attempt{h: h}
}

// acquire answers within timeout + opTimeout (the recorder waits timeout + request_timeout_s):
// every step before and after the library call shares that budget.
func (d *driver) acquire(timeoutMs float64) (interface{}, error) {
	start := time.Now()
	lockBy := start.Add(time.Duration(timeoutMs) * time.Millisecond)
	answerBy := lockBy.Add(d.opTimeout)
	if d.pending != nil { // an abandoned attempt still running: never race its clean-up
		select {
		case <-d.pending:
			d.pending = nil
		case <-time.After(time.Until(lockBy)):
			return nil, definite{"timeout"} // nothing sent
		}
	}
	s, err := d.ensureSession(minDuration(d.opTimeout, time.Until(lockBy)))
	if err != nil {
		return nil, definite{"NoSession: " + errName(err)}
	}
	if d.dirty {
		if err := d.removeOwnKey(s, minTime(time.Now().Add(d.opTimeout), answerBy)); err != nil {
			return nil, definite{"leftover key not removed: " + errName(err)}
		}
	}
	if !time.Now().Before(lockBy) {
		return nil, definite{"timeout"} // nothing sent
	}
	ctx, cancel := context.WithDeadline(context.Background(), lockBy)
	done := make(chan attempt, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		done <- d.tryLock(ctx, s, answerBy)
	}()
	var a attempt
	select {
	case a = <-done:
		cancel()
	case <-time.After(time.Until(answerBy)):
		// Lock's own clean-up (an Unlock with the client's context) has not returned.
		cancel()
		d.pending, d.dirty = finished, true
		return nil, errDeadline
	}
	if a.err == nil {
		d.lock = a.h
		var token interface{}
		if a.h.rev > 0 {
			token = a.h.rev
		}
		return map[string]interface{}{"token": token, "node": a.h.key, "seq": token}, nil
	}
	if leaseGone(a.err) {
		s.leaseLost = true // Done closes only when the keep-alive loop notices
	}
	name := errName(a.err)
	if ctx.Err() == context.DeadlineExceeded { // (after cancel(), Err keeps the first cause)
		name = "timeout"
	}
	if a.cleaned {
		return nil, definite{name}
	}
	// The attempt may have left our key (its Txn's outcome unknown, or its clean-up failed):
	// remove it; only then is "not acquired" certain.
	if err := d.removeOwnKey(s, answerBy); err != nil {
		d.dirty = true
		return nil, a.err
	}
	return nil, definite{name}
}

func minDuration(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// removeOwnKey deletes the lock key of our own session (never another session's), by
// `deadline`: what a careful application does after an unknown outcome.
func (d *driver) removeOwnKey(s *session, deadline time.Time) error {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if _, err := d.cli.Delete(ctx, d.ownKey(s)); err != nil {
		return err
	}
	d.dirty = false
	return nil
}

func (d *driver) release() (interface{}, error) {
	h := d.lock
	if h == nil {
		return nil, definite{"NotHeld"}
	}
	d.lock = nil // one lock object per acquisition
	timeout := d.opTimeout
	if d.unlockTimeout > 0 {
		timeout = d.unlockTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var err error
	if h.m != nil {
		err = h.m.Unlock(ctx)
	} else {
		_, err = v3lockpb.NewLockClient(d.cli.ActiveConnection()).Unlock(ctx,
			&v3lockpb.UnlockRequest{Key: []byte(h.key)})
	}
	if err == nil {
		return nil, nil
	}
	if d.unlockRetry == "background" && h.m != nil {
		go d.retryUnlock(h) // the application retries the same Mutex's Unlock until it works
	} else {
		d.dirty = true // the delete may not have happened: remove our key before the next lock
	}
	return nil, err
}

// retryUnlock (param unlock_retry=background, mutex mode) is the application that retries a
// failed Unlock on the same Mutex object, in the background, until it succeeds: the shape of
// etcd-io/etcd#22082. Mutex.Unlock deletes by key name, and the key's name is the session's;
// if the failed delete had committed and this session locked again meanwhile, the retry
// deletes the newer lock's key, which its holder still believes it holds.
func (d *driver) retryUnlock(h *held) {
	for delay := 100 * time.Millisecond; ; delay *= 2 {
		time.Sleep(delay)
		ctx, cancel := context.WithTimeout(context.Background(), d.opTimeout)
		err := h.m.Unlock(ctx)
		cancel()
		if err == nil {
			d.event("unlock-retried", map[string]interface{}{"key": h.key, "rev": h.rev})
			return
		}
		if delay > 5*time.Second {
			delay = 5 * time.Second
		}
	}
}
