package dispatch

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zerodial/transport"
)

// The meter counts each request's bytes from begin, lets a request read up
// to its limit and no more, and then fails every Read with
// ErrFrameTooLarge, whatever the reader holds.
func TestRequestMeter(t *testing.T) {
	src := bytes.NewReader(bytes.Repeat([]byte{'x'}, 100))
	m := &requestMeter{r: src, limit: 10}

	m.begin()
	buf := make([]byte, 4)
	n, err := io.ReadFull(m, buf)
	require.NoError(t, err)
	assert.Equal(t, 4, n)
	assert.EqualValues(t, 4, m.count())

	// A new request counts from zero, and may read its whole limit, in
	// a Read asking for more than that.
	m.begin()
	assert.EqualValues(t, 0, m.count())
	big := make([]byte, 64)
	n, err = m.Read(big)
	require.NoError(t, err)
	assert.Equal(t, 10, n, "a Read is cut to the limit")
	assert.EqualValues(t, 10, m.count())
	assert.NoError(t, m.tooLarge())

	// Wanting more than the limit fails, with the limit in the words, and
	// takes nothing more from the reader.
	n, err = m.Read(big)
	assert.Zero(t, n)
	require.ErrorIs(t, err, transport.ErrFrameTooLarge)
	assert.Contains(t, err.Error(), "limit 10")
	assert.Equal(t, 86, src.Len())
	assert.Equal(t, err, m.tooLarge())

	// The failure sticks: a later request reads nothing.
	m.begin()
	n, err = m.Read(big)
	assert.Zero(t, n)
	assert.ErrorIs(t, err, transport.ErrFrameTooLarge)
}

// The reader's own errors and short reads pass through, and count what was
// read.
func TestRequestMeterPassesReadsThrough(t *testing.T) {
	m := &requestMeter{r: iotest.OneByteReader(bytes.NewReader([]byte("abc"))), limit: 10}
	m.begin()
	got, err := io.ReadAll(m)
	require.NoError(t, err)
	assert.Equal(t, "abc", string(got))
	assert.EqualValues(t, 3, m.count())
	assert.NoError(t, m.tooLarge())

	boom := errors.New("boom")
	m = &requestMeter{r: iotest.ErrReader(boom), limit: 10}
	_, err = m.Read(make([]byte, 4))
	assert.ErrorIs(t, err, boom)
	assert.NoError(t, m.tooLarge())
}
