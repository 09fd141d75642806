package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-faster/jx"
	amqp "github.com/rabbitmq/amqp091-go"

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
	// decodeAt, set when the request type decodes itself
	// ([codec.Decoder]), reads and checks the payload where it stands in
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
// [Publisher.Publish] do: a *Req that implements [codec.Decoder] is
// decoded and checked where it stands in the request's envelope, and a
// Rep that implements [codec.Encoder] and [codec.Validator] is validated
// as a value and encoded once.
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
	if _, ok := any((*Req)(nil)).(codec.Decoder); ok {
		a.decodeAt = func(d *jx.Decoder, out *[]byte) (handlerCall, error) {
			v := new(Req)
			if err := any(v).(codec.Decoder).DecodeJSON(d); err != nil {
				return nil, err
			}
			return bind(v, out), nil
		}
	}
	return a
}

// encodeReply validates and encodes a handler's reply.
func encodeReply[Rep any](r Request, rep Rep) ([]byte, error) {
	if v, ok := any(rep).(typedPayload); ok {
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
// It takes the consumers' options where they apply: [WithGuard] (keyed by
// the request's envelope id), [WithMiddleware], [WithPrefetch],
// [WithConcurrency], [WithShutdownTimeout], [WithMaxBodySize].
type Responder struct {
	conn    *Conn
	spec    topology.Responder
	answers map[string]Answer
	opts    consumerOptions
	log     *slog.Logger
	chain   HandlerFunc
	lane    lane // replies, confirmed
	running atomic.Bool
	counts  responderCounters
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

// NewResponder returns a responder for spec (one of a topology's
// Responders) answering with answers, one per request it answers. Run
// starts it.
func NewResponder(conn *Conn, spec topology.Responder, answers []Answer, opts ...ConsumerOption) (*Responder, error) {
	o := consumerOptions{shutdownTimeout: 30 * time.Second, prefetch: spec.Prefetch, concurrency: spec.Concurrency, maxBodySize: DefaultMaxBodySize}
	for _, opt := range opts {
		opt(&o)
	}
	o.concurrency = max(o.concurrency, 1)
	o.prefetch = max(o.prefetch, o.concurrency)
	var errs []error
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
	return &Responder{
		conn: conn, spec: spec, answers: byKey, opts: o,
		log:   conn.log.With("responder", spec.Name),
		chain: buildChain(spec.Name, o.guard, o.middleware),
		lane:  lane{conn: conn},
	}, nil
}

// Run answers requests until ctx is cancelled, then stops taking them,
// gives back those not yet started, waits for running handlers (bounded by
// the shutdown timeout) and returns nil. It resumes by itself after a
// connection or channel loss, and returns an error if the requests queue
// does not exist or the Conn was closed.
func (r *Responder) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return fmt.Errorf("responder %q: Run is already running", r.spec.Name)
	}
	defer r.running.Store(false)
	defer r.lane.release()
	for round := 0; ; round++ {
		s, err := r.conn.session(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("responder %q: %w", r.spec.Name, err)
		}
		end, err := r.serve(ctx, s)
		if end {
			return err
		}
		r.log.Warn("responder lost its channel; resuming", "err", r.conn.redact(err))
		if !sleepCtx(ctx.Done(), backoff(min(round, 8), r.conn.cfg.ReconnectMin, r.conn.cfg.ReconnectMax)) {
			return nil
		}
	}
}

// serve runs one channel: concurrency workers answering what it delivers.
func (r *Responder) serve(ctx context.Context, s *session) (end bool, err error) {
	ch, err := s.conn.Channel()
	if err != nil {
		return false, fmt.Errorf("open channel: %w", err)
	}
	defer ch.Close()
	if err := ch.Qos(r.opts.prefetch, 0, false); err != nil {
		return false, fmt.Errorf("set prefetch: %w", err)
	}
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	tag := consumerTag(r.spec.Name)
	deliveries, err := ch.Consume(r.spec.Queue, tag, false, false, false, false, nil)
	if err != nil {
		var ae *amqp.Error
		if errors.As(err, &ae) && ae.Code == amqp.NotFound {
			return true, fmt.Errorf("responder %q: requests queue %q does not exist: declare the topology (Config.Topology)", r.spec.Name, r.spec.Queue)
		}
		return false, fmt.Errorf("consume %q: %w", r.spec.Queue, err)
	}
	// Handlers outlive Run's ctx, as a consumer's do: a graceful stop
	// lets the work in hand finish and be answered.
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	var stopping atomic.Bool
	var wg sync.WaitGroup
	for range r.opts.concurrency {
		wg.Go(func() {
			for d := range deliveries {
				if stopping.Load() {
					_ = d.Nack(false, true)
					continue
				}
				r.answer(hctx, d)
			}
		})
	}
	idle := make(chan struct{})
	go func() { wg.Wait(); close(idle) }()
	select {
	case <-idle:
		return false, errors.New("the broker cancelled the responder (was the queue deleted?)")
	case e := <-closed:
		cancel() // their requests are redelivered; their replies cannot be acked
		<-idle
		if e == nil {
			return false, errors.New("channel closed")
		}
		return false, fmt.Errorf("channel closed: %w", e)
	case <-ctx.Done():
		stopping.Store(true)
		_ = ch.Cancel(tag, false)
		select {
		case <-idle:
			return true, nil
		case <-time.After(r.opts.shutdownTimeout):
			cancel()
			return true, fmt.Errorf("responder %q: handlers still running after the %s shutdown timeout were cancelled; their requests return to the queue", r.spec.Name, r.opts.shutdownTimeout)
		}
	}
}

// answer works on one request and replies, then acks it. Every path ends
// in exactly one ack, or none when the channel is gone (the broker then
// redelivers the request).
func (r *Responder) answer(ctx context.Context, d amqp.Delivery) {
	env, reply, err := r.work(ctx, d)
	switch {
	case errors.Is(err, errExpired):
		r.counts.expired.Add(1)
		r.log.Debug("request expired before it was taken; not worked on", "message_id", d.MessageId, "request", d.RoutingKey)
		_ = d.Ack(false)
		return
	case d.ReplyTo == "":
		r.log.Warn("request names no reply_to; nobody can be answered", "message_id", d.MessageId, "request", d.RoutingKey)
		_ = d.Ack(false)
		return
	}
	body := replyBody{ID: env.ID, OccurredAt: time.Now().UTC(), Payload: reply}
	if env.ID == "" {
		body.ID = d.MessageId
	}
	var dup *duplicateError
	switch {
	case errors.As(err, &dup):
		r.counts.duplicates.Add(1)
		body.Error = &replyFailure{Message: err.Error()}
	case err != nil:
		r.counts.failed.Add(1)
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
	_ = d.Ack(false)
}

var errExpired = errors.New("request expired")

type duplicateError struct{ id string }

func (e *duplicateError) Error() string {
	return fmt.Sprintf("request %s was answered already (the idempotency guard has its id); its first reply went to the caller", e.id)
}

// work checks and decodes a request and calls its handler through the
// chain (middleware, guard, panic recovery), under the caller's deadline.
func (r *Responder) work(ctx context.Context, d amqp.Delivery) (Envelope, json.RawMessage, error) {
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
	err = safeCall(context.WithValue(ctx, handlingKey{}, h), dv, r.chain)
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
