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
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/amqpmsg"
	"github.com/warrenbus/warren/runtime/codec"
)

// A fact may be published in several versions side by side during a
// migration (see docs/RUNTIME.md, "Versions side by side"). Each message
// carries its own version in HeaderFactVersion. A publisher that publishes
// one fact in several versions sends one message: the oldest version's
// envelope as its body, HeaderFactVersions listing every version, and the
// envelope of each newer version in a header of its own
// ([HeaderFactCopyPrefix] and the version). A consumer handles the
// version it reads best, the newest it reads, out of that one message.
//
// One message, not one per version: the instances of two builds of one
// consumer share its work queue during a rolling deploy, and the broker
// would hand the copies of one fact to different instances. An instance
// of the new build would skip the old copy for the new one while an
// instance of the old build skipped the new copy for the old one, and the
// fact would not be handled at all. In one message, whichever instance
// gets the fact picks the version it reads.

const (
	// HeaderFactVersions lists, comma-separated and ascending, the
	// versions one fact was published in ("1,2"), on its message.
	HeaderFactVersions = "x-fact-versions"
	// HeaderFactCopyPrefix and a version name the header in which a fact
	// published in several versions carries the envelope of that version
	// ("x-fact-copy-2"), for every version but the body's, the oldest.
	HeaderFactCopyPrefix = "x-fact-copy-"
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

// otherCopy reports whether the delivery is one of several messages of
// one fact published in several versions, one message per version, as
// warren published them before a fact's versions travelled in one message
// (see the top of this file), and not the one the route handles: the
// route handles the message of the newest version it reads, or, when it
// reads none of them, the oldest. A message that carries its versions
// itself is never another copy.
func (r Route) otherCopy(h map[string]any, version int) bool {
	versions := FactVersions(h)
	if len(versions) < 2 || !slices.Contains(versions, version) || carriesCopies(h, versions, version) {
		return false
	}
	return version != r.chosen(versions)
}

// chosen returns the version, among versions (ascending), that the route
// handles: the newest it reads, else the oldest.
func (r Route) chosen(versions []int) int {
	out := versions[0]
	for _, v := range versions {
		if r.readable(v) {
			out = v
		}
	}
	return out
}

// copyHeader names the header that carries version v's envelope.
func copyHeader(v int) string { return HeaderFactCopyPrefix + strconv.Itoa(v) }

// carriesCopies reports whether a message of version body carries the
// envelope of another of versions in a header.
func carriesCopies(h map[string]any, versions []int, body int) bool {
	for _, v := range versions {
		if v != body {
			if _, ok := h[copyHeader(v)]; ok {
				return true
			}
		}
	}
	return false
}

// BodyOfVersion returns the envelope of version v of a fact's message: its
// body when the message is of version v, else the envelope a fact
// published in several versions carries in its header for v. It reports
// false when the message has no envelope of version v.
func BodyOfVersion(h map[string]any, body []byte, v int) ([]byte, bool) {
	if versionOf(h) == v {
		return body, true
	}
	switch c := h[copyHeader(v)].(type) {
	case string:
		return []byte(c), true
	case []byte:
		return c, true
	}
	return nil, false
}

// readAs returns in as the route reads it: for a fact published in
// several versions in one message, the envelope of the version the route
// handles as its body and that version in its headers (a copy of them);
// in itself otherwise, or when the message lacks that version's envelope.
// The message settles as it arrived: what is retried or poisoned carries
// every version.
func (r Route) readAs(in inbound) inbound {
	versions := FactVersions(in.d.Headers)
	if len(versions) < 2 {
		return in
	}
	v := r.chosen(versions)
	if v == versionOf(in.d.Headers) {
		return in
	}
	b, ok := BodyOfVersion(in.d.Headers, in.d.Body, v)
	if !ok {
		return in
	}
	h := make(amqp.Table, len(in.d.Headers))
	for k, x := range in.d.Headers {
		h[k] = x
	}
	h[HeaderFactVersion] = int64(v)
	in.d.Headers, in.d.Body = h, b
	return in
}

// FactVersions returns the versions a message of a fact published in
// several versions at once carries (its [HeaderFactVersions]), oldest
// first; nil for any other message. [BodyOfVersion] gives the envelope of
// each.
func FactVersions(h map[string]any) []int {
	list, ok := h[HeaderFactVersions].(string)
	if !ok {
		return nil
	}
	return parseVersions(list)
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
// cause is a VersionError. Of a fact published one message per version
// (see [Route.otherCopy]) it drops HeaderFactVersions: the consumer acked
// the fact's other messages, so the poisoned one is the only one left to
// it, and a replay must not take it for a copy to skip. A message that
// carries its versions keeps them, so that the consumer, upgraded, reads
// the version it reads best when the fact is replayed.
func markVersionMismatch(cause error, h map[string]any) {
	if list, ok := h[HeaderFactVersions].(string); ok && !carriesCopies(h, parseVersions(list), versionOf(h)) {
		delete(h, HeaderFactVersions)
	}
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

// versionCopy is the envelope of one version of a fact published in
// several, carried in a header of the fact's one message.
type versionCopy struct {
	version int
	body    []byte
}

// maxCopiesSize bounds the envelopes a fact published in several versions
// carries in its headers: AMQP 0-9-1 sends a message's headers in one
// frame, and RabbitMQ's frames hold 128 KiB by default.
const maxCopiesSize = 64 << 10

// PublishVersions publishes one fact in several versions as one message
// (see the top of this file): every copy is validated, with one id and
// time, the oldest version's envelope is the body, each newer version's
// envelope travels in its header, and HeaderFactVersions lists every
// version, so that each consumer handles the newest version it reads. It
// returns the message id once the broker confirmed the message. The newer
// versions' envelopes may add up to 64 KiB.
func (p *Publisher) PublishVersions(ctx context.Context, copies ...Copy) (messageID string, err error) {
	f, m, err := p.encodeVersions(copies)
	if err != nil {
		return "", err
	}
	if err := p.publishMessage(ctx, f, m); err != nil {
		return m.id, fmt.Errorf("versions %s: %w", f.versions, err)
	}
	return m.id, nil
}

// PublishVersionsAsync is [Publisher.PublishVersions] without the wait:
// it sends the message and returns its [Pending].
func (p *Publisher) PublishVersionsAsync(ctx context.Context, copies ...Copy) (*Pending, error) {
	f, m, err := p.encodeVersions(copies)
	if err != nil {
		return nil, err
	}
	h, err := p.publishAsync(ctx, f, m)
	if err != nil {
		return nil, fmt.Errorf("versions %s: %w", f.versions, err)
	}
	return h, nil
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
// is validated against its Fact's schema before anything is sent.
func (p *Publisher) PublishEnvelopeVersionsAsync(ctx context.Context, copies ...EnvelopeCopy) (*Pending, error) {
	if len(copies) == 0 {
		return nil, errors.New("publish versions: no copy")
	}
	facts := make([]Fact, len(copies))
	msgs := make([]outMessage, len(copies))
	for i, c := range copies {
		if c.Envelope.ID != copies[0].Envelope.ID {
			return nil, p.publishError(c.Fact, fmt.Errorf("version %d: envelope id %q differs from the first copy's %q: the copies of one fact share one id", c.Fact.Version, c.Envelope.ID, copies[0].Envelope.ID))
		}
		m, err := encodeEnvelope(c.Fact, c.Envelope)
		if err != nil {
			return nil, p.publishError(c.Fact, fmt.Errorf("version %d: %w", c.Fact.Version, err))
		}
		facts[i], msgs[i] = c.Fact, m
	}
	f, m, err := p.combine(facts, msgs)
	if err != nil {
		return nil, err
	}
	h, err := p.publishAsync(ctx, f, m)
	if err != nil {
		return nil, fmt.Errorf("versions %s: %w", f.versions, err)
	}
	return h, nil
}

// encodeVersions validates and encodes every copy, with one id and time,
// and returns the one message that carries them (see combine).
func (p *Publisher) encodeVersions(copies []Copy) (Fact, outMessage, error) {
	if len(copies) == 0 {
		return Fact{}, outMessage{}, errors.New("publish versions: no copy")
	}
	facts := make([]Fact, len(copies))
	msgs := make([]outMessage, len(copies))
	for i, c := range copies {
		m, err := encodeFact(c.Fact, c.Payload)
		if err != nil {
			return Fact{}, outMessage{}, p.publishError(c.Fact, fmt.Errorf("version %d: %w", c.Fact.Version, err))
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
	}
	return p.combine(facts, msgs)
}

// combine returns the one message of a fact encoded in several versions:
// the oldest version's, listing every version in HeaderFactVersions and
// carrying each newer version's envelope in its header. One version is
// its message as it is.
func (p *Publisher) combine(facts []Fact, msgs []outMessage) (Fact, outMessage, error) {
	order := make([]int, len(facts))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return max(facts[a].Version, 1) - max(facts[b].Version, 1) })
	versions := make([]int, len(order))
	for i, k := range order {
		versions[i] = max(facts[k].Version, 1)
		if i > 0 && versions[i] == versions[i-1] {
			return Fact{}, outMessage{}, p.publishError(facts[k], fmt.Errorf("version %d is given twice", versions[i]))
		}
	}
	oldest := order[0]
	f, m := facts[oldest], msgs[oldest]
	if len(order) == 1 {
		return f, m, nil
	}
	f.versions = formatVersions(versions)
	size := 0
	for _, k := range order[1:] {
		size += len(msgs[k].body)
		f.copies = append(f.copies, versionCopy{version: max(facts[k].Version, 1), body: msgs[k].body})
	}
	if size > maxCopiesSize {
		return Fact{}, outMessage{}, p.publishError(f, fmt.Errorf("versions %s: the newer versions' envelopes take %d bytes, more than the %d their headers can carry", f.versions, size, maxCopiesSize))
	}
	return f, m, nil
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
