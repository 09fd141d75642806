package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-faster/jx"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenbus/warren/internal/transport"
	"github.com/warrenbus/warren/runtime/codec"
	"github.com/warrenbus/warren/runtime/topology"
)

// Answer binds one request to a handler that returns its reply. Generated
// responder constructors build one Answer per method with [Respond].
type Answer struct {
	req Request
	// decode turns a validated request payload into a call of the handler,
	// which stores the encoded reply in *out.
	decode func(payload []byte, out *[]byte) (handlerCall, error)
	// decodeAt, set when the codec reads the request type
	// ([codec.Decodes]), reads and checks the payload where it stands in
	// the envelope, in the one pass that reads the envelope.
	decodeAt func(d *jx.Decoder, out *[]byte) (handlerCall, error)
}

// Request returns the request the answer handles.
func (a Answer) Request() Request { return a.req }

// Respond returns an Answer that decodes each request of r into a Req,
// calls fn and sends back what it returns. An error fn returns goes back
// to the caller as a [*ReplyError], permanent when marked with
// [Permanent]; so does a panic (not permanent) and a reply that does not
// match its schema (permanent: it is the responder's bug).
//
// Generated types are read and written in one pass, as [Handle] and
// [Publisher.Publish] do: a *Req that the codec reads ([codec.Decodes])
// is decoded and checked where it stands in the request's envelope, and
// a Rep that validates itself ([codec.Validator]) and that the codec
// writes ([codec.Encodes]) is validated as a value and encoded once.
func Respond[Req, Rep any](r Request, fn func(ctx context.Context, d Delivery, req Req) (Rep, error)) Answer {
	bind := func(v *Req, out *[]byte) handlerCall {
		return func(ctx context.Context, d Delivery) error {
			rep, err := fn(ctx, d, *v)
			if err != nil {
				return err
			}
			raw, err := encodeReply(r, rep)
			*out = raw
			return err
		}
	}
	a := Answer{req: r, decode: func(payload []byte, out *[]byte) (handlerCall, error) {
		v := new(Req)
		if err := json.Unmarshal(payload, v); err != nil {
			return nil, Permanent(fmt.Errorf("decode %s request: %w", r.Key, err))
		}
		return bind(v, out), nil
	}}
	if codec.Decodes(any((*Req)(nil))) {
		a.decodeAt = func(d *jx.Decoder, out *[]byte) (handlerCall, error) {
			v := new(Req)
			if err := codec.DecodeValue(d, v); err != nil {
				return nil, err
			}
			return bind(v, out), nil
		}
	}
	return a
}

// encodeReply validates and encodes a handler's reply.
func encodeReply[Rep any](r Request, rep Rep) ([]byte, error) {
	v, ok := asTyped(any(&rep)) // a generated type's methods take a pointer
	if !ok {
		v, ok = asTyped(any(rep))
	}
	if ok {
		if err := v.Validate(); err != nil {
			return nil, Permanent(fmt.Errorf("reply does not match its schema: %w", err))
		}
		return encodeValue(v), nil
	}
	raw, err := json.Marshal(rep)
	if err != nil {
		return nil, Permanent(fmt.Errorf("encode %s reply: %w", r.Key, err))
	}
	if r.ValidateReply != nil {
		if err := r.ValidateReply(raw); err != nil {
			return nil, Permanent(fmt.Errorf("reply does not match its schema: %w", err))
		}
	}
	return raw, nil
}

// Responder reads one responder's requests queue and answers every
// request once, on the reply-to address it names, with the same
// correlation id. A request is acked only after its reply is confirmed by
// the broker, so a responder that dies mid-request leaves the request to be
// redelivered to another instance. A request whose deadline passed before
// it was taken is acked without calling the handler; the handler's ctx
// carries the caller's deadline. Requests are never retried: an error is
// the reply.
//
// It runs on the same engine as a [Consumer] and takes the consumers'
// options where they apply: [WithGuard] (keyed by the request's envelope
// id), [WithMiddleware], [WithPrefetch], [WithConcurrency],
// [WithShutdownTimeout], [WithMaxBodySize]. [WithOutagePolicy] is refused:
// a request is answered once, now, so it is never held for later. What it
// counts reaches [Metrics] and [Conn.Counts] under the responder's name:
// Delivered and Redelivered, then Acked (answered), ErrorReplied,
// Expired, DuplicateSkipped or Returned.
type Responder struct {
	core
	spec    topology.Responder
	answers map[string]Answer
	chain   HandlerFunc
	counts  responderCounters
	eng     *engine[amqp.Delivery]
}

