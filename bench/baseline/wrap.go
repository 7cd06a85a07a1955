package baseline

import (
	"sync"
	"sync/atomic"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/model"
)

// state is an index a wrapper serializes: it hears content changes, and the
// fastest tier of each content, from the front and answers queries.
type state interface {
	model.TierSink
	// find writes every worker's depths for q into a; seqs are q's
	// sequence hashes.
	find(q flash.Query, seqs []flash.SeqHash, a *answer)
}

// locked serializes writers with an RWMutex; queries share the read lock.
type locked struct {
	mu       sync.RWMutex
	front    *model.Front
	st       state
	cfg      flash.Config
	closed   bool
	counters model.Counters
}

func newLocked(cfg flash.Config, st state) *locked {
	l := &locked{st: st, cfg: cfg.Normalize()}
	l.front = model.NewFront(cfg, &l.counters, nil)
	return l
}

func (l *locked) Apply(ev flash.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.counters.RejectEvent(ev.Kind, flash.ErrClosed)
		return flash.ErrClosed
	}
	return l.front.Apply(&ev, l.st)
}

func (l *locked) FindMatches(q flash.Query, dst *flash.Scores) {
	dst.Reset()
	defer l.counters.CountHit(dst)
	if !countQuery(&l.counters, q) {
		return
	}
	seqs := model.SeqsOf(q)
	l.mu.RLock()
	defer l.mu.RUnlock()
	a := newAnswer(dst, &l.cfg, l.front.BlockCount)
	l.st.find(q, seqs, &a)
}

func (l *locked) RemoveWorker(id uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.counters.Reject(flash.ErrClosed)
		return flash.ErrClosed
	}
	l.front.RemoveWorker(id, l.st)
	return nil
}

func (l *locked) BlockCount(w flash.Worker) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.front.BlockCount(w)
}

func (l *locked) Flush()             {}
func (l *locked) Stats() flash.Stats { return l.counters.Snapshot() }

func (l *locked) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return flash.ErrClosed
	}
	l.closed = true
	return nil
}

// actor owns its state on one goroutine; every call is a message, so
// queries wait behind the events queued before them.
type actor struct {
	mailbox
	front    *model.Front
	st       state
	cfg      flash.Config
	inbox    chan request
	done     chan struct{}
	counters model.Counters
}

// mailbox sends requests to goroutines that own state (an actor, a sticky
// writer) and stops sends for good at Close.
type mailbox struct {
	sendMu  sync.RWMutex // senders hold it shared; close takes it to stop sends
	closed  atomic.Bool
	replies sync.Pool
}

// send queues r on inbox; with wait it returns after the owner handled it.
// It reports false once the mailbox is closed.
func (m *mailbox) send(inbox chan request, r request, wait bool) bool {
	m.sendMu.RLock()
	if m.closed.Load() {
		m.sendMu.RUnlock()
		return false
	}
	if wait {
		if c, ok := m.replies.Get().(chan struct{}); ok {
			r.reply = c
		} else {
			r.reply = make(chan struct{}, 1)
		}
	}
	inbox <- r
	m.sendMu.RUnlock()
	if wait {
		<-r.reply
		m.replies.Put(r.reply)
	}
	return true
}

// post sends r without waiting; after close it counts and returns ErrClosed.
func (m *mailbox) post(inbox chan request, r request, c *model.Counters) error {
	if !m.send(inbox, r, false) {
		if r.kind == reqEvent {
			c.RejectEvent(r.ev.Kind, flash.ErrClosed)
		} else {
			c.Reject(flash.ErrClosed)
		}
		return flash.ErrClosed
	}
	return nil
}

// close stops later sends; it reports false if it was closed already.
func (m *mailbox) close() bool {
	m.sendMu.Lock()
	defer m.sendMu.Unlock()
	return !m.closed.Swap(true)
}

// stop asks the owner of inbox to return and waits for its answer.
func stop(inbox chan request) {
	reply := make(chan struct{}, 1)
	inbox <- request{kind: reqStop, reply: reply}
	<-reply
}

