package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-faster/jx"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/runtime/codec"
)

// A fact may be published in several versions side by side during a
// migration (see docs/RUNTIME.md, "Versions side by side"). Each message
// carries its own version in HeaderFactVersion; a publisher that
// publishes one fact in several versions sends one message per version,
// all with the same message id, each listing every version published in
// HeaderFactVersions. A consumer handles the copy of the newest version
// it reads, and acks the others unhandled.

const (
	// HeaderFactVersions lists, comma-separated and ascending, the
	// versions one fact was published in ("1,2"), on every copy.
	HeaderFactVersions = "x-fact-versions"
	// HeaderVersionMismatch is set on a fact poisoned by a consumer that
	// could not read its version: "fact version 2, consumer reads versions 1".
	HeaderVersionMismatch = "x-version-mismatch"
)

// Older is an older version of the fact a route handles, read through an
// upcast into the route's type T. Build it with [Upcast].
type Older[T any] struct {
	fact   Fact
	decode func(d *jx.Decoder) (T, error)
}

// Upcast returns an older version f of a route's fact, whose payloads
// decode as O (checked against f's schema) and become the route's T
// through up. An error up returns is permanent: the fact goes to poison.
// The result is checked against T's schema when T validates itself.
func Upcast[O, T any](f Fact, up func(O) (T, error)) Older[T] {
	return Older[T]{fact: f, decode: func(d *jx.Decoder) (T, error) {
		var o O
		var zero T
		if codec.Decodes(&o) {
			if err := codec.DecodeValue(d, &o); err != nil {
				return zero, err
			}
		} else {
			raw, err := d.Raw()
			if err != nil {
				return zero, err
			}
			if f.Validate != nil {
				if err := f.Validate(raw); err != nil {
					return zero, err
				}
			}
			if err := json.Unmarshal(raw, &o); err != nil {
				return zero, err
			}
		}
		t, err := up(o)
		if err != nil {
			return zero, fmt.Errorf("upcast version %d: %w", f.Version, err)
		}
		if v, ok := any(&t).(codec.Validator); ok {
			if err := v.Validate(); err != nil {
				return zero, fmt.Errorf("version %d, upcast: the result does not match the schema of the version the route reads: %w", f.Version, err)
			}
		}
		return t, nil
	}}
}

// HandleVersions is [Handle] for a fact read in several versions: payloads
// of f's version decode as T, those of each older version through its
// upcast. A consumer built with it reads every version it lists.
func HandleVersions[T any](f Fact, fn func(ctx context.Context, d Delivery, fact T) error, older ...Older[T]) Route {
	s := &typedHandling[T]{fn: fn}
	r := newRoute(f, s)
	r.older = make(map[int]func(d *jx.Decoder) (*handling, error), len(older))
	for _, o := range older {
		r.older[o.fact.Version] = func(d *jx.Decoder) (*handling, error) {
			t, err := o.decode(d)
			if err != nil {
				return nil, err
			}
			h, v := s.start()
			*v.(*T) = t
			return h, nil
		}
	}
	return r
}

