package mqtt

import (
	"errors"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/internal/testkit"
)

// flakyHasher: HSetDel fails at random and takes a random moment; it
// notes what it wrote and removed, and panics at the removal of what it
// never wrote.
type flakyHasher struct {
	*testkit.Hasher
	fail  atomic.Int32 // percent
	mu    sync.Mutex
	wrote map[string]bool
	deld  map[string]bool
}

func (h *flakyHasher) HSetDel(key string, fields []string, values [][]byte, del []string) error {
	time.Sleep(time.Duration(rand.Intn(3000)) * time.Microsecond)
	if rand.Int31n(100) < h.fail.Load() {
		return errors.New("flaky")
	}
	h.mu.Lock()
	for _, f := range fields {
		h.wrote[f] = true
	}
	for _, f := range del {
		if !h.wrote[f] {
			panic("deleted a never-written message " + f)
		}
		h.deld[f] = true
	}
	h.mu.Unlock()
	for i := range fields {
		h.HSet(key, fields[i], values[i])
	}
	if len(del) > 0 {
		h.HDel(key, del...)
	}
	return nil
}

// TestOutboxUnderAFlakyStore drives the outbox's writer and a sender of
// random pace against a store whose writes fail at random (0-60 %) and
// take a random moment, with random write-behind times: a wait that ends
// without error has its message taken by the broker or written; no wait
// hangs; nothing never written is removed (flakyHasher panics); once the
// store recovers, nothing taken is left in it. Written by a review of
// the write-behind outbox.
func TestOutboxUnderAFlakyStore(t *testing.T) {
	for round := 0; round < 30; round++ {
		h := &flakyHasher{Hasher: &testkit.Hasher{}, wrote: map[string]bool{}, deld: map[string]bool{}}
		h.fail.Store(int32(rand.Intn(60)))
		o := newOutbox(h, "x", 100000, 1<<30, testkit.LogTo(t))
		o.behind = time.Duration(rand.Intn(3000)) * time.Microsecond
		var takenMu sync.Mutex
		takenSet := map[string]bool{}
		stop := make(chan struct{})
		senderDone := make(chan struct{})
		go func() { // a sender: takes ready messages after a random moment
			defer close(senderDone)
			busy := map[string]bool{}
			for {
				select {
				case <-stop:
					return
				default:
				}
				ms := o.ready(8, 64, busy)
				for _, m := range ms {
					time.Sleep(time.Duration(rand.Intn(1500)) * time.Microsecond)
					if o.isGone(m) {
						continue
					}
					takenMu.Lock()
					takenSet[m.ID] = true
					takenMu.Unlock()
					o.taken(m)
				}
				if len(ms) == 0 {
					o.flush()
					time.Sleep(200 * time.Microsecond)
				}
			}
		}()
		var wg sync.WaitGroup
		type res struct {
			id  string
			err error
		}
		results := make(chan res, 4000)
		for p := 0; p < 4; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 200; i++ {
					m := &message{V: outboxVersion, ID: bus.NewID(), Topic: "t/" + string(rune('a'+rand.Intn(4))), Payload: []byte(`{}`), QoS: 1}
					w, err := o.addLater(m)
					if err != nil {
						t.Error(err)
						return
					}
					go func() {
						done := make(chan error, 1)
						go func() { done <- w() }()
						select {
						case err := <-done:
							results <- res{m.ID, err}
						case <-time.After(20 * time.Second):
							t.Errorf("a wait hung")
							results <- res{m.ID, errors.New("hung")}
						}
					}()
					if rand.Intn(10) == 0 {
						time.Sleep(time.Duration(rand.Intn(3000)) * time.Microsecond)
					}
				}
			}()
		}
		wg.Wait()
		for i := 0; i < 800; i++ {
			r := <-results
			if r.err != nil {
				continue
			}
			takenMu.Lock()
			tk := takenSet[r.id]
			takenMu.Unlock()
			h.mu.Lock()
			wr := h.wrote[r.id]
			h.mu.Unlock()
			if !tk && !wr {
				t.Fatalf("round %d: a wait ended nil for a message neither taken nor written", round)
			}
		}
		close(stop)
		<-senderDone
		o.close(testkit.LogTo(t))
		h.fail.Store(0)
		o.mu.Lock()
		o.closed = false
		o.mu.Unlock()
		o.flush()
		o.close(testkit.LogTo(t))
		// written then taken must be gone from the store
		takenMu.Lock()
		h.mu.Lock()
		all, _ := h.HGetAll(o.key)
		for id := range all {
			if takenSet[id] {
				t.Errorf("round %d: %s taken but left in the store", round, id)
			}
		}
		h.mu.Unlock()
		takenMu.Unlock()
	}
}
