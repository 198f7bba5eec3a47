package deadlinerec

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The deadline recorded is the last one set, by either setter, and is set
// on the connection underneath too.
func TestConnRecordsReadDeadline(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	c := &Conn{Conn: a}
	defer c.Close()
	assert.True(t, c.ReadDeadline().IsZero())

	past := time.Now().Add(-time.Second)
	assert.NoError(t, c.SetReadDeadline(past))
	assert.Equal(t, past, c.ReadDeadline())
	_, err := c.Read(make([]byte, 1))
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "the deadline reached the connection")

	assert.NoError(t, c.SetDeadline(time.Time{}))
	assert.True(t, c.ReadDeadline().IsZero())
}
