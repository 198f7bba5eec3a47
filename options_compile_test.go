package transport_test

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestOptionsCompileOnlyWhereTheyApply: each transport's options are of its
// own type, so the compiler refuses an option given to a constructor it
// does not apply to, rather than the constructor ignoring it. The programs
// below are type-checked, as a user's would be compiled, against this
// module's packages as the go command compiles them.
func TestOptionsCompileOnlyWhereTheyApply(t *testing.T) {
	refused := map[string]string{ // expression: what the error names
		`tcp.New(mux.WithKeepAlive(1))`:                    "mux.WithKeepAlive(1)",
		`memory.New(mux.WithStreamWindow(1))`:              "mux.WithStreamWindow(1)",
		`memory.New(tcp.WithTLS(nil))`:                     "tcp.WithTLS(nil)",
		`memory.New(mux.WithMaxFrameSize(1))`:              "mux.WithMaxFrameSize(1)",
		`mux.New(tcp.WithLogger(nil))`:                     "tcp.WithLogger(nil)",
		`tcp.New(memory.WithMaxFrameSize(1))`:              "memory.WithMaxFrameSize(1)",
		`tcp.NewSocket(nil, nil, mux.WithMaxFrameSize(1))`: "mux.WithMaxFrameSize(1)",
		// dispatch: server options and client options are apart.
		`dispatch.NewServer(dispatch.WithCodec(nil))`:                             "dispatch.WithCodec(nil)",
		`func() { dispatch.Dial(nil, nil, "", dispatch.WithMaxCallsPerConn(1)) }`: "dispatch.WithMaxCallsPerConn(1)",
		`dispatch.NewServer(tcp.WithLogger(nil))`:                                 "tcp.WithLogger(nil)",
	}
	accepted := []string{
		`tcp.New(tcp.WithTLS(nil))`,
		`tcp.New(tcp.WithMaxFrameSize(1<<20), tcp.WithLogger(nil))`,
		`mux.New(mux.WithMaxFrameSize(1<<20), mux.WithKeepAlive(time.Second))`,
		`mux.New(mux.WithTLS(nil), mux.WithLogger(nil), mux.WithDialer(nil))`,
		`memory.New(memory.WithMaxFrameSize(1<<20), memory.WithLogger(nil))`,
		`tcp.New()`,
		// dispatch.WithLogger is one option for both ends.
		`dispatch.NewServer(dispatch.WithLogger(nil), dispatch.WithMaxCallsPerConn(1))`,
		`func() { dispatch.Dial(nil, nil, "", dispatch.WithLogger(nil), dispatch.WithCodec(nil)) }`,
	}

	start := time.Now()
	exports := exportData(t, "time", "./memory", "./mux", "./tcp", "./dispatch")
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	check := func(expr string) error {
		src := `package p

import (
	"time"

	"github.com/zerodial/transport/dispatch"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/mux"
	"github.com/zerodial/transport/tcp"
)

var (
	_ = time.Second
	_ = dispatch.NewServer
	_ = memory.New
	_ = mux.New
	_ = tcp.New
)

var _ = ` + expr + "\n"
		f, err := parser.ParseFile(fset, "p.go", src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		conf := types.Config{Importer: imp}
		_, err = conf.Check("p", fset, []*ast.File{f}, nil)
		return err
	}

	for _, expr := range accepted {
		if err := check(expr); err != nil {
			t.Errorf("%s does not compile: %v", expr, err)
		}
	}
	for expr, names := range refused {
		err := check(expr)
		if err == nil {
			t.Errorf("%s compiles; it must not", expr)
			continue
		}
		if !strings.Contains(err.Error(), "cannot use "+names) {
			t.Errorf("%s: the error does not name %s: %v", expr, names, err)
		}
	}
	t.Logf("type-checked %d programs in %v", len(accepted)+len(refused), time.Since(start).Round(time.Millisecond))
}

// exportData returns the compiler's export data files for pkgs and every
// package they import, by import path, as the go command builds them
// (mostly from its cache, and offline: GOPROXY=off). Type-checking against
// them takes milliseconds; the "source" importer would type-check every
// package, the standard library included, from source, which takes 7 s,
// and 21 s under the race detector.
func exportData(t *testing.T, pkgs ...string) map[string]string {
	t.Helper()
	args := append([]string{"list", "-export", "-deps", "-f", "{{if .Export}}{{.ImportPath}}={{.Export}}{{end}}"}, pkgs...)
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "GOPROXY=off")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	exports := map[string]string{}
	for line := range strings.Lines(string(out)) {
		path, file, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok {
			exports[path] = file
		}
	}
	return exports
}
