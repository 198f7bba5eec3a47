package mux

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writesConn records each Write it is given.
type writesConn struct {
	net.Conn
	writes [][]byte
}

func (w *writesConn) Write(b []byte) (int, error) {
	w.writes = append(w.writes, append([]byte(nil), b...))
	return len(b), nil
}

func yamuxHeader(typ byte, flags uint16, id, length uint32) []byte {
	h := []byte{protoVersion, typ}
	h = binary.BigEndian.AppendUint16(h, flags)
	h = binary.BigEndian.AppendUint32(h, id)
	return binary.BigEndian.AppendUint32(h, length)
}

// TestTapConnJoinsHeaderAndBody: a data frame's header and body leave in
// one write; frames without a body leave at once, unchanged.
func TestTapConnJoinsHeaderAndBody(t *testing.T) {
	w := &writesConn{}
	tc := newTapConn(w, newTracker())

	update := yamuxHeader(typeWindowUpd, 0, 1, 4096)
	n, err := tc.Write(update)
	require.NoError(t, err)
	assert.Equal(t, hdrLen, n)
	require.Len(t, w.writes, 1, "a window update has no body: it is not held")

	hdr := yamuxHeader(typeData, 0, 1, 5)
	n, err = tc.Write(hdr)
	require.NoError(t, err)
	assert.Equal(t, hdrLen, n)
	assert.Len(t, w.writes, 1, "the data header waits for its body")
	n, err = tc.Write([]byte("hello"))
	require.NoError(t, err)
	assert.Equal(t, 5, n)
	require.Len(t, w.writes, 2)
	assert.Equal(t, append(hdr, "hello"...), w.writes[1], "header and body in one write")

	// A data frame with no payload (a bare SYN or FIN) is not held.
	fin := yamuxHeader(typeData, flagFIN, 1, 0)
	_, err = tc.Write(fin)
	require.NoError(t, err)
	require.Len(t, w.writes, 3)
	assert.Equal(t, fin, w.writes[2])
}
