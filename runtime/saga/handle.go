package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/warrenbus/warren/runtime"
	"github.com/warrenbus/warren/runtime/idempotency"
	"github.com/warrenbus/warren/runtime/sqldb"
	"github.com/warrenbus/warren/runtime/topology"
)

// On binds fact f to a handler method: correlation is the JSON pointer to
// the instance id in its payload, whenMissing ([Start], [Ignore] or
// [Poison]) what it does when no instance exists, whenExists ([Handle],
// [Ignore] or [Poison]) what it does when one does.
func On[S, T any](f runtime.Fact, correlation string, whenMissing, whenExists Rule,
	fn func(ctx context.Context, in Instance[S], fact T) (Step[S], error)) Binding[S] {
	return Binding[S]{fact: f, correlation: correlation, whenMissing: whenMissing, whenExists: whenExists,
		call: func(ctx context.Context, in Instance[S], payload []byte) (Step[S], error) {
			var v T
			if err := json.Unmarshal(payload, &v); err != nil {
				return Step[S]{}, runtime.Permanent(fmt.Errorf("decode %s payload: %w", f.RoutingKey, err))
			}
			return fn(ctx, in, v)
		}}
}

// OnTimeout binds the saga's timeout named name to a handler method.
func OnTimeout[S any](name string, fn func(ctx context.Context, in Instance[S]) (Step[S], error)) Binding[S] {
	return Binding[S]{timeout: name, call: func(ctx context.Context, in Instance[S], _ []byte) (Step[S], error) {
		return fn(ctx, in)
	}}
}

// TimeoutFact returns the fact a saga's timeouts are published as: its
// own routing key, which only the saga's queue binds.
func TimeoutFact(saga string) runtime.Fact {
	return runtime.Fact{RoutingKey: "saga." + saga + ".timeout", Version: 1}
}

// drop acks a timeout that is late: counted as such, not as ignored.
const drop Rule = "drop"

// timeoutPayload is the payload of a timeout fact.
type timeoutPayload struct {
	Instance string `json:"instance"`
	Timeout  string `json:"timeout"`
}

// New returns the consumer of saga def on queue q: a consumer of the
// runtime's one engine whose routes run each fact through the store, in
// the guard's transaction (New adds runtime.WithGuard with the store's
// guard). opts adjust the consumer as for runtime.NewConsumer.
func New[S any](conn *runtime.Conn, store *Store, def Definition, q topology.Consumer, bindings []Binding[S], opts ...runtime.ConsumerOption) (*runtime.Consumer, error) {
	if store == nil {
		return nil, fmt.Errorf("saga %q: nil Store", def.Name)
	}
	store.register(def)
	r := &runner[S]{store: store, def: def, timeouts: map[string]Binding[S]{}}
	var routes []runtime.Route
	for _, b := range bindings {
		if b.timeout != "" {
			r.timeouts[b.timeout] = b
			continue
		}
		routes = append(routes, runtime.Handle(b.fact, func(ctx context.Context, d runtime.Delivery, payload json.RawMessage) error {
			return r.fact(ctx, d, b, payload)
		}))
	}
	if len(r.timeouts) > 0 {
		routes = append(routes, runtime.Handle(TimeoutFact(def.Name), func(ctx context.Context, d runtime.Delivery, t timeoutPayload) error {
			return r.timeout(ctx, d, t)
		}))
	}
	// The guard commits inside the middleware, so what a handling started,
	// completed or timed out is counted once its transaction committed.
	opts = append([]runtime.ConsumerOption{runtime.WithGuard(store.guard), runtime.WithMiddleware(store.count)}, opts...)
	return runtime.NewConsumer(conn, q, routes, opts...)
}

type runner[S any] struct {
	store    *Store
	def      Definition
	timeouts map[string]Binding[S]
}

// row is an instance as stored.
type row struct {
	found     bool
	version   int64
	state     []byte
	timeouts  map[string]string // pending timeout -> its outbox message id
	completed bool
}

