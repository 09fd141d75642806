package runtime

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/runtime/topology"
)

// Ordering headers of the wire contract, set on every fact whose [Fact]
// has an OrderingKey.
const (
	// HeaderOrderingKey carries the value of the fact's ordering key: a
	// string as is, an integer or boolean in its JSON spelling. An ordered
	// consumer's x-consistent-hash exchange hashes on it.
	HeaderOrderingKey = topology.OrderingKeyHeader
	// HeaderSequence numbers the facts of one key from one source, from 1
	// without gaps, as an integer; HeaderSequenceSource names the source
	// (a publisher instance, or an outbox table), since two sources number
	// independently. An ordered consumer compares consecutive facts of a
	// key from one source to detect a gap or a step back.
	HeaderSequence       = "x-ordering-seq"
	HeaderSequenceSource = "x-ordering-source"
)

// errNoOrderingKey is returned when a payload lacks its fact's ordering
// key; generated payload types always carry it (the generator checks that
// the key is a required scalar), so this means a hand-made Fact or raw JSON.
var errNoOrderingKey = errors.New("ordering key")

// OrderingKeyOf returns the value at pointer (a JSON pointer such as
// "/order_id") in a JSON payload, as the HeaderOrderingKey header carries
// it: a string as is, an integer or boolean in its JSON spelling.
func OrderingKeyOf(payload []byte, pointer string) (string, error) {
	raw := json.RawMessage(payload)
	for tok := range strings.SplitSeq(strings.TrimPrefix(pointer, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			return "", fmt.Errorf("%w %s: the payload has no object there", errNoOrderingKey, pointer)
		}
		var ok bool
		if raw, ok = obj[tok]; !ok {
			return "", fmt.Errorf("%w %s: missing from the payload", errNoOrderingKey, pointer)
		}
	}
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) > 0 && raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("%w %s: %w", errNoOrderingKey, pointer, err)
		}
		return s, nil
	case len(raw) == 0 || raw[0] == '{' || raw[0] == '[' || string(raw) == "null":
		return "", fmt.Errorf("%w %s: expected a string, integer or boolean, got %.20s", errNoOrderingKey, pointer, raw)
	}
	return string(raw), nil
}

// DefaultSequenceKeys is how many ordering keys a publisher remembers the
// last number of, by default ([WithSequenceKeys]).
const DefaultSequenceKeys = 100_000

// sequencer numbers the facts of each key a publisher sends, from 1. The
// numbers live in memory: a restarted publisher is a new source (its
// HeaderSequenceSource differs) and starts again at 1, which consumers
// read as a new sequence, not as a step back. For one sequence per key
// across processes, publish through the outbox, which numbers from the
// database.
//
// Memory is bounded by two generations of at most limit keys each: a key
// is numbered in the current generation, moved there from the previous
// one when it is published again, and forgotten when the previous
// generation is dropped (the current one being full), that is after limit
// other keys were published since it last was. A forgotten key starts
// again at 1 under the source of the generation it comes back in
// ("publisher:<id>.<generation>"), which is not the source it was numbered
// under before, so an ordered consumer starts a new sequence for it
// instead of reporting a step back; the cost is that a gap at that
// boundary (a fact of the key lost just before it was forgotten) is not
// detected.
type sequencer struct {
	base  string // "publisher:<random id>"
	limit int    // keys per generation
	mu    sync.Mutex
	gen   int64                // the current generation, from 1
	src   string               // its source: base.gen
	cur   map[string]keyNumber // keys published in this generation
	prev  map[string]keyNumber // keys of the previous generation not published since
}

// keyNumber is the last number of a key and the source (of the
// generation it was first numbered in) it is numbered under.
type keyNumber struct {
	source string
	n      int64
}

func newSequencer(limit int) *sequencer {
	var b [6]byte
	_, _ = rand.Read(b[:])
	if limit < 1 {
		limit = DefaultSequenceKeys
	}
	s := &sequencer{base: "publisher:" + hex.EncodeToString(b[:]), limit: limit, gen: 1, cur: map[string]keyNumber{}, prev: map[string]keyNumber{}}
	s.src = s.base + ".1"
	return s
}