// owned returns ev with its own copies of the caller's slices: a request
// outlives Apply, and the caller may reuse its buffers at once.
func owned(ev flash.Event) flash.Event {
	ev.Blocks = append([]flash.Block(nil), ev.Blocks...)
	ev.Hashes = append([]flash.ExternalHash(nil), ev.Hashes...)
	return ev
}

// countQuery counts q and reports whether it has blocks to look up.
func countQuery(c *model.Counters, q flash.Query) bool {
	c.Add(model.CounterQueries, 1)
	c.Add(model.CounterQueryBlocks, uint64(len(q.Locals)))
	return len(q.Locals) > 0
}

type requestKind uint8

const (
	reqEvent requestKind = iota
	reqFind
	reqRemoveWorker
	reqBlockCount
	reqFlush
	reqStop
)

type request struct {
	kind  requestKind
	ev    flash.Event
	q     flash.Query
	dst   *flash.Scores
	id    uint64
	w     flash.Worker
	n     *int
	reply chan struct{}
}

// actorQueue: events queue up to this many before Apply waits, as a bounded
// channel of an actor would.
const actorQueue = 1024

func newActor(cfg flash.Config, st state) *actor {
	a := &actor{st: st, cfg: cfg.Normalize(), inbox: make(chan request, actorQueue), done: make(chan struct{})}
	a.front = model.NewFront(cfg, &a.counters, nil)
	go a.loop()
	return a
}

func (a *actor) loop() {
	defer close(a.done)
	serve(a.inbox, a.front, a.st, a.find)
}

func (a *actor) find(r *request) {
	ans := newAnswer(r.dst, &a.cfg, a.front.BlockCount)
	a.st.find(r.q, model.SeqsOf(r.q), &ans)
}

// serve is an owner goroutine's loop: it applies inbox's requests to front,
// telling sink of content changes, and answers each that waits for a reply,
// until reqStop. find answers reqFind (nil where none arrive).
func serve(inbox chan request, front *model.Front, sink model.Sink, find func(*request)) {
	for r := range inbox {
		switch r.kind {
		case reqEvent:
			_ = front.Apply(&r.ev, sink)
		case reqFind:
			find(&r)
		case reqRemoveWorker:
			front.RemoveWorker(r.id, sink)
		case reqBlockCount:
			*r.n = front.BlockCount(r.w)
		case reqStop:
			r.reply <- struct{}{}
			return
		}
		if r.reply != nil {
			r.reply <- struct{}{}
		}
	}
}

func (a *actor) Apply(ev flash.Event) error {
	return a.post(a.inbox, request{kind: reqEvent, ev: owned(ev)}, &a.counters)
}

func (a *actor) FindMatches(q flash.Query, dst *flash.Scores) {
	dst.Reset()
	defer a.counters.CountHit(dst)
	if !countQuery(&a.counters, q) {
		return
	}
	if !a.send(a.inbox, request{kind: reqFind, q: q, dst: dst}, true) {
		// Closed: the state is final and the actor gone; answer directly.
		<-a.done
		a.find(&request{q: q, dst: dst})
	}
}

func (a *actor) RemoveWorker(id uint64) error {
	return a.post(a.inbox, request{kind: reqRemoveWorker, id: id}, &a.counters)
}

func (a *actor) BlockCount(w flash.Worker) int {
	n := 0
	if !a.send(a.inbox, request{kind: reqBlockCount, w: w, n: &n}, true) {
		<-a.done
		return a.front.BlockCount(w)
	}
	return n
}

func (a *actor) Flush()             { a.send(a.inbox, request{kind: reqFlush}, true) }
func (a *actor) Stats() flash.Stats { return a.counters.Snapshot() }

func (a *actor) Close() error {
	if !a.close() {
		return flash.ErrClosed
	}
	stop(a.inbox)
	<-a.done
	return nil
}
