package baseline

import (
	"sync"
	"sync/atomic"

	"github.com/flashindexer/flashindexer/flash"
	"github.com/flashindexer/flashindexer/flash/model"
)

// state is an index a wrapper serializes: it hears content changes from the
// front and answers queries.
type state interface {
	model.Sink
	// find writes every worker's depth for q into dst; seqs are q's sequence
	// hashes, blocks gives a worker's block count.
	find(q flash.Query, seqs []flash.SeqHash, dst *flash.Scores, tokens int, blocks func(flash.Worker) int)
}

// locked serializes writers with an RWMutex; queries share the read lock.
type locked struct {
	mu       sync.RWMutex
	front    *model.Front
	st       state
	tokens   int
	closed   bool
	counters flash.Counters
}

func newLocked(cfg flash.Config, st state) *locked {
	l := &locked{st: st, tokens: cfg.Normalize().BlockSize}
	l.front = model.NewFront(cfg, &l.counters, nil)
	return l
}

func (l *locked) Apply(ev flash.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		l.counters.Reject(flash.ErrClosed)
		return flash.ErrClosed
	}
	return l.front.Apply(&ev, l.st)
}

func (l *locked) FindMatches(q flash.Query, dst *flash.Scores) {
	dst.Reset()
	l.counters.Add(flash.CounterQueries, 1)
	l.counters.Add(flash.CounterQueryBlocks, uint64(len(q.Locals)))
	if len(q.Locals) == 0 {
		return
	}
	seqs := model.SeqsOf(q, dst)
	l.mu.RLock()
	defer l.mu.RUnlock()
	l.st.find(q, seqs, dst, l.tokens, l.front.BlockCount)
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
	front    *model.Front
	st       state
	tokens   int
	inbox    chan request
	sendMu   sync.RWMutex // senders hold it shared; Close takes it to stop sends
	closed   atomic.Bool
	done     chan struct{}
	counters flash.Counters
	replies  sync.Pool
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
	a := &actor{st: st, tokens: cfg.Normalize().BlockSize, inbox: make(chan request, actorQueue), done: make(chan struct{})}
	a.front = model.NewFront(cfg, &a.counters, nil)
	a.replies.New = func() any { return make(chan struct{}, 1) }
	go a.loop()
	return a
}

func (a *actor) loop() {
	defer close(a.done)
	for r := range a.inbox {
		switch r.kind {
		case reqEvent:
			_ = a.front.Apply(&r.ev, a.st)
		case reqFind:
			a.st.find(r.q, model.SeqsOf(r.q, r.dst), r.dst, a.tokens, a.front.BlockCount)
		case reqRemoveWorker:
			a.front.RemoveWorker(r.id, a.st)
		case reqBlockCount:
			*r.n = a.front.BlockCount(r.w)
		case reqStop:
			r.reply <- struct{}{}
			return
		}
		if r.reply != nil {
			r.reply <- struct{}{}
		}
	}
}

// send queues r; with wait it returns after the actor handled it. It
// reports false after Close.
func (a *actor) send(r request, wait bool) bool {
	a.sendMu.RLock()
	if a.closed.Load() {
		a.sendMu.RUnlock()
		return false
	}
	if wait {
		r.reply = a.replies.Get().(chan struct{})
	}
	a.inbox <- r
	a.sendMu.RUnlock()
	if wait {
		<-r.reply
		a.replies.Put(r.reply)
	}
	return true
}

func (a *actor) Apply(ev flash.Event) error {
	// The actor owns what it is sent: copy the caller's slices.
	ev.Blocks = append([]flash.Block(nil), ev.Blocks...)
	ev.Hashes = append([]flash.ExternalHash(nil), ev.Hashes...)
	if !a.send(request{kind: reqEvent, ev: ev}, false) {
		a.counters.Reject(flash.ErrClosed)
		return flash.ErrClosed
	}
	return nil
}

func (a *actor) FindMatches(q flash.Query, dst *flash.Scores) {
	dst.Reset()
	a.counters.Add(flash.CounterQueries, 1)
	a.counters.Add(flash.CounterQueryBlocks, uint64(len(q.Locals)))
	if len(q.Locals) == 0 {
		return
	}
	if !a.send(request{kind: reqFind, q: q, dst: dst}, true) {
		// Closed: the state is final and the actor gone; answer directly.
		<-a.done
		a.st.find(q, model.SeqsOf(q, dst), dst, a.tokens, a.front.BlockCount)
	}
}

func (a *actor) RemoveWorker(id uint64) error {
	if !a.send(request{kind: reqRemoveWorker, id: id}, false) {
		a.counters.Reject(flash.ErrClosed)
		return flash.ErrClosed
	}
	return nil
}

func (a *actor) BlockCount(w flash.Worker) int {
	n := 0
	if !a.send(request{kind: reqBlockCount, w: w, n: &n}, true) {
		<-a.done
		return a.front.BlockCount(w)
	}
	return n
}

func (a *actor) Flush()             { a.send(request{kind: reqFlush}, true) }
func (a *actor) Stats() flash.Stats { return a.counters.Snapshot() }

func (a *actor) Close() error {
	a.sendMu.Lock()
	if a.closed.Swap(true) {
		a.sendMu.Unlock()
		return flash.ErrClosed
	}
	a.sendMu.Unlock()
	reply := make(chan struct{}, 1)
	a.inbox <- request{kind: reqStop, reply: reply}
	<-reply
	<-a.done
	return nil
}
