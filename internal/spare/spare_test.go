package spare

import (
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSlot(t *testing.T) {
	var s Slot[int]
	if s.Get() != nil {
		t.Fatal("a new slot holds a value")
	}
	a, b := new(int), new(int)
	if !s.Put(a) {
		t.Fatal("an empty slot refused a value")
	}
	if s.Put(b) {
		t.Fatal("a full slot took a second value")
	}
	if got := s.Get(); got != a {
		t.Fatalf("Get = %p, want the value put, %p", got, a)
	}
	if s.Get() != nil {
		t.Fatal("a value was taken twice")
	}
}

// TestSlotConcurrent: values put and taken from many goroutines are each
// taken at most once, and every value is either taken or refused.
func TestSlotConcurrent(t *testing.T) {
	var s Slot[int]
	const n = 1000
	var mu sync.Mutex
	seen := make(map[*int]int)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				x := new(int)
				*x = g*n + i
				kept := s.Put(x)
				got := s.Get()
				mu.Lock()
				if !kept {
					seen[x]++ // refused: counts as accounted for
				}
				if got != nil {
					seen[got]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if got := s.Get(); got != nil {
		seen[got]++
	}
	if len(seen) != 4*n {
		t.Errorf("%d values accounted for, want %d", len(seen), 4*n)
	}
	for x, k := range seen {
		if k != 1 {
			t.Errorf("value %d accounted for %d times", *x, k)
		}
	}
}
