package grpczerodial

import (
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// dispatchName turns gRPC's full method name, "/pkg.Service/Method", into
// dispatch's, "pkg.Service.Method": the service's full name and the method
// joined by the last dot, which is how dispatch splits a name too (and how
// httpzerodial's "/pkg.Service/Method" paths map onto the same method).
func dispatchName(fullMethod string) (string, error) {
	if n, ok := names.Load(fullMethod); ok {
		return n.(string), nil
	}
	rest, ok := strings.CutPrefix(fullMethod, "/")
	svc, m, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || svc == "" || m == "" || strings.Contains(m, "/") {
		return "", status.Errorf(codes.Unimplemented, "grpczerodial: malformed method name %q: want \"/package.Service/Method\"", fullMethod)
	}
	name := svc + "." + m
	if cached.Add(1) <= maxCached {
		names.Store(fullMethod, name)
	}
	return name, nil
}

// names caches dispatchName's answers, so that a call does not build its
// name anew: generated clients call a fixed set of methods. A program that
// calls names built at run time (a proxy) could make any number: past
// maxCached, names are built each time.
var (
	names  sync.Map
	cached atomic.Int64
)

const maxCached = 4096
