package main

// How a failed call ended, for the protocol: a definite "no" (`fail`: the server refused it
// before anything changed) or an unknown outcome (`info`: the request may have been applied).
// When in doubt: unknown. A deadline, a lost connection, "etcdserver: request timed out",
// "leader changed", "no leader" (the proposal may be in raft already) are all unknown.

import (
	"context"
	"errors"
	"strings"

	"go.etcd.io/etcd/etcdserver/api/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var errDeadline = errors.New("deadline")

// codeOf is the gRPC code of an error from clientv3 (an rpctypes.EtcdError) or from a raw
// gRPC call (a status); codes.Unknown when it is neither.
func codeOf(err error) codes.Code {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code()
	}
	if st, ok := status.FromError(err); ok {
		return st.Code()
	}
	return codes.Unknown
}

// definiteRefusal: codes the etcd server answers before it proposes anything (bad argument,
// compacted or future revision, lease not found, a precondition, permissions, quota).
func definiteRefusal(err error) bool {
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, errDeadline) {
		return false
	}
	switch codeOf(err) {
	case codes.InvalidArgument, codes.OutOfRange, codes.NotFound, codes.FailedPrecondition,
		codes.PermissionDenied, codes.Unauthenticated, codes.AlreadyExists,
		codes.ResourceExhausted:
		return true
	}
	return false
}

// leaseGone: the session's lease no longer exists on the server.
func leaseGone(err error) bool {
	return err != nil && strings.Contains(err.Error(), "requested lease not found")
}

func errName(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, errDeadline):
		return "OperationTimeout"
	case errors.Is(err, context.Canceled):
		return "Canceled"
	}
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return strings.TrimPrefix(ee.Error(), "etcdserver: ")
	}
	if st, ok := status.FromError(err); ok {
		if st.Code() == codes.DeadlineExceeded {
			return "OperationTimeout"
		}
		return st.Code().String() + ": " + strings.TrimPrefix(st.Message(), "etcdserver: ")
	}
	return err.Error()
}

// classify turns a library error into the protocol's answer: definite when the server
// refused, else the error itself (answered info).
func classify(err error) error {
	if definiteRefusal(err) {
		return definite{errName(err)}
	}
	return err
}