// fact handles one fact of the saga.
func (r *runner[S]) fact(ctx context.Context, d runtime.Delivery, b Binding[S], payload []byte) error {
	id, err := correlationID(payload, b.correlation)
	if err != nil {
		return runtime.Permanent(fmt.Errorf("saga %s: fact %s: correlation %s: %w", r.def.Name, b.fact.RoutingKey, b.correlation, err))
	}
	return r.apply(ctx, d, id, func(cur row) (Rule, error) {
		switch {
		case cur.found && cur.completed:
			return Ignore, nil
		case cur.found:
			return b.whenExists, nil
		}
		return b.whenMissing, nil
	}, b.fact.RoutingKey, func(ctx context.Context, in Instance[S]) (Step[S], error) { return b.call(ctx, in, payload) })
}

// timeout handles one timeout fact: a timeout whose instance completed or
// was removed, or that was moved or cancelled since, is dropped.
func (r *runner[S]) timeout(ctx context.Context, d runtime.Delivery, t timeoutPayload) error {
	b, ok := r.timeouts[t.Timeout]
	if !ok {
		return runtime.Permanent(fmt.Errorf("saga %s: timeout %q: the saga declares no such timeout", r.def.Name, t.Timeout))
	}
	return r.apply(ctx, d, t.Instance, func(cur row) (Rule, error) {
		if !cur.found || cur.completed || cur.timeouts[t.Timeout] != d.MessageID {
			tallyOf(ctx).late++
			return drop, nil
		}
		return Handle, nil
	}, "timeout "+t.Timeout, func(ctx context.Context, in Instance[S]) (Step[S], error) {
		step, err := b.call(ctx, in, nil)
		if err == nil {
			tallyOf(ctx).timedOut = 1
		}
		return step, err
	}, t.Timeout)
}

// apply reads the instance in the guard's transaction, decides by rule,
// calls the handler and writes its step. A write that finds another
// version reads again and calls the handler again. fired names a timeout
// being handled, which is pending no more.
func (r *runner[S]) apply(ctx context.Context, d runtime.Delivery, id string, rule func(row) (Rule, error), what string,
	call func(context.Context, Instance[S]) (Step[S], error), fired ...string) error {
	tx, ok := idempotency.ClaimTx(ctx)
	if !ok {
		return fmt.Errorf("saga %s: no claim transaction: the consumer must run with the store's SQL guard", r.def.Name)
	}
	s := r.store
	for {
		cur, err := s.read(ctx, tx, r.def.Name, id)
		if err != nil {
			return err
		}
		verdict, err := rule(cur)
		if err != nil {
			return err
		}
		switch verdict {
		case Ignore:
			tallyOf(ctx).ignored++
			return nil
		case drop:
			return nil
		case Poison:
			state := "no instance"
			if cur.found {
				state = "an instance"
			}
			return runtime.Permanent(fmt.Errorf("saga %s: %s for instance %q found %s, which its rule sends to poison", r.def.Name, what, id, state))
		}
		in := Instance[S]{ID: id, Version: cur.version, New: !cur.found}
		if cur.found {
			if r.def.ValidateState != nil {
				if err := r.def.ValidateState(cur.state); err != nil {
					return fmt.Errorf("saga %s: instance %q: stored state (version %d) does not match the state's schema: %w", r.def.Name, id, cur.version, err)
				}
			}
			if err := json.Unmarshal(cur.state, &in.State); err != nil {
				return fmt.Errorf("saga %s: instance %q: decode stored state (version %d): %w", r.def.Name, id, cur.version, err)
			}
			for name := range cur.timeouts {
				in.Timeouts = append(in.Timeouts, name)
			}
			slices.Sort(in.Timeouts)
		}
		step, err := call(ctx, in)
		if err != nil {
			return err
		}
		written, err := r.write(ctx, tx, id, cur, step, fired)
		if err != nil {
			return err
		}
		if written {
			t := tallyOf(ctx)
			if !cur.found {
				t.started++
			}
			if step.complete {
				t.completed++
			}
			return nil
		}
		s.stats.conflicts.Add(1)
		s.event(d, runtime.SagaConflict, 1)
	}
}

