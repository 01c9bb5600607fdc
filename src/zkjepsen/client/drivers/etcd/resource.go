package main

// The protected resource, as the etcd backend's host session keeps it (backends/etcd/
// session.py), so the workloads' setup and final reads on the host see what the clients wrote:
// the etcd key "/zkjepsen/res" + the protocol's path; its protocol `version` is etcd's per-key
// Version less one (0 at creation), so it counts the accepted writes as ZooKeeper's does, and
// a conditional write compares Version == version + 1.

import (
	"context"
	"fmt"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/mvcc/mvccpb"
)

const resourcePrefix = "/zkjepsen/res"

func resourceKey(path string) string { return resourcePrefix + path }

func (d *driver) read(path string) (interface{}, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d.opTimeout)
	defer cancel()
	resp, err := d.cli.Get(ctx, resourceKey(path)) // linearizable: etcd's default
	if err != nil {
		return nil, definite{errName(err)} // a read changes nothing: fail is always safe
	}
	if len(resp.Kvs) == 0 {
		return nil, definite{"NoNode"}
	}
	kv := resp.Kvs[0]
	return map[string]interface{}{"data": string(kv.Value), "version": kv.Version - 1}, nil
}

// writeOnce is one attempt: a plain Put when nothing is compared (unguarded, any version),
// else one Txn: [the lock's fence] [the resource's version] -> Put.
func (d *driver) writeOnce(ctx context.Context, path, data string, version int64,
	h *held) (interface{}, error) {
	key := resourceKey(path)
	var cmps []clientv3.Cmp
	if h != nil {
		cmps = append(cmps, h.fence())
	}
	if version >= 0 {
		cmps = append(cmps, clientv3.Compare(clientv3.Version(key), "=", version+1))
	}
	if len(cmps) == 0 {
		resp, err := d.cli.Put(ctx, key, data, clientv3.WithPrevKV())
		if err != nil {
			return nil, classify(err)
		}
		return map[string]interface{}{"version": nextVersion(resp.PrevKv)}, nil
	}
	check := []clientv3.Op{clientv3.OpGet(key)}
	if h != nil {
		check = append(check, clientv3.OpGet(h.key))
	}
	resp, err := d.cli.Txn(ctx).If(cmps...).
		Then(clientv3.OpPut(key, data, clientv3.WithPrevKV())).Else(check...).Commit()
	if err != nil {
		return nil, classify(err)
	}
	if resp.Succeeded {
		put := resp.Responses[0].GetResponsePut()
		return map[string]interface{}{"version": nextVersion(put.PrevKv)}, nil
	}
	// Which compare failed: the fence (our key is gone, or is another incarnation), else the
	// version.
	if h != nil {
		kvs := resp.Responses[1].GetResponseRange().Kvs
		if len(kvs) == 0 || kvs[0].CreateRevision != h.rev {
			return nil, definite{"Fenced"}
		}
	}
	return nil, definite{"BadVersion"}
}

// nextVersion is the protocol's version after a put that found `prev` (nil: the key was
// absent): the key's new etcd Version (prev's + 1, or 1) less one.
func nextVersion(prev *mvccpb.KeyValue) int64 {
	if prev == nil {
		return 0
	}
	return prev.Version
}

// write retries after an unknown outcome when retry_writes (the default), as applications do;
// once an attempt's outcome is unknown, a later refusal is no longer a definite "no" (the first
// attempt may have landed).
func (d *driver) write(path, data string, version int64, fenced bool) (interface{}, error) {
	var h *held
	if fenced {
		h = d.lock
		if h == nil || h.rev <= 0 {
			return nil, definite{"Fenced"} // no lock, or no revision to fence with: send nothing
		}
	}
	deadline := time.Now().Add(d.opTimeout)
	uncertain := false
	delay := 100 * time.Millisecond
	for {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		v, err := d.writeOnce(ctx, path, data, version, h)
		cancel()
		if e, ok := err.(definite); ok && uncertain {
			return nil, fmt.Errorf("%s after a retry", e.name)
		}
		if _, ok := err.(definite); err == nil || ok || !d.retryWrites ||
			time.Until(deadline) < delay {
			return v, err
		}
		uncertain = true
		time.Sleep(delay)
		if delay < time.Second {
			delay *= 2
		}
	}
}