// number returns the next number of key and the source it is numbered
// under.
func (s *sequencer) number(key string) (source string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.cur[key]
	if !ok {
		if k, ok = s.prev[key]; ok {
			delete(s.prev, key)
		} else {
			k = keyNumber{source: s.src}
		}
		if len(s.cur) >= s.limit {
			// Drop the previous generation: its keys were not published
			// while limit others were. This key, met before the drop, keeps
			// its number.
			s.prev, s.cur = s.cur, make(map[string]keyNumber, len(s.cur))
			s.gen++
			s.src = s.base + "." + strconv.FormatInt(s.gen, 10)
			if !ok {
				k.source = s.src
			}
		}
	}
	k.n++
	s.cur[key] = k
	return k.source, k.n
}

// giveBack returns number n of key, taken under source, when nothing of
// its fact reached the broker, so that the key's next fact takes it and
// an ordered consumer sees no gap where no fact is missing. It does so
// only while n is still the key's last number: once a later fact of the
// key was numbered (publishes of one key side by side), n stays spent.
func (s *sequencer) giveBack(key, source string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range []map[string]keyNumber{s.cur, s.prev} {
		if k, ok := m[key]; ok {
			if k.source == source && k.n == n {
				k.n--
				m[key] = k
			}
			return
		}
	}
}

// tracked is how many keys s remembers.
func (s *sequencer) tracked() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.cur) + len(s.prev)
}

// Sequenced is a fact's place in the sequence of its key, when the caller
// numbers facts itself (an outbox relay numbers them from the database).
type Sequenced struct {
	Source string // who numbers: HeaderSequenceSource
	Seq    int64  // the number, from 1
}

// message returns the AMQP message of m as fact f, with the ordering
// headers when f has an ordering key.
func (p *Publisher) message(f Fact, m outMessage) (amqp.Publishing, error) {
	msg := m.publishing(f)
	if f.OrderingKey == "" {
		if f.sequenced != nil {
			// A number without its key would reach an ordered consumer's
			// hash exchange without the header it hashes on.
			return msg, fmt.Errorf("fact %s is numbered (WithSequence) but has no OrderingKey: give the relay this fact (outbox.RelayConfig.Facts) so its key is sent", f.RoutingKey)
		}
		return msg, nil
	}
	// The body is the envelope; the key is in its payload.
	return msg, p.orderingHeaders(f, m, msg.Headers)
}

// orderingHeaders adds the ordering key and sequence headers of a fact
// with an ordering key to h: the key as read from the Go value, or else
// from the envelope body; the caller's numbering (WithSequence) or the
// publisher's.
func (p *Publisher) orderingHeaders(f Fact, m outMessage, h amqp.Table) error {
	key := m.key
	if !m.keyed {
		var err error
		if key, err = OrderingKeyOf(m.payload, f.OrderingKey); err != nil {
			return err
		}
	}
	h[HeaderOrderingKey] = key
	if s := f.sequenced; s != nil {
		h[HeaderSequence], h[HeaderSequenceSource] = s.Seq, s.Source
		return nil
	}
	source, n := p.seq.number(key)
	h[HeaderSequence], h[HeaderSequenceSource] = n, source
	return nil
}

// unnumber gives back the number the publisher took for msg's ordering
// key when msg was never written to the broker. A number the caller gave
// (WithSequence) is the caller's: it is left alone.
func (p *Publisher) unnumber(msg amqp.Publishing) {
	key, ok := msg.Headers[HeaderOrderingKey].(string)
	if !ok {
		return
	}
	source, n, ok := sequenceOf(msg.Headers)
	if !ok || !strings.HasPrefix(source, p.seq.base+".") {
		return
	}
	p.seq.giveBack(key, source, n)
}

// WithSequence returns f with its sequence number given by the caller, for
// one publish: an outbox relay passes the number the database assigned.
func (f Fact) WithSequence(source string, seq int64) Fact {
	f.sequenced = &Sequenced{Source: source, Seq: seq}
	return f
}

// sequenceOf reads the sequence headers of a delivery; ok is false when it
// has none.
func sequenceOf(h map[string]any) (source string, seq int64, ok bool) {
	source, _ = h[HeaderSequenceSource].(string)
	switch v := h[HeaderSequence].(type) {
	case int64:
		seq = v
	case int32:
		seq = int64(v)
	case string:
		seq, _ = strconv.ParseInt(v, 10, 64)
	}
	return source, seq, source != "" && seq > 0
}