// read loads an instance in tx.
func (s *Store) read(ctx context.Context, tx sqldb.Tx, saga, id string) (row, error) {
	rows, err := tx.QueryContext(ctx, s.load, saga, id)
	if err != nil {
		return row{}, fmt.Errorf("saga %s: instance %q: read: %w", saga, id, err)
	}
	defer rows.Close()
	var cur row
	if rows.Next() {
		var state, timeouts string
		var completed *int64
		if err := rows.Scan(&cur.version, &state, &timeouts, &completed); err != nil {
			return row{}, fmt.Errorf("saga %s: instance %q: read: %w", saga, id, err)
		}
		cur.found, cur.state, cur.completed = true, []byte(state), completed != nil
		if err := json.Unmarshal([]byte(timeouts), &cur.timeouts); err != nil {
			return row{}, fmt.Errorf("saga %s: instance %q: read pending timeouts: %w", saga, id, err)
		}
	}
	if err := rows.Err(); err != nil {
		return row{}, fmt.Errorf("saga %s: instance %q: read: %w", saga, id, err)
	}
	return cur, nil
}

// write stores step as the instance's next version, with the outbox rows
// of its facts and timeouts, and reports false when the instance is no
// longer at the version cur was read at: nothing is written then, and the
// outbox rows wait until the write succeeds, so a retry leaves none behind.
func (r *runner[S]) write(ctx context.Context, tx sqldb.Tx, id string, cur row, step Step[S], fired []string) (bool, error) {
	s := r.store
	state, err := json.Marshal(step.state)
	if err != nil {
		return false, fmt.Errorf("saga %s: instance %q: encode state: %w", r.def.Name, id, err)
	}
	if r.def.ValidateState != nil {
		if err := r.def.ValidateState(state); err != nil {
			return false, fmt.Errorf("saga %s: instance %q: the handler's new state does not match the state's schema: %w", r.def.Name, id, err)
		}
	}
	calls := step.lastCalls()
	if err := r.checkTimeouts(step, calls); err != nil {
		return false, runtime.Permanent(fmt.Errorf("saga %s: instance %q: %w", r.def.Name, id, err))
	}
	pending := map[string]string{}
	for name, msg := range cur.timeouts {
		if !slices.Contains(fired, name) {
			pending[name] = msg
		}
	}
	// cancel are the outbox rows of the timeouts the step cancels or
	// moves; schedule the timeouts it writes, one per name.
	var cancel []string
	var schedule []timeoutCall
	if step.complete {
		for _, msg := range pending {
			cancel = append(cancel, msg)
		}
		clear(pending)
	}
	for _, c := range calls {
		if msg, ok := pending[c.timeout]; ok {
			cancel = append(cancel, msg)
			delete(pending, c.timeout)
		}
		if !c.cancel {
			schedule = append(schedule, c)
			pending[c.timeout] = "" // its message id once written, below
		}
	}
	now := s.now().UnixMilli()
	var completed any
	if step.complete {
		completed = now
	}
	// The conditional write comes first: when it loses, nothing else
	// was written and the handler is called again on the new state.
	var res interface{ RowsAffected() (int64, error) }
	timeoutsJSON := func() string { b, _ := json.Marshal(pending); return string(b) }
	if cur.found {
		res, err = tx.ExecContext(ctx, s.update, string(state), timeoutsJSON(), completed, now, r.def.Name, id, cur.version)
	} else {
		res, err = tx.ExecContext(ctx, s.insert, r.def.Name, id, string(state), timeoutsJSON(), completed, now, now)
	}
	if err != nil {
		return false, fmt.Errorf("saga %s: instance %q: write state: %w", r.def.Name, id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		if err != nil {
			return false, fmt.Errorf("saga %s: instance %q: write state: %w", r.def.Name, id, err)
		}
		return false, nil
	}
	if len(cancel) > 0 {
		if _, err := s.outbox.Cancel(ctx, tx, cancel...); err != nil {
			return false, fmt.Errorf("saga %s: instance %q: cancel timeouts: %w", r.def.Name, id, err)
		}
	}
	for _, p := range step.publish {
		if _, err := s.outbox.Write(ctx, tx, p.fact, p.payload); err != nil {
			return false, fmt.Errorf("saga %s: instance %q: publish: %w", r.def.Name, id, err)
		}
	}
	if len(schedule) > 0 {
		tf := TimeoutFact(r.def.Name)
		for _, sc := range schedule {
			msg, err := s.outbox.In(sc.in).Write(ctx, tx, tf, timeoutPayload{Instance: id, Timeout: sc.timeout})
			if err != nil {
				return false, fmt.Errorf("saga %s: instance %q: schedule %s: %w", r.def.Name, id, sc.timeout, err)
			}
			pending[sc.timeout] = msg
		}
		if _, err := tx.ExecContext(ctx, s.setTimeouts, timeoutsJSON(), r.def.Name, id); err != nil {
			return false, fmt.Errorf("saga %s: instance %q: write timeouts: %w", r.def.Name, id, err)
		}
	}
	return true, nil
}

// checkTimeouts refuses a step that names a timeout the saga does not
// declare, in any Schedule or Cancel, that schedules a timeout with a
// negative delay, or that completes the instance with a timeout scheduled
// (calls, the last call per name, says which stand). Each fails the same
// on every attempt: the caller makes it permanent.
func (r *runner[S]) checkTimeouts(step Step[S], calls []timeoutCall) error {
	for _, c := range step.timeouts {
		if _, ok := r.timeouts[c.timeout]; !ok {
			op := "schedule"
			if c.cancel {
				op = "cancel"
			}
			return fmt.Errorf("%s %q: the saga declares no such timeout (%s)", op, c.timeout, r.declared())
		}
	}
	for _, c := range calls {
		if !c.cancel && c.in < 0 {
			return fmt.Errorf("schedule %q in %s: a negative delay; a timeout is due 0 or more after the step that schedules it (0 fires it at once)", c.timeout, c.in)
		}
	}
	if !step.complete {
		return nil
	}
	for _, c := range calls {
		if !c.cancel {
			return fmt.Errorf("schedule %q: the step also completes the instance, which cancels every timeout: a complete instance has none; schedule it on a step that does not complete, or drop it", c.timeout)
		}
	}
	return nil
}

// declared names the saga's timeouts, for an error.
func (r *runner[S]) declared() string {
	if len(r.timeouts) == 0 {
		return "it declares none"
	}
	names := make([]string, 0, len(r.timeouts))
	for name := range r.timeouts {
		names = append(names, strconv.Quote(name))
	}
	slices.Sort(names)
	return "it declares " + strings.Join(names, ", ")
}

// correlationID reads the instance id at pointer in a JSON payload: a
// string as it is, an integer in decimal.
func correlationID(payload []byte, pointer string) (string, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(payload)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	tokens := strings.Split(pointer, "/")[1:]
	for _, tok := range tokens {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		obj, ok := v.(map[string]any)
		if !ok {
			return "", errors.New("the payload has no object there")
		}
		if v, ok = obj[tok]; !ok {
			return "", fmt.Errorf("property %q is missing from the payload", tok)
		}
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		if _, err := strconv.ParseInt(x.String(), 10, 64); err != nil {
			return "", fmt.Errorf("expected a string or an integer, got %s", x)
		}
		return x.String(), nil
	}
	return "", fmt.Errorf("expected a string or an integer, got %T", v)
}