// Reads returns the versions of its fact the route reads, ascending.
func (r Route) Reads() []int {
	out := []int{max(r.fact.Version, 1)}
	for v := range r.older {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// readable reports whether the route reads version v.
func (r Route) readable(v int) bool {
	if v == max(r.fact.Version, 1) {
		return true
	}
	_, ok := r.older[v]
	return ok
}

// otherCopy reports whether the delivery is a copy of a fact published in
// several versions that this route does not handle: the route handles the
// copy of the newest version it reads, or, when it reads none of them,
// the copy of the oldest (which its own schema may still accept).
func (r Route) otherCopy(h map[string]any, version int) bool {
	list, ok := h[HeaderFactVersions].(string)
	if !ok {
		return false
	}
	versions := parseVersions(list)
	if len(versions) < 2 || !slices.Contains(versions, version) {
		return false
	}
	chosen := versions[0]
	for _, v := range versions {
		if r.readable(v) {
			chosen = v
		}
	}
	return version != chosen
}

func parseVersions(list string) []int {
	var out []int
	for _, s := range strings.Split(list, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func formatVersions(vs []int) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

// VersionError is the failure of a consumer that received a fact in a
// version it does not read and whose payload its own schema rejects. It
// is permanent: the fact goes to poison with [HeaderVersionMismatch], and
// `warren replay` re-delivers it once the consumer reads that version.
type VersionError struct {
	RoutingKey string
	Version    int   // the fact's
	Reads      []int // the consumer's
	Err        error
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("%s version %d cannot be read by a consumer that reads versions %s: %v", e.RoutingKey, e.Version, formatVersions(e.Reads), e.Err)
}

func (e *VersionError) Unwrap() error { return e.Err }

// mismatch returns the header value of a version mismatch.
func (e *VersionError) mismatch() string {
	return fmt.Sprintf("fact version %d, consumer reads versions %s", e.Version, formatVersions(e.Reads))
}

// versionOf returns a delivery's fact version, 1 when the header is absent.
func versionOf(h map[string]any) int {
	if v := amqpmsg.HeaderInt(h, HeaderFactVersion); v > 0 {
		return v
	}
	return 1
}

// markVersionMismatch sets HeaderVersionMismatch on a poison copy whose
// cause is a VersionError. It drops HeaderFactVersions: the consumer
// acked the fact's other copies, so the poisoned one is the only one left
// to it, and a replay must not take it for a copy to skip.
func markVersionMismatch(cause error, h map[string]any) {
	delete(h, HeaderFactVersions)
	if ve := (*VersionError)(nil); errors.As(cause, &ve) {
		h[HeaderVersionMismatch] = ve.mismatch()
	}
}

// unreadable wraps the schema failure of a payload whose version the
// route does not read in a *VersionError; others pass as they are.
func (c *Consumer) unreadable(in inbound, r Route, err error) error {
	v := versionOf(in.d.Headers)
	if r.readable(v) {
		return err
	}
	return &VersionError{RoutingKey: in.routingKey, Version: v, Reads: r.Reads(), Err: err}
}

// Copy is one version of a fact for [Publisher.PublishVersions]: its
// Fact (the version's) and its payload.
type Copy struct {
	Fact    Fact
	Payload any
}

// PublishVersions publishes one fact in several versions, one message per
// copy, all with the same message id and time, each with
// HeaderFactVersions listing every version, so that a consumer handles the
// copy of the newest version it reads and acks the others. It returns the
// message id once every copy is confirmed. Every copy is validated before
// anything is sent. A failure after some copies were confirmed leaves
// those published, and the consumers that read their versions handle
// them; the error says which version failed. As after a failed Publish,
// publishing again publishes the fact once more, under a new id.
func (p *Publisher) PublishVersions(ctx context.Context, copies ...Copy) (messageID string, err error) {
	facts, msgs, err := p.encodeVersions(copies)
	if err != nil {
		return "", err
	}
	for i := range msgs {
		if err := p.publishMessage(ctx, facts[i], msgs[i]); err != nil {
			return msgs[0].id, fmt.Errorf("version %d: %w", facts[i].Version, err)
		}
	}
	return msgs[0].id, nil
}

// PublishVersionsAsync is [Publisher.PublishVersions] without the wait:
// it sends every copy and returns one [Pending] whose Wait waits for the
// confirms of all of them.
func (p *Publisher) PublishVersionsAsync(ctx context.Context, copies ...Copy) (*Pending, error) {
	facts, msgs, err := p.encodeVersions(copies)
	if err != nil {
		return nil, err
	}
	return p.sendCopies(ctx, facts, msgs)
}

// sendCopies sends the encoded copies of one fact and returns one
// [Pending] that waits for the confirms of all of them.
func (p *Publisher) sendCopies(ctx context.Context, facts []Fact, msgs []outMessage) (*Pending, error) {
	var first *Pending
	for i := range msgs {
		h, err := p.publishAsync(ctx, facts[i], msgs[i])
		if err != nil {
			return nil, fmt.Errorf("version %d: %w", facts[i].Version, err)
		}
		if first == nil {
			first = h
		} else {
			first.also = append(first.also, h)
		}
	}
	return first, nil
}

// EnvelopeCopy is one version of a fact enveloped earlier, for
// [Publisher.PublishEnvelopeVersionsAsync]: its Fact (the version's) and
// its envelope. The copies of one fact share the envelope's id and time.
type EnvelopeCopy struct {
	Fact     Fact
	Envelope Envelope
}

// PublishEnvelopeVersionsAsync publishes copies made earlier of one fact
// in several versions, as [Publisher.PublishVersionsAsync] publishes new
// ones: an outbox relay publishing a row written in the versions the
// manifest says are live. Every copy must carry the same envelope id; each
// is validated against its Fact's schema before anything is sent, and
// every copy carries [HeaderFactVersions]. Wait on the result waits for
// the confirms of all of them.
func (p *Publisher) PublishEnvelopeVersionsAsync(ctx context.Context, copies ...EnvelopeCopy) (*Pending, error) {
	if len(copies) == 0 {
		return nil, errors.New("publish versions: no copy")
	}
	versions := make([]int, len(copies))
	for i, c := range copies {
		if c.Envelope.ID != copies[0].Envelope.ID {
			return nil, p.publishError(c.Fact, fmt.Errorf("version %d: envelope id %q differs from the first copy's %q: the copies of one fact share one id", c.Fact.Version, c.Envelope.ID, copies[0].Envelope.ID))
		}
		versions[i] = max(c.Fact.Version, 1)
	}
	slices.Sort(versions)
	list := formatVersions(versions)
	facts := make([]Fact, len(copies))
	msgs := make([]outMessage, len(copies))
	for i, c := range copies {
		m, err := encodeEnvelope(c.Fact, c.Envelope)
		if err != nil {
			return nil, p.publishError(c.Fact, fmt.Errorf("version %d: %w", c.Fact.Version, err))
		}
		facts[i], msgs[i] = c.Fact, m
		if len(copies) > 1 {
			facts[i].versions = list
		}
	}
	return p.sendCopies(ctx, facts, msgs)
}

// encodeVersions validates and encodes every copy, with one id and time,
// and returns each copy's Fact with HeaderFactVersions to send.
func (p *Publisher) encodeVersions(copies []Copy) ([]Fact, []outMessage, error) {
	if len(copies) == 0 {
		return nil, nil, errors.New("publish versions: no copy")
	}
	versions := make([]int, len(copies))
	for i, c := range copies {
		versions[i] = max(c.Fact.Version, 1)
	}
	slices.Sort(versions)
	list := formatVersions(versions)
	facts := make([]Fact, len(copies))
	msgs := make([]outMessage, len(copies))
	for i, c := range copies {
		m, err := encodeFact(c.Fact, c.Payload)
		if err != nil {
			return nil, nil, p.publishError(c.Fact, fmt.Errorf("version %d: %w", c.Fact.Version, err))
		}
		if i > 0 {
			// One fact: the first copy's id and time on every copy.
			payload := m.payload
			var start, end int
			m.id, m.at = msgs[0].id, msgs[0].at
			m.body = writeEnvelope(m.id, m.at, func(e *jx.Encoder) {
				start = len(e.Bytes())
				e.Raw(payload)
				end = len(e.Bytes())
			})
			m.payload = m.body[start:end]
		}
		msgs[i] = m
		facts[i] = c.Fact
		if len(copies) > 1 {
			facts[i].versions = list
		}
	}
	return facts, msgs, nil
}

// ArgReads is the basic.consume argument in which a consumer announces the
// versions of each fact it reads: "order.placed=1,2,3;order.shipped=2",
// routing keys sorted. The broker shows it beside the consumer (its
// management API's consumer arguments), so that every live process,
// whatever build it runs, says which versions it still needs.
const ArgReads = "x-warren-reads"

// announceReads renders the ArgReads of a consumer's routes.
func announceReads(routes []Route) string {
	parts := make([]string, 0, len(routes))
	for _, r := range routes {
		parts = append(parts, r.fact.RoutingKey+"="+formatVersions(r.Reads()))
	}
	slices.Sort(parts)
	return strings.Join(parts, ";")
}

// ParseReads reads an [ArgReads] announcement back: each routing key with
// the versions it reads, ascending. An announcement it cannot read is an
// error quoting it.
func ParseReads(s string) (map[string][]int, error) {
	out := map[string][]int{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for part := range strings.SplitSeq(s, ";") {
		key, list, ok := strings.Cut(part, "=")
		if !ok || key == "" || list == "" {
			return nil, fmt.Errorf("%s %q: expected routing-key=versions;..., like \"order.placed=1,2\"", ArgReads, s)
		}
		var vs []int
		for v := range strings.SplitSeq(list, ",") {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("%s %q: version %q of %s: expected an integer from 1", ArgReads, s, v, key)
			}
			vs = append(vs, n)
		}
		slices.Sort(vs)
		out[key] = vs
	}
	return out, nil
}
