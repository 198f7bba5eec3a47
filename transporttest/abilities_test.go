package transporttest_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/zerodial/transport"
	"github.com/zerodial/transport/memory"
	"github.com/zerodial/transport/tcp"
	"github.com/zerodial/transport/transporttest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// closing returns tr and closes it when the test ends.
func closing(t *testing.T, tr transport.Transport) transport.Transport {
	t.Cleanup(func() { tr.Close() })
	return tr
}

// TestForgetfulWrappersCovered: every ability has its forgetful wrapper.
func TestForgetfulWrappersCovered(t *testing.T) {
	var covered transporttest.Abilities
	for _, f := range forgetfuls {
		assert.False(t, covered.Has(f.forgets), "%v twice", f.forgets)
		covered |= f.forgets
	}
	for b := transporttest.TransportFrameLimiter; b <= transporttest.SocketPeerCredReporter; b <<= 1 {
		assert.True(t, covered.Has(b), "no wrapper forgets %v", b)
	}
}

// TestCheckAbilitiesOfTheInner: the Transports the wrappers wrap have
// exactly what the wrappers claim for them.
func TestCheckAbilitiesOfTheInner(t *testing.T) {
	require.NoError(t, transporttest.CheckAbilities(closing(t, memory.New()), "", memoryHas))
	require.NoError(t, transporttest.CheckAbilities(closing(t, tcp.New()), "127.0.0.1:0", tcpHas))
	has, err := transporttest.AbilitiesOf(closing(t, tcp.New()), "127.0.0.1:0")
	require.NoError(t, err)
	assert.Equal(t, tcpHas, has, "AbilitiesOf(tcp): %v", has)
}

// TestCheckAbilitiesNamesWhatAWrapperForgets: for each optional interface,
// a wrapper that passes on all but it fails CheckAbilities against what
// its inner Transport has, with an error that names that interface, and
// that one alone, where it is missing; AbilitiesOf sees it missing.
func TestCheckAbilitiesNamesWhatAWrapperForgets(t *testing.T) {
	for _, f := range forgetfuls {
		t.Run(f.forgets.String(), func(t *testing.T) {
			w := closing(t, f.wrap())
			err := transporttest.CheckAbilities(w, f.addr, f.has)
			require.Error(t, err, "a wrapper that forgets %s", f.iface)
			lines := strings.Split(err.Error(), "\n")
			for _, line := range lines {
				assert.Contains(t, line, "does not implement "+f.iface+", which it claims", "the error names another interface")
			}
			// A Socket's is missing on both ends, anything else's once.
			want := 1
			if strings.HasPrefix(f.forgets.String(), "Socket") {
				want = 2
			}
			assert.Len(t, lines, want, "%v", err)
			t.Log(err)

			has, err := transporttest.AbilitiesOf(w, f.addr)
			require.NoError(t, err)
			assert.Equal(t, f.has&^f.forgets, has, "AbilitiesOf: %v", has)
		})
	}
}

// TestCheckAbilitiesNamesWhatIsNotClaimed: an ability present and not
// claimed fails too, naming it, so that a Transport's claims, which a
// wrapper of it copies, are whole.
func TestCheckAbilitiesNamesWhatIsNotClaimed(t *testing.T) {
	err := transporttest.CheckAbilities(closing(t, memory.New()), "", memoryHas&^transporttest.ListenerClosedReporter)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Listener (*memory.listener) implements transport.ClosedReporter, which it does not claim: add transporttest.ListenerClosedReporter")
	assert.Len(t, strings.Split(err.Error(), "\n"), 1, "%v", err)
}

// childEnv makes the test binary run TestRunFailsForgetfulWrappers's
// child: the suite against every forgetful wrapper, which must fail.
const childEnv = "TRANSPORTTEST_FORGETFUL_CHILD"

// TestRunFailsForgetfulWrappers: Run itself, not only CheckAbilities,
// fails a wrapper that forgets an interface, in its Abilities case, with
// a message naming it. The failing runs are a child process's (this test
// binary, run again), since a failed subtest would fail this test.
func TestRunFailsForgetfulWrappers(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		for _, f := range forgetfuls {
			t.Run(f.forgets.String(), func(t *testing.T) {
				transporttest.Run(t, func(t *testing.T) (transport.Transport, string) {
					return f.wrap(), f.addr
				}, f.has)
			})
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunFailsForgetfulWrappers$/.*/^Abilities$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the suite passed wrappers that forget an interface:\n%s", out)

	// The child's output, a section per wrapper's Abilities case.
	sections := regexp.MustCompile(`(?m)^=== RUN   TestRunFailsForgetfulWrappers/([^/\n]+)/Abilities$`).FindAllStringSubmatchIndex(string(out), -1)
	require.Len(t, sections, len(forgetfuls), "the child ran an Abilities case per wrapper:\n%s", out)
	for i, f := range forgetfuls {
		name := f.forgets.String()
		s := sections[i]
		end := len(out)
		if i+1 < len(sections) {
			end = sections[i+1][0]
		}
		require.Equal(t, name, string(out[s[2]:s[3]]))
		section := string(out[s[0]:end])
		assert.Contains(t, string(out), "--- FAIL: TestRunFailsForgetfulWrappers/"+name+"/Abilities", "Run passed a wrapper that forgets %s", f.iface)
		assert.Contains(t, section, "does not implement "+f.iface+", which it claims", "Run's failure does not name %s", f.iface)
	}
}