// ResponderCounts are what a responder counted since it was made.
type ResponderCounts struct {
	Answered   uint64 // replies with a payload
	Failed     uint64 // error replies (handler errors, panics, refused requests)
	Expired    uint64 // requests taken after their deadline: acked, not worked on
	Duplicates uint64 // requests the guard had seen: answered with an error, handler not called
}

type responderCounters struct{ answered, failed, expired, duplicates atomic.Uint64 }

// Counts returns what the responder counted so far.
func (r *Responder) Counts() ResponderCounts {
	return ResponderCounts{
		Answered: r.counts.answered.Load(), Failed: r.counts.failed.Load(),
		Expired: r.counts.expired.Load(), Duplicates: r.counts.duplicates.Load(),
	}
}

// responderRefuses are the options that do not apply to a responder.
var responderRefuses = map[optionSet]string{
	optOutagePolicy:    "a responder answers each request once, at once, and never holds one for later; a handler error (Unavailable included) is the reply",
	optMaxDeferInPlace: "a responder answers each request at once; a deferral is an error reply",
	optPoisonHook:      "a responder has no poison queue: a failed request is answered with the error",
	optOffsetName:      "a responder reads a queue, not a stream",
	optOffsetEvery:     "a responder reads a queue, not a stream",
	optReadOverAMQP:    "a responder reads a queue, not a stream",
}

