package membroker

import "sync"

// mailbox is an unbounded queue with one reader: the broker puts under its
// own lock and never waits; the reader's goroutine takes in order and does
// the waiting (a send to a client's channel). The reader waits on kick, a
// channel, so that a bubble of testing/synctest sees it durably blocked.
type mailbox[T any] struct {
	mu    sync.Mutex
	items []T
	kick  chan struct{}
}

func newMailbox[T any]() *mailbox[T] { return &mailbox[T]{kick: make(chan struct{}, 1)} }

func (m *mailbox[T]) put(v T) {
	m.mu.Lock()
	m.items = append(m.items, v)
	m.mu.Unlock()
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

func (m *mailbox[T]) take() (T, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var zero T
	if len(m.items) == 0 {
		return zero, false
	}
	v := m.items[0]
	m.items[0] = zero
	m.items = m.items[1:]
	return v, true
}

// drain removes and returns everything not yet taken.
func (m *mailbox[T]) drain() []T {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.items
	m.items = nil
	return out
}

func (m *mailbox[T]) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.items)
}
