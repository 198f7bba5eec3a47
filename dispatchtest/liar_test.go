package dispatchtest_test

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/dispatchtest"
)

// dropsMetadata is a Caller that loses the request metadata on its way, as
// a path that cannot carry it does.
type dropsMetadata struct{ dispatchtest.Caller }

func (d dropsMetadata) Call(ctx context.Context, c dispatchtest.Call) error {
	c.Metadata = nil
	return d.Caller.Call(ctx, c)
}

// liar is countingBinding's path, its Caller losing the metadata, with
// the profile given.
func liar(p dispatchtest.Profile) dispatchtest.Binding {
	b := countingBinding()
	serve := b.Serve
	b.Serve = func(t *testing.T, srv *dispatch.Server, l dispatchtest.Limits) dispatchtest.Caller {
		return dropsMetadata{serve(t, srv, l)}
	}
	b.Profile = p
	return b
}

// TestLiar runs the suite on a path that differs from what it declares;
// TestUndeclaredDifferenceFails runs it in a process of its own, and wants
// it to fail.
func TestLiar(t *testing.T) {
	switch os.Getenv("DISPATCHTEST_LIAR") {
	case "undeclared":
		dispatchtest.Run(t, liar(dispatchtest.Profile{Name: "liar"}))
	case "declared":
		dispatchtest.Run(t, liar(dispatchtest.Profile{Name: "liar", Differences: []*dispatchtest.Difference{dispatchtest.NoMetadata}}))
	default:
		t.Skip("run by TestUndeclaredDifferenceFails")
	}
}

// A path whose outcome differs from what it declares fails the case, in a
// subtest named for the case and the path, saying what was wanted; the
// same path declaring the difference passes it.
func TestUndeclaredDifferenceFails(t *testing.T) {
	run := func(mode string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLiar$/^deadline_and_metadata_reach_the_handler,_nothing_else_does$", "-test.v")
		cmd.Env = append(os.Environ(), "DISPATCHTEST_LIAR="+mode)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("undeclared")
	require.Error(t, err, "the liar passed:\n%s", out)
	assert.Contains(t, out, "--- FAIL: TestLiar/deadline_and_metadata_reach_the_handler,_nothing_else_does/liar")
	assert.Contains(t, out, `case "deadline and metadata reach the handler, nothing else does" on path liar: want the reference path's outcome (it declares no difference affecting the case)`)

	out, err = run("declared")
	require.NoError(t, err, "the path that declares what it does failed:\n%s", out)
	assert.Contains(t, out, "--- PASS: TestLiar/deadline_and_metadata_reach_the_handler,_nothing_else_does/liar")
}