// NewResponder returns a responder for spec (one of a topology's
// Responders) answering with answers, one per request it answers. Run
// starts it.
func NewResponder(conn *Conn, spec topology.Responder, answers []Answer, opts ...ConsumerOption) (*Responder, error) {
	o, err := newOptions(spec.Prefetch, spec.Concurrency, opts, responderRefuses)
	errs := []error{err}
	if conn == nil {
		errs = append(errs, errors.New("nil Conn"))
	}
	if spec.Name == "" || spec.Queue == "" {
		errs = append(errs, errors.New("incomplete topology.Responder: use one from topology.Build"))
	}
	byKey := map[string]Answer{}
	for _, a := range answers {
		switch key := a.req.Key; {
		case a.decode == nil || key == "":
			errs = append(errs, errors.New("answer without a request: build answers with Respond"))
		case byKey[key].decode != nil:
			errs = append(errs, fmt.Errorf("two answers for %q", key))
		default:
			byKey[key] = a
		}
	}
	if len(byKey) == 0 {
		errs = append(errs, errors.New("no answers"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new responder %q: %w", spec.Name, err)
	}
	r := &Responder{
		core: newCore(conn, spec.Name, "responder", o),
		spec: spec, answers: byKey,
		chain: buildChain(spec.Name, o.guard, o.middleware),
	}
	r.eng = &engine[amqp.Delivery]{core: &r.core, kind: responderKind{r}}
	return r, nil
}

// Run answers requests until ctx is cancelled, then stops taking them,
// gives back those not yet started, waits for running handlers (bounded by
// the shutdown timeout) and returns nil. It resumes by itself after a
// connection or channel loss, and returns an error if the requests queue
// does not exist, the Conn was closed, or handlers outlived the shutdown
// timeout (their requests return to the queue).
func (r *Responder) Run(ctx context.Context) error { return r.eng.run(ctx) }

// Name returns the responder's name in the topology.
func (r *Responder) Name() string { return r.name }

// Health reports the responder's connection (as [Conn.Health]), whether
// it runs, and its last channel loss.
func (r *Responder) Health() Health { return r.health() }

// responderKind is a responder on the engine: one requests queue, each
// worker answering the next request.
type responderKind struct{ r *Responder }

func (k responderKind) queues() []string { return []string{k.r.spec.Queue} }

func (k responderKind) source(_ *channelRun, feeds []<-chan amqp.Delivery) source[amqp.Delivery] {
	return feedSource{feeds[0]}
}

func (k responderKind) work(r *channelRun, d amqp.Delivery) { k.r.answer(r.hctx, r.s, d) }

func (k responderKind) giveBack(d amqp.Delivery, why string) {
	if err := d.Nack(false, true); err != nil {
		k.r.log.Debug("nack failed; the request will be redelivered", "message_id", d.MessageId, "err", k.r.conn.redact(err))
		return
	}
	k.r.count(Returned, d.RoutingKey)
	k.r.log.Debug("gave a request back to the queue", "message_id", d.MessageId, "why", why)
}

func (responderKind) traits() traits { return traits{queueNoun: "requests queue"} }

// answer works on one request and replies, then acks it. Every path ends
// in exactly one ack, or none when the channel is gone (the broker then
// redelivers the request).
func (r *Responder) answer(ctx context.Context, s *session, d amqp.Delivery) {
	r.count(Delivered, d.RoutingKey)
	if d.Redelivered {
		r.count(Redelivered, d.RoutingKey)
	}
	env, reply, err := r.work(ctx, s, d)
	switch {
	case errors.Is(err, errExpired):
		r.counts.expired.Add(1)
		r.log.Debug("request expired before it was taken; not worked on", "message_id", d.MessageId, "request", d.RoutingKey)
		r.ack(d, Expired)
		return
	case d.ReplyTo == "":
		r.log.Warn("request names no reply_to; nobody can be answered", "message_id", d.MessageId, "request", d.RoutingKey)
		r.ack(d, ErrorReplied)
		return
	}
	body := replyBody{ID: env.ID, OccurredAt: time.Now().UTC(), Payload: reply}
	if env.ID == "" {
		body.ID = d.MessageId
	}
	var dup *duplicateError
	outcome := Acked
	switch {
	case errors.As(err, &dup):
		r.counts.duplicates.Add(1)
		outcome = DuplicateSkipped
		body.Error = &replyFailure{Message: err.Error()}
	case err != nil && overdue(env, d):
		// The caller's deadline passed while the handler worked (its ctx
		// carried it): the caller has given up, or is about to with its
		// own context's error. An error reply could beat that by the
		// moments between the envelope's time and the publish, and make
		// the caller give up before its deadline with another error.
		r.counts.failed.Add(1)
		r.log.Warn("request failed after its caller's deadline; no reply, the caller has given up",
			"message_id", d.MessageId, "request", d.RoutingKey, "err", r.conn.redact(err))
		r.ack(d, Expired)
		return
	case err != nil:
		r.counts.failed.Add(1)
		outcome = ErrorReplied
		body.Error = &replyFailure{Message: failureText(err), Permanent: IsPermanent(err)}
		attrs := []any{"message_id", d.MessageId, "request", d.RoutingKey, "err", r.conn.redact(err)}
		var p *PanicError
		if errors.As(err, &p) {
			attrs = append(attrs, "stack", string(p.Stack))
		}
		r.log.Warn("request failed; replying with the error", attrs...)
	default:
		r.counts.answered.Add(1)
	}
	if err := r.reply(ctx, d, body); err != nil {
		// Not acked: the request returns to the queue when the channel
		// goes, and is answered again or expires.
		r.log.Warn("reply not sent", "message_id", d.MessageId, "request", d.RoutingKey, "err", r.conn.redact(err))
		return
	}
	r.ack(d, outcome)
}

// ack acks a request and counts how it ended; a failed ack (the channel is
// gone, the request comes again) counts nothing.
func (r *Responder) ack(d amqp.Delivery, e Event) {
	if err := d.Ack(false); err != nil {
		r.log.Debug("ack failed; the request will be redelivered", "message_id", d.MessageId, "err", r.conn.redact(err))
		return
	}
	r.count(e, d.RoutingKey)
}

var errExpired = errors.New("request expired")

// overdue reports whether the request's deadline, when it has one, has
// passed.
func overdue(env Envelope, d amqp.Delivery) bool {
	deadline, ok := requestDeadline(env.OccurredAt, d.Expiration)
	return ok && !time.Now().Before(deadline)
}

type duplicateError struct{ id string }

func (e *duplicateError) Error() string {
	return fmt.Sprintf("request %s was answered already (the idempotency guard has its id); its first reply went to the caller", e.id)
}

// work checks and decodes a request and calls its handler through the
// chain (middleware, guard, panic recovery), under the caller's deadline.
func (r *Responder) work(ctx context.Context, s *session, d amqp.Delivery) (Envelope, json.RawMessage, error) {
	if err := checkBody(d, r.opts.maxBodySize); err != nil {
		return Envelope{}, nil, err
	}
	var out []byte
	env, call, err := r.decode(d, &out)
	var pe *payloadError
	if err == nil || errors.As(err, &pe) {
		if deadline, ok := requestDeadline(env.OccurredAt, d.Expiration); ok {
			if !time.Now().Before(deadline) {
				return env, nil, errExpired
			}
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, deadline)
			defer cancel()
		}
	}
	if pe != nil {
		return env, nil, Permanent(fmt.Errorf("request %s does not match its schema: %w", d.RoutingKey, pe.err))
	}
	if err != nil {
		return env, nil, err
	}
	dv := Delivery{
		MessageID: env.ID, OccurredAt: env.OccurredAt, RoutingKey: d.RoutingKey,
		Attempt: 1, Redelivered: d.Redelivered, Consumer: r.spec.Name, Headers: d.Headers,
	}
	h := &handling{call: funcInvoker(call)}
	returned := s.handlerStarted(r.name, d)
	start := time.Now()
	err = safeCall(context.WithValue(ctx, handlingKey{}, h), dv, r.chain)
	r.metrics.ObserveHandler(r.name, d.RoutingKey, time.Since(start), err)
	returned(transport.Outcome{Err: err, Duplicate: h.duplicate})
	if err == nil && h.duplicate {
		return env, nil, &duplicateError{id: env.ID}
	}
	return env, out, err
}

// decode reads a request's envelope and payload and binds its answer's
// handler to the decoded request, which stores its reply in *out. A
// request type that decodes itself is read in one pass (a payload error is
// a *payloadError, with the envelope read); any other is validated with
// the request's Validate and then decoded.
func (r *Responder) decode(d amqp.Delivery, out *[]byte) (Envelope, handlerCall, error) {
	a, ok := r.answers[d.RoutingKey]
	if ok && a.decodeAt != nil {
		head, call, err := decodeEnvelopeOnce(d.Body, func(dec *jx.Decoder) (handlerCall, error) { return a.decodeAt(dec, out) })
		return Envelope{ID: head.ID, OccurredAt: head.OccurredAt}, call, err
	}
	env, err := decodeEnvelope(d.Body)
	if err != nil {
		return env, nil, err
	}
	if deadline, ok := requestDeadline(env.OccurredAt, d.Expiration); ok && !time.Now().Before(deadline) {
		return env, nil, errExpired
	}
	if !ok {
		return env, nil, Permanent(fmt.Errorf("request %q is not answered by responder %q", d.RoutingKey, r.spec.Name))
	}
	if a.req.Validate != nil {
		if err := a.req.Validate(env.Payload); err != nil {
			return env, nil, Permanent(fmt.Errorf("request %s does not match its schema: %w", d.RoutingKey, err))
		}
	}
	call, err := a.decode(env.Payload, out)
	return env, call, err
}

// reply publishes body to the caller's reply-to address with the
// request's correlation id and waits for the broker's confirm.
func (r *Responder) reply(ctx context.Context, d amqp.Delivery, body replyBody) error {
	raw, err := encodeReplyBody(body)
	if err != nil {
		return fmt.Errorf("encode reply: %w", err)
	}
	cc, err := r.lane.channel(ctx)
	if err != nil {
		return err
	}
	// Not mandatory: a caller that is gone is not the responder's error.
	return cc.publish(ctx, "", d.ReplyTo, false, amqp.Publishing{
		ContentType:   "application/json",
		MessageId:     body.ID,
		CorrelationId: d.CorrelationId,
		Type:          d.RoutingKey,
		Timestamp:     body.OccurredAt,
		Body:          raw,
	})
}
