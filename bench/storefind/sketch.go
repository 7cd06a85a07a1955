package storefind

import (
	"math/bits"

	"github.com/flashindexer/flashindexer/flash"
)

// Sketch is the lean layout the write path is measured against besides the
// nested map: the least an index of this kind keeps, with none of Flash's
// guarantees. One open-addressed map per worker from engine id to sequence
// hash (what a Removed event needs to find the content again), one shared
// open-addressed map from sequence hash to the set of workers holding it (a
// word up to 64 workers; past that, the index of a row in a bit array), and
// nothing else: no validation (a block under an unknown parent goes to
// position 0's chain, a second engine id for one content is a second key),
// no positions (a sequence hash names one content), no removal with
// re-attachment, no snapshot, no concurrent readers. It stores and finds
// what Flash stores and finds on Stored events, so the yardstick can be
// checked against Flash (TestStoreFind_Agree); it is not an index.
type Sketch struct {
	words   int // words in a worker set
	hint    int
	workers map[uint64]*sketchWorker
	shared  oaMap // sequence hash → set word, or row index
	rows    []uint64
}

type sketchWorker struct {
	slot int
	ids  oaMap // engine id → sequence hash
}

// NewSketch returns an empty sketch for wl's workers; with hint > 0 every
// worker is declared ahead with its map made for hint blocks, and the
// shared map for the workers' hints together.
func NewSketch(wl *Workload, hint int) *Sketch {
	s := &Sketch{words: (wl.Workers + 63) / 64, hint: hint, workers: map[uint64]*sketchWorker{}}
	if hint > 0 {
		for w := range wl.Workers {
			s.worker(uint64(w))
		}
		s.shared.init(wl.Workers * hint)
	} else {
		s.shared.init(0)
	}
	return s
}

func (s *Sketch) worker(id uint64) *sketchWorker {
	w := s.workers[id]
	if w == nil {
		w = &sketchWorker{slot: len(s.workers)}
		w.ids.init(s.hint)
		s.workers[id] = w
	}
	return w
}

// Store applies Stored event ev.
func (s *Sketch) Store(ev *flash.Event) {
	w := s.worker(ev.Worker.ID)
	var prev uint64
	pos := 0
	if ev.HasParent {
		if v, ok := w.ids.get(uint64(ev.Parent)); ok {
			prev, pos = v, 1
		}
	}
	word, bit := w.slot>>6, uint64(1)<<(w.slot&63)
	for i, b := range ev.Blocks {
		seq := uint64(b.Local)
		if pos+i > 0 {
			seq = uint64(flash.Chain(flash.SeqHash(prev), b.Local))
		}
		prev = seq
		v, had := w.ids.put(uint64(b.Hash))
		if had {
			continue
		}
		*v = seq
		e, had := s.shared.put(seq)
		if s.words == 1 {
			*e |= bit
			continue
		}
		if !had {
			*e = uint64(len(s.rows) / s.words)
			s.rows = append(s.rows, make([]uint64, s.words)...)
		}
		s.rows[int(*e)*s.words+word] |= bit
	}
}

// Find writes into dst every worker holding a prefix of q, with its depth.
func (s *Sketch) Find(q flash.Query, dst *flash.Scores) {
	dst.Reset()
	live := make([]uint64, s.words) // a yardstick's find: not timed
	for i := range live {
		live[i] = ^uint64(0)
	}
	ids := make([]uint64, len(s.workers))
	for id, w := range s.workers {
		ids[w.slot] = id
	}
	report := func(gone []uint64, d int) {
		for k, g := range gone {
			for ; g != 0; g &= g - 1 {
				slot := k<<6 | bits.TrailingZeros64(g)
				if slot < len(ids) && d > 0 {
					dst.Matches = append(dst.Matches, flash.Match{Worker: flash.Worker{ID: ids[slot]}, Depth: d})
				}
			}
		}
	}
	for d, seq := range q.Seqs {
		set := make([]uint64, s.words)
		if v, ok := s.shared.get(uint64(seq)); ok {
			if s.words == 1 {
				set[0] = v
			} else {
				copy(set, s.rows[int(v)*s.words:])
			}
		}
		gone := make([]uint64, s.words)
		more := false
		for k := range live {
			gone[k] = live[k] &^ set[k]
			live[k] &= set[k]
			more = more || live[k] != 0
		}
		report(gone, d)
		if !more {
			return
		}
	}
	report(live, len(q.Seqs))
}

// oaMap is an open-addressed map of uint64 keys and values, linear probing,
// a key and its value in one 16-byte slot, grown 2× past 3/4 full.
type oaMap struct {
	s     []oaSlot
	n     int
	shift uint // 64 - log2(len(s))
	zero  bool // key 0 is kept apart
	zv    uint64
}

type oaSlot struct{ k, v uint64 }

// init gives m room for n keys before it grows. The pages of a map made
// for keys to come (a hint's) are written now, as Flash's are, so that
// filling it takes no page faults.
func (m *oaMap) init(n int) {
	c := 8
	for c*3/4 < n {
		c *= 2
	}
	m.s = make([]oaSlot, c)
	m.shift = uint(64 - bits.TrailingZeros(uint(c)))
	m.n = 0
	if n > 0 {
		for i := 0; i < c; i += 4096 / 16 {
			m.s[i].k = 0
		}
	}
}

func (m *oaMap) home(k uint64) int { return int(k * 0x9E3779B97F4A7C15 >> m.shift) }

func (m *oaMap) get(k uint64) (uint64, bool) {
	if k == 0 {
		return m.zv, m.zero
	}
	mask := len(m.s) - 1
	for i := m.home(k); ; i = (i + 1) & mask {
		switch m.s[i].k {
		case k:
			return m.s[i].v, true
		case 0:
			return 0, false
		}
	}
}

// put returns k's value and whether k was there; a new key's value is 0.
func (m *oaMap) put(k uint64) (*uint64, bool) {
	if k == 0 {
		had := m.zero
		m.zero = true
		return &m.zv, had
	}
	if (m.n+1)*4 > len(m.s)*3 {
		m.grow()
	}
	mask := len(m.s) - 1
	for i := m.home(k); ; i = (i + 1) & mask {
		switch m.s[i].k {
		case k:
			return &m.s[i].v, true
		case 0:
			m.s[i].k = k
			m.n++
			return &m.s[i].v, false
		}
	}
}

func (m *oaMap) grow() {
	old := m.s
	m.s = make([]oaSlot, 2*len(old))
	m.shift--
	mask := len(m.s) - 1
	for _, e := range old {
		if e.k == 0 {
			continue
		}
		i := m.home(e.k)
		for m.s[i].k != 0 {
			i = (i + 1) & mask
		}
		m.s[i] = e
	}
}
