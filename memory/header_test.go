package memory

import (
	"fmt"
	"maps"
	"testing"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/internal/frame"
)

// TestCopyHeader: whatever dst held before, it holds src's entries alone
// afterwards, and the size returned is frame.HeaderLen's.
func TestCopyHeader(t *testing.T) {
	for _, src := range []map[string]string{
		{"Service-Method": "Arith.Multiply", "Seq": "7"}, // copyCallHeader's
		{"Service-Method": "Arith.Multiply", "Seq": "7", "Timeout": "5"},
		{"Service-Method": "Arith.Multiply", "Error": "no"},
		{"Seq": "7", "Md-k": "v"},
		{"Seq": "7"},
	} {
		testCopyHeader(t, src)
	}
	dst := map[string]string{"k": "v"}
	if n := copyHeader(dst, nil); n != 0 || len(dst) != 0 {
		t.Errorf("copying an empty header left %v, size %d", dst, n)
	}
}

func testCopyHeader(t *testing.T, src map[string]string) {
	for _, tc := range []struct {
		name string
		dst  map[string]string
	}{
		{"empty", map[string]string{}},
		{"same keys", map[string]string{"Service-Method": "old", "Seq": "1"}},
		{"one key more", map[string]string{"Service-Method": "old", "Seq": "1", "Timeout": "5"}},
		{"other keys, as many", map[string]string{"Service-Method": "old", "Error": "no"}},
		{"other keys, fewer", map[string]string{"Error": "no"}},
		{"one of the same keys and another", map[string]string{"Seq": "1", "Md-k": "v"}},
	} {
		t.Run(fmt.Sprint(len(src), " keys, ", tc.name), func(t *testing.T) {
			n := copyHeader(tc.dst, src)
			if !maps.Equal(tc.dst, src) {
				t.Errorf("dst = %v, want %v", tc.dst, src)
			}
			if want := frame.HeaderLen(src); n != want {
				t.Errorf("size %d, want %d", n, want)
			}
		})
	}
}

// TestRecycle: the end that receives a message keeps the copy as its spare
// for its own next Send, unless the copy's body buffer is over
// maxSpareBody, which goes back to the pool instead.
func TestRecycle(t *testing.T) {
	a, b := pair(Addr("a"), Addr("b"), 1<<20)
	defer a.Close()
	defer b.Close()
	var m transport.Message
	for _, tc := range []struct {
		recvBody int // cap of the receiver's body buffer before the Recv
		kept     bool
	}{{0, true}, {maxSpareBody, true}, {maxSpareBody + 1, false}} {
		m.Body = make([]byte, 0, tc.recvBody)
		if err := a.Send(&transport.Message{Header: map[string]string{"Seq": "1"}, Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		if err := b.Recv(&m); err != nil {
			t.Fatal(err)
		}
		c := b.spare.Get()
		if (c != nil) != tc.kept {
			t.Errorf("receiver's buffer of %d bytes: spare %v, want kept %v", tc.recvBody, c, tc.kept)
		}
		if string(m.Body) != "x" || m.Header["Seq"] != "1" {
			t.Errorf("received %q, %v", m.Body, m.Header)
		}
	}
}
